"""Shared fixtures: a clean environment, the real model loaded once, fixture vaults copied to tmp_path."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

FIXTURES = Path(__file__).parent / "fixtures"

# Property tests check what holds, not how fast: on a loaded CI machine one example can take seconds, and
# hypothesis's default 200 ms deadline turned that into a failure. Speed is measured by the benchmarks.
settings.register_profile("vault-cortex", deadline=None)
settings.load_profile("vault-cortex")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the vault alone in tests: strip every VAULT_CORTEX_* variable."""
    import os

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
