"""One check for text that cannot be saved as UTF-8 (a lone surrogate), used by every writer that refuses it."""

from __future__ import annotations

import pytest

from vault_cortex.errors import InvalidRequest
from vault_cortex.limits import check_unicode, lone_surrogate


def test_lone_surrogate_finds_the_first_one_within_the_span() -> None:
    text = "ok\nbad \udce9 and \ud800"
    assert lone_surrogate("plain text, é and 🙂") is None
    assert lone_surrogate(text) == text.index("\udce9")
    assert lone_surrogate(text, 0, 3) is None and lone_surrogate(text, 9) == text.index("\ud800")


def test_check_unicode_names_what_it_refused() -> None:
    assert check_unicode("Café 🙂", "the title") == "Café 🙂"
    with pytest.raises(InvalidRequest, match=r"^the title is not valid Unicode text \(it holds a lone surrogate\)$"):
        check_unicode("x\ud83d", "the title")
