"""Shared fixtures: a clean environment, the real model loaded once, fixture vaults copied to tmp_path."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

FIXTURES = Path(__file__).parent / "fixtures"

# Git as on a machine where nobody ran `git config`: no user's or system's settings (no identity, no hooks, no
# signing) reach a test or the product's own commits; a test that commits names its author itself. Set before any
# test runs, so every git the suite starts, in-process or in a child process, sees it.
_EMPTY_GITCONFIG = Path(tempfile.mkdtemp(prefix="vault-cortex-tests-")) / "gitconfig"
_EMPTY_GITCONFIG.write_text("", encoding="utf-8")
os.environ["GIT_CONFIG_GLOBAL"] = str(_EMPTY_GITCONFIG)
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"

# Property tests check what holds, not how fast: on a loaded CI machine one example can take seconds, and
# hypothesis's default 200 ms deadline turned that into a failure. Speed is measured by the benchmarks.
settings.register_profile("vault-cortex", deadline=None)
settings.load_profile("vault-cortex")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the vault alone in tests: strip every VAULT_CORTEX_* variable."""
    for key in list(os.environ):
        if key.startswith("VAULT_CORTEX_"):
            monkeypatch.delenv(key)


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The real ONNX model, loaded once per test session."""
    from vault_cortex.config import EmbeddingSettings
    from vault_cortex.index.embed import load_embedder

    return load_embedder(EmbeddingSettings())


@pytest.fixture
def fixture_vault(tmp_path: Path) -> Iterator[callable]:  # type: ignore[valid-type]
    """Copy tests/fixtures/vaults/<name> to tmp_path and return its path (fixtures are never edited in place)."""

    def copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(FIXTURES / "vaults" / name, dest, symlinks=True)
        return dest

    yield copy
