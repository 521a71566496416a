"""Only regular files are notes, at every entry point: a FIFO, a device or a folder named `x.md` is refused at
once (a GET of a FIFO blocked a worker forever, a device grew the server to gigabytes, a PUT onto a folder was a
500), through the real app."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from vault_cortex.cortex import Cortex
from vault_cortex.errors import NoteNotFound


def _within(seconds: float, fn: object) -> object:
    """Run fn in a thread; fail (instead of hanging the suite) when it does not return in time."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - handed to the test below
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert out, f"still blocked after {seconds} s"
    if isinstance(out[0], Exception):
        raise out[0]
    return out[0]


def test_a_fifo_named_like_a_note_is_refused_at_once(client: TestClient[Litestar], cx: Cortex, vault: Path) -> None:
    fifo = vault / "short_term" / "pipe.md"
    os.mkfifo(fifo)
    try:
        got = _within(5, lambda: client.get("/v1/notes", params={"path": "short_term/pipe.md"}))
        assert got.status_code == 404 and "FIFO" in got.json()["detail"]  # type: ignore[attr-defined]
        put = _within(5, lambda: client.put("/v1/notes", params={"path": "short_term/pipe.md"},
                                            json={"content": "x\n"}))
        assert put.status_code == 400 and "FIFO" in put.json()["detail"]  # type: ignore[attr-defined]
        with pytest.raises(NoteNotFound):
            _within(5, lambda: cx.vault.read_note("short_term/pipe.md"))
        assert stat.S_ISFIFO(fifo.lstat().st_mode), "left as it was"
    finally:
        fifo.unlink()


def test_a_folder_named_like_a_note_is_a_clear_error(client: TestClient[Litestar], vault: Path) -> None:
    (vault / "short_term" / "folder.md").mkdir()
    got = client.get("/v1/notes", params={"path": "short_term/folder.md"})
    assert got.status_code == 404 and "folder" in got.json()["detail"]
    put = client.put("/v1/notes", params={"path": "short_term/folder.md"}, json={"content": "x\n"})
    assert put.status_code == 400 and "folder" in put.json()["detail"]
    assert (vault / "short_term" / "folder.md").is_dir()


def test_a_device_named_like_a_note_is_never_read(client: TestClient[Litestar], vault: Path) -> None:
    device = vault / "short_term" / "zero.md"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero: endless bytes
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    try:
        got = _within(5, lambda: client.get("/v1/notes", params={"path": "short_term/zero.md"}))
        assert got.status_code == 404 and "device" in got.json()["detail"]  # type: ignore[attr-defined]
    finally:
        device.unlink()


def test_a_note_whose_name_holds_a_backslash_is_read_and_edited(client: TestClient[Litestar], cx: Cortex,
                                                                 vault: Path) -> None:
    """`a\\b.md` is a legal name on Linux and macOS; the API read it as the path a/b.md and answered 404."""
    note = vault / "short_term" / "Back\\slash.md"
    note.write_text("A name with a backslash.\n", encoding="utf-8")
    cx.sync()
    assert "short_term/Back\\slash.md" in cx.db.note_paths()
    got = client.get("/v1/notes", params={"path": "short_term/Back\\slash.md"})
    assert got.status_code == 200 and got.json()["content"] == "A name with a backslash.\n"
    edited = client.post("/v1/notes/edit", json={"note": "short_term/Back\\slash.md",
                                                 "edit": {"op": "append", "content": "More."}})
    assert edited.status_code == 200 and note.read_text(encoding="utf-8").endswith("More.\n")
    assert not (vault / "short_term" / "Back").exists()


def test_an_index_folder_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    from vault_cortex.errors import IndexUnavailable
    from vault_cortex.files.vault import init_vault

    root = tmp_path / "vault"
    init_vault(root)
    (root / ".cortex" / "index").write_text("not a folder", encoding="utf-8")
    with pytest.raises(IndexUnavailable, match="is a file, not a folder"):
        Cortex.open(root)
