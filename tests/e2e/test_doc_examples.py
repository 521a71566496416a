"""Every example in README.md and docs/*.md runs and shows what it prints (the rules: tests/e2e/doc_examples.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_examples import (
    DOC_NOW,
    PAGES,
    ROOT,
    blocks,
    check_console,
    check_snippet,
    console_steps,
    doc_now,
    environment,
    prepare,
    settle,
)

from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder

CONSOLE_PAGES = [p for p in PAGES if console_steps(p)]


@pytest.fixture(scope="module")
def doc_vault(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Path]:
    """The starter vault as the examples see it: synced on the clock pinned to DOC_NOW, its files ten minutes older."""
    root = tmp_path_factory.mktemp("docs") / "my-vault"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULT_CORTEX_NOW", DOC_NOW)
        init_vault(root)
        settle(root, doc_now())
        with Cortex.open(root, embedder=embedder) as cx:
            cx.sync()
        yield root


def _run_page(page: Path, vault: Path, home: Path, *, ahead: bool) -> None:
    prepare(home, vault, empty=console_steps(page)[0].command.startswith("vault-cortex init"))
    failures = check_console(page, home, ahead=ahead)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("page", CONSOLE_PAGES, ids=[p.name for p in CONSOLE_PAGES])
def test_the_console_examples_print_what_the_page_shows(page: Path, doc_vault: Path, tmp_path: Path) -> None:
    _run_page(page, doc_vault, tmp_path / "home", ahead=False)


@pytest.mark.parametrize("page", CONSOLE_PAGES, ids=[p.name for p in CONSOLE_PAGES])
def test_the_console_examples_print_the_same_a_year_later(page: Path, doc_vault: Path, tmp_path: Path) -> None:
    """The machine's clock a year ahead (libfaketime, for every process the examples start): an example whose
    output moves with the calendar — a date read around the project's clock, a fixed date compared with "now" —
    fails here before it fails on the day it starts to."""
    _run_page(page, doc_vault, tmp_path / "home", ahead=True)


def test_the_python_examples_run(doc_vault: Path, tmp_path: Path) -> None:
    examples = [b for p in PAGES for b in blocks(p) if b.lang == "python"]
    assert examples
    for n, block in enumerate(examples):
        home = tmp_path / f"python{n}"
        prepare(home, doc_vault, empty=False)
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
    shown_recent = ("2026-12-01", "  22:53  changed  b.md  (move)", "  22:53  changed  a.md  (append)", "…")
    assert mismatch(shown_recent, ["2026-12-02", "  03:37  changed  a.md  (append)", "  03:37  changed  b.md  (move)",
                                   "  03:27  changed  c.md"], unordered=True) is None
    assert mismatch(shown_recent, ["2026-12-02", "  03:37  changed  a.md  (append)"], unordered=True)
    assert mismatch(shown_recent[:3], ["2026-12-02", "  03:37  changed  a.md  (append)",
                                       "  03:37  changed  b.md  (move)", "  03:27  changed  c.md"], unordered=True)
