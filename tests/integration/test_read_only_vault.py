"""Issue 21 F10: a read-only vault (a backup snapshot, a read-only share) is searched with its index kept
elsewhere, and nothing is ever written to it. The vault is a real read-only bind mount (root and a kernel that
lets the test mount; CI runs as root), so the file system itself refuses any write a code path attempts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from serving import free_port, serve

from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.index.location import cached_index

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextmanager
def read_only_mount(src: Path, at: Path) -> Iterator[Path]:
    """`src` seen read-only at `at` (mount --bind, then remount ro); skips the test only when mounting is
    impossible here (not root, or no permission to mount)."""
    at.mkdir()
    bound = _mount("--bind", str(src), str(at))
    if bound.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {bound.stderr.strip() or 'mount failed'}")
    try:
        ro = _mount("-o", "remount,ro,bind", str(at))
        if ro.returncode != 0:
            pytest.skip(f"cannot remount the bind mount read-only: {ro.stderr.strip()}")
        with pytest.raises(OSError):
            (at / "probe").write_text("x")
        yield at
    finally:
        if subprocess.run(["umount", str(at)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(at)], capture_output=True, check=False)


def _files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root (the vault's own .cortex/ included): its bytes and mtime."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


@pytest.fixture
def backup(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the vault's files, the same vault mounted read-only)."""
    src = tmp_path / "vault"
    init_vault(src)
    (src / "long_term" / "Fan bearing.md").write_text(
        "# Fan bearing\n\nThe greenhouse fan bearing squeals above 40 degrees; grease it in spring.\n",
        encoding="utf-8")
    with read_only_mount(src, tmp_path / "snapshot") as ro:
        yield src, ro


def test_a_read_only_vault_is_searched_from_the_cli_with_its_index_in_the_user_cache(
        tmp_path: Path, backup: tuple[Path, Path]) -> None:
    src, ro = backup
    before = _files(src)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")},
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    found = _cli("recall", "which bearing makes a noise when it is hot", "--vault", str(ro), "-k", "3", env=env)
    assert found.returncode == 0, found.stderr
    assert "Fan bearing" in found.stdout.splitlines()[0]
    index = cached_index(ro.resolve(), env)
    assert index.is_relative_to(tmp_path / "cache") and (index / "index.db").is_file()
    assert "read-only" in found.stderr and str(index) in found.stderr  # one line says where the index is

    read = _cli("read", "Fan bearing", "--vault", str(ro), env=env)
    assert read.returncode == 0 and "grease it in spring" in read.stdout, read.stderr
    doctor = _cli("doctor", "--vault", str(ro), "--json", env=env)
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["drift"] == [], doctor.stderr

    refused = _cli("remember", "--vault", str(ro), "--title", "New", "A new memory.", env=env)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "read-only" in refused.stderr.splitlines()[-1]

    elsewhere = tmp_path / "my-index"
    chosen = _cli("recall", "grease in spring", "--vault", str(ro), "--index-dir", str(elsewhere), env=env)
    assert chosen.returncode == 0 and "Fan bearing" in chosen.stdout, chosen.stderr
    assert (elsewhere / "index.db").is_file() and str(elsewhere) in chosen.stderr

    assert _files(src) == before  # not a byte written to the vault, not even an activity log line


def test_serve_answers_reads_on_a_read_only_vault_and_refuses_writes_clearly(
        tmp_path: Path, backup: tuple[Path, Path]) -> None:
    src, ro = backup
    before = _files(src)
    cache = tmp_path / "cache"
    index = cached_index(ro.resolve(), {"XDG_CACHE_HOME": str(cache)})
    with serve(ro, tmp_path / "server.log", env={"XDG_CACHE_HOME": str(cache)},
               token_file=index / "token") as server:
        hits = server.get("/v1/recall", q="which bearing makes a noise when it is hot", k=3).json()["hits"]
        assert hits[0]["path"] == "long_term/Fan bearing.md"
        note = server.get("/v1/notes", name="Fan bearing")
        assert note.status_code == 200 and "grease it in spring" in note.json()["content"]
        assert server.get("/v1/status").status_code == 200
        plan = server.get("/v1/sleep/plan", mode="light")
        assert plan.status_code == 200, plan.text
        put = httpx.put(f"{server.url}/v1/notes", params={"path": "long_term/New.md"},
                        json={"content": "A new note.\n"}, headers=server.auth, timeout=30)
        assert put.status_code == 403
        assert put.json()["error"] == "VaultReadOnly" and "read-only" in put.json()["detail"]
        remembered = httpx.post(f"{server.url}/v1/notes", json={"text": "A new memory."}, headers=server.auth,
                                timeout=30)
        assert remembered.status_code == 403 and remembered.json()["error"] == "VaultReadOnly"
        assert server.status()["nightly"]["enabled"] is False
        server.stop(15)
    log = (tmp_path / "server.log").read_text()
    assert f"token in {index / 'token'}" in log and "read-only" in log and "Traceback" not in log
    assert _files(src) == before


def test_the_vault_under_a_read_only_mount_stays_writable_through_its_own_path(
        tmp_path: Path, backup: tuple[Path, Path]) -> None:
    """The mount is read-only, not the files: the same vault opened at its own path is writable and keeps its
    index in .cortex/index (the check looks at the path it is given)."""
    from vault_cortex import Cortex

    src, _ = backup
    with Cortex.open(src) as cx:
        assert not cx.read_only and cx.index.index_dir == src / ".cortex/index"


def test_hooks_on_a_read_only_vault_keep_their_session_state_beside_the_index(
        tmp_path: Path, backup: tuple[Path, Path], embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent hooks remember per session what they already showed (`.cortex/hooks/`); on a read-only vault
    that state lives beside the index, and the hooks still answer."""
    from server.hooks import run_hook
    from vault_cortex import Cortex

    src, ro = backup
    before = _files(src)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with Cortex.open(ro, embedder=embedder) as cx:
        cx.sync()
        out = run_hook(lambda: cx, "session-start", {"session_id": "s1", "source": "startup", "cwd": str(tmp_path)})
        assert out["hookSpecificOutput"]["additionalContext"]
        state = cx.index.index_dir / "hooks" / "s1.json"
        assert state.is_file() and json.loads(state.read_text())["injected"]
    assert _files(src) == before


@pytest.mark.parametrize("event", ["session-end", "pre-compact"])
def test_a_capture_hook_on_a_read_only_vault_refuses_in_one_line_and_exits_0(
        tmp_path: Path, backup: tuple[Path, Path], event: str) -> None:
    """Capturing a session writes raw/ notes: on a read-only vault the hook says it cannot, and still exits 0 with
    nothing on stdout and no traceback (a hook must never break the agent)."""
    src, ro = backup
    before = _files(src)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")},
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS": str(TRANSCRIPTS)}
    transcript = TRANSCRIPTS / "2026-10-05 collector refactor.jsonl"
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path),
               "hook_event_name": "SessionEnd" if event == "session-end" else "PreCompact"}
    done = subprocess.run([sys.executable, "-m", "server.cli", "hook", event, "--vault", str(ro)],
                          input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout == "", done
    assert "Traceback" not in done.stderr
    refusal = [line for line in done.stderr.splitlines() if line.startswith(f"vault-cortex hook {event}:")]
    assert len(refusal) == 1 and "read-only" in refusal[0] and str(ro) in refusal[0], done.stderr
    assert _files(src) == before


@pytest.mark.parametrize("command", ["init", "serve"])
def test_init_and_serve_on_an_empty_read_only_folder_say_it_cannot_be_written(tmp_path: Path, command: str) -> None:
    """Before, both ended in a traceback of shutil.Error listing every template file the mount refused."""
    (tmp_path / "empty").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    with read_only_mount(tmp_path / "empty", tmp_path / "ro") as ro:
        args = [str(ro)] if command == "init" else ["--vault", str(ro), "--port", str(free_port())]
        done = _cli(command, *args, env=env)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.splitlines() == [f"error: {ro} cannot be written (a read-only folder or mount): a vault "
                                            "needs a folder vault-cortex can write to"], done.stderr
    assert list((tmp_path / "empty").iterdir()) == []


def test_adopting_a_read_only_folder_of_notes_says_it_cannot_be_written(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "Fan bearing.md").write_text("# Fan bearing\n\nGrease it in spring.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    with read_only_mount(notes, tmp_path / "ro") as ro:
        done = _cli("init", str(ro), env=env)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.splitlines() == [f"error: {ro} cannot be written (a read-only folder or mount): a vault "
                                            "needs a folder vault-cortex can write to"], done.stderr
    assert sorted(p.name for p in notes.iterdir()) == ["Fan bearing.md"]


def test_the_index_folder_can_be_named_in_the_environment(tmp_path: Path) -> None:
    """$VAULT_CORTEX_INDEX_DIR is where the index lives (it is not a setting of the `[index]` section)."""
    from vault_cortex import Cortex

    root = tmp_path / "vault"
    init_vault(root)
    with Cortex.open(root, env={"VAULT_CORTEX_INDEX_DIR": str(tmp_path / "elsewhere")}) as cx:
        assert cx.index.index_dir == tmp_path / "elsewhere" and not cx.read_only
    assert (tmp_path / "elsewhere" / "index.db").is_file() and not (root / ".cortex" / "index").exists()


def test_a_hook_on_a_read_only_vault_is_answered_by_its_serve(tmp_path: Path, backup: tuple[Path, Path]) -> None:
    """A read-only vault's serve records where it listens, and keeps its token, beside its index in the user cache;
    the hook command finds both there and posts to it, instead of opening the vault itself (about a second a
    hook). Before, the hooks looked only in the vault's own .cortex/index/ and .cortex/token."""
    src, ro = backup
    before = _files(src)
    cache = tmp_path / "cache"
    index = cached_index(ro.resolve(), {"XDG_CACHE_HOME": str(cache)})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}, "XDG_CACHE_HOME": str(cache)}
    payload = {"session_id": "s1", "prompt": "Which bearing squeals when the greenhouse gets hot?",
               "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}
    log = tmp_path / "server.log"
    with serve(ro, log, "--verbose", env={"XDG_CACHE_HOME": str(cache)}, token_file=index / "token"):
        done = subprocess.run([sys.executable, "-m", "server.cli", "hook", "prompt", "--vault", str(ro)],
                              input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert "Fan bearing" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert '"POST /v1/hooks/prompt HTTP/1.1" 200' in log.read_text()  # serve answered it, not the hook itself
    assert _files(src) == before


def test_the_hooks_look_for_a_read_only_vaults_servers_where_its_index_is(tmp_path: Path) -> None:
    """The hooks name the user-cache index folder without loading the library: the same folder as the library's,
    where they look for serve's record, its token and the stdio MCP servers' sockets."""
    from server.bearer import read_token
    from server.hook_socket import live_sockets, socket_path
    from server.serve_lock import LOCK_NAME, lock_paths

    for env in ({"XDG_CACHE_HOME": str(tmp_path / "cache")}, {"XDG_CACHE_HOME": ""}, {}):
        for root in (tmp_path / "vault", tmp_path / "a vault" / "ünïcode", Path("/")):
            assert cached_index(root.resolve(), env) / LOCK_NAME in lock_paths(root, None, env)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    index = cached_index((tmp_path / "vault").resolve(), env)
    index.mkdir(parents=True)
    (index / "token").write_text("t0k3n\n")
    socket_path(index).touch()  # this process is alive: its socket counts
    assert read_token(tmp_path / "vault", env) == "t0k3n"
    assert live_sockets(tmp_path / "vault", env) == [socket_path(index)]
