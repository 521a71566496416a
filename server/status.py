"""`vault-cortex status`: one look at a vault — its index, whether a server serves it (and its watcher and indexing,
asked of that server), where vault-cortex is installed for it (Claude Code's settings, the Obsidian plugin), and
whether sessions are captured (what is kept, and where).

It changes nothing and loads no model: with a server running it asks GET /v1/status; without one it reads the
index's counts itself. The server is found through `serve.lock` in the index folder (`.cortex/index/` unless
the index is kept elsewhere), which `serve` holds (an OS lock, released however the process ends) and in which
it writes its pid and URL.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from server import install, install_codex, install_gemini, obsidian
from server.bearer import read_token
from server.hook_socket import server_pids
from server.serve_lock import held, lock_path, read_record
from vault_cortex import __version__
from vault_cortex.index.location import index_location

TIMEOUT = 2.0


class Server(msgspec.Struct, frozen=True, kw_only=True):
    """The `serve` process holding the vault's lock, if any, and what it answered."""

    running: bool
    pid: int | None = None
    url: str | None = None
    answers: bool = False
    status: dict[str, Any] | None = None  # its GET /v1/status


class Installed(msgspec.Struct, frozen=True, kw_only=True):
    """Where vault-cortex is installed for this vault."""

    claude_code: list[str]  # one line per scope whose settings run vault-cortex (on this vault or another)
    codex: list[str] = []  # the same for Codex CLI's hooks.json
    gemini: list[str] = []  # the same for Gemini CLI's settings.json
    obsidian: str | None  # the plugin's version, URL and token check, or None when it is not in the vault


class Capture(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the SessionEnd and PreCompact hooks capture sessions, what they keep and where (`[capture]`)."""

    enabled: bool  # on, and keeping something
    kept: list[str]  # of "prompts", "answers", "tools"
    folder: str
    error: str | None = None  # the settings do not load: nothing is captured until they do


class VaultStatus(msgspec.Struct, frozen=True, kw_only=True):
    vault: str
    version: str
    index: dict[str, Any] | None  # counts, model, last sync, indexing progress (from the server when it runs)
    server: Server
    mcp: list[int]  # pids of the stdio MCP servers (one per Claude Code session) answering the hooks
    installed: Installed
    capture: Capture


def capture(vault: Path, env: Mapping[str, str]) -> Capture:
    """The vault's `[capture]` settings as the hooks read them."""
    from vault_cortex.config import load_settings
    from vault_cortex.errors import ConfigError

    try:
        keep = load_settings(vault, env).capture
        folder = keep.path
    except ConfigError as exc:
        return Capture(enabled=False, kept=[], folder="", error=str(exc))
    kept = [name for name in ("prompts", "answers", "tools") if getattr(keep, name)]
    return Capture(enabled=keep.on, kept=kept, folder=folder)


def serving(lock: Path) -> Server:
    """Whether a `serve` holds the lock file, with the pid and URL it wrote there."""
    if not held(lock):
        return Server(running=False)
    record = read_record(lock)
    return Server(running=True, pid=record[0] if record else None, url=record[1] if record else None)


def ask(server: Server, token: str | None) -> Server:
    """The server with what its GET /v1/status answered (nothing when it does not answer)."""
    if not server.url:
        return server
    req = urllib.request.Request(f"{server.url}/v1/status",
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            data = json.loads(resp.read())
    except (OSError, urllib.error.URLError, ValueError):
        return server
    return msgspec.structs.replace(server, answers=True, status=data if isinstance(data, dict) else None)


def claude_code(vault: Path, *, home: Path | None = None, project: Path | None = None) -> list[str]:
    """Each Claude Code scope (user; project for the current folder) whose settings run vault-cortex."""
    out: list[str] = []
    for scope in ("user", "project"):
        settings_file, mcp_file = install.files(scope, home=home, project=project)
        try:
            settings, _ = install.load(settings_file)
            servers, _ = install.load(mcp_file)
        except Exception:  # noqa: BLE001 - a broken settings file is reported, not a crash of `status`
            out.append(f"{scope}: cannot read {settings_file} or {mcp_file}")
            continue
        hooks = sorted({event for event, groups in (settings.get("hooks") or {}).items() if isinstance(groups, list)
                        for g in groups if isinstance(g, dict)
                        for h in (g.get("hooks") or []) if install.is_ours(h)})
        entry = (servers.get("mcpServers") or {}).get(install.SERVER_NAME)
        if not hooks and not entry:
            continue
        args = entry.get("args", []) if isinstance(entry, dict) else []
        target = args[args.index("--vault") + 1] if "--vault" in args[:-1] else None
        where = "this vault" if target and Path(target).resolve() == vault.resolve() else (target or "no vault")
        mcp = f"MCP server for {where}" if entry else "no MCP server"
        out.append(f"{scope}: {mcp}, hooks on {len(hooks)} events ({settings_file}, {mcp_file})")
    return out


def obsidian_plugin(vault: Path, env: Mapping[str, str], serving_at: str | None = None) -> str | None:
    """The plugin in the vault: its version, the URL and token it uses (checked against the vault's and the
    running server's), and whether Obsidian has it enabled; None when it is not there."""
    folder = vault / obsidian.FOLDER
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        data = json.loads((folder / obsidian.SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    try:
        enabled = obsidian.PLUGIN_ID in json.loads((vault / ".obsidian/community-plugins.json").read_text("utf-8"))
    except (OSError, ValueError, TypeError):
        enabled = False
    token = read_token(vault, env)
    check = ("token matches" if token and data.get("token") == token else
             "no token yet (run serve)" if not token else "token differs: run `vault-cortex install obsidian` again")
    url = data.get("serverUrl", "?")
    if serving_at and url != serving_at:
        url = f"{url} (the running server is at {serving_at}: `vault-cortex install obsidian --url {serving_at}`)"
    return (f"plugin {manifest.get('version', '?')} in {obsidian.FOLDER}: server {url}, "
            f"{check}; {'enabled' if enabled else 'not enabled in Obsidian yet (Settings → Community plugins)'}")


def gather(vault: Path, env: Mapping[str, str] | None = None, *, index_dir: Path | None = None) -> VaultStatus:
    """Everything `status` shows, read without changing anything."""
    from vault_cortex.cortex import Cortex

    env = os.environ if env is None else env
    where = index_location(vault.resolve(), index_dir, env)
    server = serving(lock_path(vault, where.path))
    if server.running:
        server = ask(server, read_token(vault, env, where.path))
    index = server.status.get("index") if server.status else None
    if index is None and (where.path / "index.db").is_file():
        with Cortex.open(vault, index_dir=index_dir) as cx:
            index = cx.status()
    installed = Installed(claude_code=claude_code(vault, project=Path.cwd()),
                          codex=list(install_codex.installed(vault, env, project=Path.cwd())),
                          gemini=list(install_gemini.installed(vault, env, project=Path.cwd())),
                          obsidian=obsidian_plugin(vault, env, server.url if server.answers else None))
    return VaultStatus(vault=str(vault), version=__version__, index=index, server=server,
                       mcp=server_pids(where.path), installed=installed, capture=capture(vault, env))


def render_capture(c: Capture) -> str:
    """One line: whether sessions are captured, what is kept and where."""
    if c.error:
        return f"off until the settings load: {c.error}"
    if not c.enabled:
        return "off ([capture] enabled = false, or nothing kept): the hooks write no session"
    words = {"prompts": "prompts", "answers": "answers", "tools": "tool calls"}
    kept = [words[k] for k in c.kept]
    return f"on: {', '.join(kept[:-1]) + ' and ' if len(kept) > 1 else ''}{kept[-1]} into {c.folder}/"


def render(s: VaultStatus) -> str:
    """The status as a few aligned lines."""
    rows = [("vault", f"{s.vault} (vault-cortex {s.version})")]
    i = s.index
    if i is None:
        rows.append(("index", "none yet: `vault-cortex serve` or `vault-cortex sync` builds it"))
    else:
        rows.append(("index", f"{i.get('notes', 0)} notes, {i.get('chunks', 0)} chunks, {i.get('vectors', 0)} "
                              f"vectors, {i.get('links', 0)} links ({i.get('dangling', 0)} dangling), "
                              f"{i.get('skipped', 0)} files skipped; last sync {i.get('last_sync') or 'never'}"))
        progress = i.get("indexing")
        rows.append(("indexing", f"{progress['done']}/{progress['total']} chunks" if isinstance(progress, dict)
                     else "idle"))
    sv = s.server
    if not sv.running:
        rows.append(("server", "not running (start it: vault-cortex serve --vault …)"))
    else:
        answers = "answers" if sv.answers else "does not answer"
        rows.append(("server", f"running: pid {sv.pid} at {sv.url} ({answers})"))
        watch = (sv.status or {}).get("watch")
        if isinstance(watch, dict):
            rows.append(("watcher", f"{'watching' if watch.get('watching') else 'not watching'}, "
                                    f"{watch.get('syncs', 0)} syncs, last at {watch.get('last_sync_at') or 'never'}, "
                                    f"lag {watch.get('lag_ms', 0)} ms"
                                    + (f", last error: {watch['last_error']}" if watch.get("last_error") else "")))
    rows.append(("mcp", f"stdio server{'s' if len(s.mcp) > 1 else ''} answering the hooks: pid "
                        f"{', '.join(map(str, s.mcp))}" if s.mcp
                 else "no stdio server running (Claude Code starts one for each session)"))
    rows.extend(("claude-code", line) for line in s.installed.claude_code or ["not installed"])
    rows.extend(("codex", line) for line in s.installed.codex or ["not installed"])
    rows.extend(("gemini", line) for line in s.installed.gemini or ["not installed"])
    rows.append(("obsidian", s.installed.obsidian or "plugin not installed (vault-cortex install obsidian)"))
    rows.append(("capture", render_capture(s.capture)))
    return "".join(f"{name:<12} {text}\n" for name, text in rows)
