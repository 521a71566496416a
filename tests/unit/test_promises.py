"""Every test the README's "What vault-cortex promises" section names exists (a promise is only as good as it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_every_promise_names_a_test_that_exists() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## What vault-cortex promises")
    end = readme.find("\n## ", start + 1)
    section = readme[start:end if end != -1 else None]
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", section)
    assert len(named) >= 5
    missing = [f"{path}::{name}" for path, name in named
               if not (ROOT / path).is_file() or not re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M)]
    assert not missing, f"README promises name tests that do not exist: {missing}"
