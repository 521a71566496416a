"""Every example in README.md and docs/*.md runs and shows what it prints (the rules: tests/e2e/doc_examples.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doc_examples import PAGES, ROOT, blocks, check_console, check_snippet, console_steps, environment, prepare

CONSOLE_PAGES = [p for p in PAGES if console_steps(p)]


@pytest.mark.parametrize("page", CONSOLE_PAGES, ids=[p.name for p in CONSOLE_PAGES])
def test_the_console_examples_print_what_the_page_shows(page: Path, synced_template: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    prepare(home, synced_template, empty=console_steps(page)[0].command.startswith("vault-cortex init"))
    failures = check_console(page, home)
    assert not failures, "\n\n".join(failures)


def test_the_python_examples_run(synced_template: Path, tmp_path: Path) -> None:
    examples = [b for p in PAGES for b in blocks(p) if b.lang == "python"]
    assert examples
    for n, block in enumerate(examples):
        home = tmp_path / f"python{n}"
        prepare(home, synced_template, empty=False)
        done = subprocess.run([sys.executable, "-c", "\n".join(block.lines)], cwd=home, env=environment(home),
                              capture_output=True, text=True, timeout=300)
        where = f"{block.page.relative_to(ROOT)}:{block.first}"
        assert done.returncode == 0, f"{where}: the example failed:\n{done.stderr[-3000:]}"
        shutil.rmtree(home)


def test_the_config_and_json_snippets_parse() -> None:
    snippets = [b for p in PAGES for b in blocks(p) if b.lang in ("toml", "json")]
    assert snippets
    for block in snippets:
        try:
            check_snippet(block)
        except Exception as exc:  # any parse or settings error: name the page and line
            pytest.fail(f"{block.page.relative_to(ROOT)}:{block.first}: {type(exc).__name__}: {exc}")


def test_the_doc_checker_compares_what_matters() -> None:
    from doc_examples import mismatch

    shown = ("synced 23 notes in 1.11s", " 1. 0.756  a.md", "…", "(3 results, mode balanced, 264 ms)")
    assert mismatch(shown, ["synced 23 notes in 3.4s", " 1. 0.760  a.md", "x", "y",
                            "(3 results, mode balanced, 19 ms)"]) is None
    assert mismatch(shown, ["synced 24 notes in 1.11s", " 1. 0.756  a.md", "(3 results, mode balanced, 1 ms)"])
    assert mismatch(shown, ["synced 23 notes in 1s", " 1. 0.856  a.md", "(3 results, mode balanced, 1 ms)"])
    assert mismatch(shown, ["synced 23 notes in 1s", " 1. 0.756  b.md", "(3 results, mode balanced, 1 ms)"])
    assert mismatch(("a",), ["a", "b"])
