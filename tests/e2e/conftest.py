"""The app through Litestar's test client, on a copy of the synced starter vault (one per test module)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_examples import settle
from harness import TEST_HOSTS, TOKEN, LiveServer, checked_client
from litestar import Litestar
from litestar.testing import TestClient

from server.app import create_app
from server.watch import Watcher
from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder


@pytest.fixture(scope="session")
def synced_template(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """The starter vault, synced once per session; modules copy it (index included) so nothing re-embeds."""
    root = tmp_path_factory.mktemp("template") / "vault"
    init_vault(root)
    settle(root)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
    return root


@pytest.fixture(scope="module")
def vault(synced_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("e2e") / "vault"
    shutil.copytree(synced_template, dest, symlinks=True)  # copy2 keeps mtimes: the copy's index is current
    return dest


@pytest.fixture(scope="module")
def cx(vault: Path, embedder: Embedder) -> Iterator[Cortex]:
    with Cortex.open(vault, embedder=embedder) as cortex:
        cortex.sync()
        yield cortex


@pytest.fixture(scope="module")
def app(cx: Cortex) -> Litestar:
    return create_app(cx, token=TOKEN, allowed_hosts=TEST_HOSTS)


@pytest.fixture(scope="module")
def client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    with checked_client(app) as c:
        yield c


@pytest.fixture(scope="module")
def live(cx: Cortex) -> Iterator[LiveServer]:
    """The app with its watcher, served by uvicorn on a free loopback port."""
    app = create_app(cx, token=TOKEN, watcher=Watcher(cx, debounce_ms=100))
    with LiveServer(app) as server:
        yield server


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path, for a vault whose stdio MCP server opens its hook socket in the index folder: a
    Unix socket's path holds at most 108 bytes, and pytest's own under xdist
    (`/tmp/pytest-of-root/pytest-92/popen-gw1/test_a_hook_is_answered_by_the0/vault/.cortex/index/hooks-<pid>.sock`)
    is longer, so the server rightly opens no socket there."""
    with tempfile.TemporaryDirectory(prefix="vc-", dir="/tmp") as folder:
        yield Path(folder)
