"""Every test docs/promises.md names exists (a promise is only as good as the test that checks it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _named(text: str) -> list[tuple[str, str]]:
    """(file, test) for every test a page names: `tests/x.py::test_y`, and `::test_z` after it means the same file."""
    named, last = [], ""
    for path, name in re.findall(r"`(tests/[\w/]+\.py)?(?:::(test_\w+))?`", text):
        last = path or last
        if name or path:
            named.append((path or last, name))
    return named


def test_every_promise_names_a_test_that_exists() -> None:
    named = _named((ROOT / "docs" / "promises.md").read_text(encoding="utf-8"))
    assert len([n for n in named if n[1]]) >= 50
    missing = [f"{path}::{name}" for path, name in named
               if not (ROOT / path).is_file()
               or name and not re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M)]
    assert not missing, f"docs/promises.md names tests that do not exist: {missing}"
