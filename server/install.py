"""`vault-cortex install claude-code`: the MCP server entry and every hook, merged into Claude Code's settings.

Scope `user`: hooks in `~/.claude/settings.json`, the MCP server in `~/.claude.json` (`mcpServers`, where
`claude mcp add --scope user` puts it). Scope `project`: `.claude/settings.json` and `.mcp.json` in the
project folder. Only entries this command recognises as its own are touched: one matcher group per hook
event whose command runs `vault-cortex hook EVENT`, and the `vault-cortex` MCP server. Installing again
changes nothing; installing with another vault replaces them in place; `uninstall` removes exactly them
(and a container only when removing them left it empty). A file that is not a JSON object is an error and
no file is written.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from server.bearer import TOKEN_ENV, load_or_create_token, read_token
from server.hooks import server_urls
from vault_cortex.errors import ConfigError, VaultNotFound

SERVER_NAME = "vault-cortex"
# Claude Code event → (`vault-cortex hook` event, matcher or None). `tool-failure` (PostToolUseFailure: a tool
# call that failed, such as a command exiting non-zero) and `tool-result` (PostToolUse: a tool that ran but
# printed a failure) push memories about what failed; test_install checks that every hook in server.hooks is here.
HOOKS: dict[str, tuple[str, str | None]] = {
    "SessionStart": ("session-start", None),
    "UserPromptSubmit": ("prompt", None),
    "PreToolUse": ("tool", "*"),
    "PostToolUse": ("tool-result", "*"),
    "PostToolUseFailure": ("tool-failure", "*"),
    "Stop": ("stop", None),  # the second look before the answer (`[hooks] second_look` turns it off)
    "PreCompact": ("pre-compact", None),
    "SessionEnd": ("session-end", None),
}
# Seconds Claude Code gives a handler (its `timeout`). SessionEnd hooks otherwise get 1.5 s, and Claude Code 2.1
# cancels the capture ("Hook cancelled") while the hook process is still loading the library.
TIMEOUTS: dict[str, int] = {"SessionEnd": 60, "PreCompact": 60}  # 60: the most SessionEnd gets
JSONObject = dict[str, Any]


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """One settings file: its path, whether it changes, and the unified diff of the change."""

    path: str
    changed: bool
    diff: str
    created: bool = False  # the file did not exist
    removed: bool = False  # uninstall left it empty: deleted


def files(scope: str, *, home: Path | None = None, project: Path | None = None) -> tuple[Path, Path]:
    """(hooks settings file, MCP servers file) for a scope."""
    if scope == "user":
        home = home or Path.home()
        return home / ".claude" / "settings.json", home / ".claude.json"
    if scope == "project":
        project = project or Path.cwd()
        return project / ".claude" / "settings.json", project / ".mcp.json"
    raise ConfigError(f"unknown scope {scope!r}: user or project")


def default_command() -> str:
    """The `vault-cortex` executable of this installation (absolute, so hooks work without an activated venv)."""
    beside = Path(sys.executable).with_name("vault-cortex")
    if beside.is_file():
        return str(beside)
    return shutil.which("vault-cortex") or "vault-cortex"


def hook_command(command: str, event: str, vault: Path) -> str:
    return f"{command} hook {event} --vault {shlex.quote(str(vault))}"


def server_entry(command: str, vault: Path) -> JSONObject:
    """The stdio MCP entry: Claude Code starts `vault-cortex mcp` itself (works with no server running)."""
    program, *pre = shlex.split(command)
    return {"type": "stdio", "command": program, "args": [*pre, "mcp", "--vault", str(vault)], "env": {}}


def http_entry(url: str, token: str) -> JSONObject:
    """The HTTP MCP entry: Claude Code talks to the running `serve` at `url` (its /mcp) with the bearer token
    (`token` may be Claude Code's `${VAR}` expansion, so that no secret is written to a versioned file)."""
    return {"type": "http", "url": f"{url.rstrip('/')}/mcp", "headers": {"Authorization": f"Bearer {token}"}}


def http_token(scope: str, vault: Path, *, dry_run: bool = False) -> str:
    """What the HTTP entry's header carries: in the project's `.mcp.json` (often versioned) a reference to
    `$VAULT_CORTEX_TOKEN`, which Claude Code expands when it loads the file; in the user's own `~/.claude.json`
    the vault's token itself (created now if `serve` has not yet made it; a dry run creates nothing)."""
    if scope == "project":
        return f"${{{TOKEN_ENV}}}"
    if dry_run:
        return read_token(vault, os.environ) or "<the vault's token, created by the install>"
    return load_or_create_token(vault, os.environ)


def is_ours(handler: object) -> bool:
    """A hook handler written by this command (or copied from the README): it runs `vault-cortex hook EVENT`."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        argv = shlex.split(handler["command"])
    except ValueError:
        return False
    if "hook" not in argv:
        return False
    at = argv.index("hook")
    events = {event for event, _ in HOOKS.values()}
    program = " ".join(argv[:at])
    return at + 1 < len(argv) and argv[at + 1] in events and (
        Path(argv[0]).name == "vault-cortex" or program.endswith(("server.cli", "server/cli.py")))


# -- the merge, on values ----------------------------------------------------------------------------------
def strip(settings: JSONObject) -> tuple[JSONObject, dict[str, int]]:
    """settings without this command's hook handlers; where each event's first one was (to put it back there)."""
    out = copy.deepcopy(settings)
    where: dict[str, int] = {}
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out, where
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept: list[Any] = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(is_ours(h) for h in inner):
                kept.append(group)
                continue
            where.setdefault(event, len(kept))
            rest = [h for h in inner if not is_ours(h)]
            if rest:
                kept.append({**group, "hooks": rest})
        if event in where and not kept:
            del hooks[event]
        else:
            hooks[event] = kept
    if where and not hooks:
        del out["hooks"]
    return out, where


def with_hooks(settings: JSONObject, command: str, vault: Path) -> JSONObject:
    """settings with one matcher group per event running `vault-cortex hook`, each where the old one was."""
    out, where = strip(settings)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("`hooks` in the settings is not an object; fix it by hand first")
    for event, (ours, matcher) in HOOKS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"`hooks.{event}` in the settings is not a list; fix it by hand first")
        group: JSONObject = {"matcher": matcher} if matcher is not None else {}
        handler: JSONObject = {"type": "command", "command": hook_command(command, ours, vault)}
        if event in TIMEOUTS:
            handler["timeout"] = TIMEOUTS[event]
        group["hooks"] = [handler]
        groups.insert(where.get(event, len(groups)), group)
    return out


def with_server(config: JSONObject, entry: JSONObject | None) -> JSONObject:
    """config with the `vault-cortex` MCP server `entry` (None: without it)."""
    out = copy.deepcopy(config)
    servers = out.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError("`mcpServers` is not an object; fix it by hand first")
    if entry is None:
        if servers and SERVER_NAME in servers:
            del servers[SERVER_NAME]
            if not servers:
                del out["mcpServers"]
        return out
    out.setdefault("mcpServers", {})[SERVER_NAME] = entry
    return out


def http_notice(scope: str, vault: Path) -> str:
    """What a user of the HTTP transport must know: the server must run, and where the token comes from."""
    where = f"`vault-cortex serve --vault {shlex.quote(str(vault))}` must be running for the MCP tools to answer"
    if scope == "project":
        token_file = shlex.quote(str(vault / ".cortex" / "token"))
        return (f"{where}. .mcp.json holds no secret: its header reads ${{{TOKEN_ENV}}}, so export it where you "
                f'start Claude Code: export {TOKEN_ENV}="$(cat {token_file})"')
    return f"{where}; the bearer token is in ~/.claude.json (yours only, never in a project)."


def mcp_entry(transport: str, scope: str, command: str, vault: Path, *, dry_run: bool = False) -> JSONObject:
    """The MCP server entry for a transport: `stdio` (Claude Code starts it) or `http` (the running `serve`)."""
    if transport == "stdio":
        return server_entry(command, vault)
    if transport == "http":
        return http_entry(server_urls(vault)[0], http_token(scope, vault, dry_run=dry_run))
    raise ConfigError(f"unknown transport {transport!r}: stdio or http")


# -- the files -----------------------------------------------------------------------------------------
def dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def load(path: Path) -> tuple[JSONObject, str | None]:
    """A settings file's object and text (None when missing); a clear error when it is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; nothing was changed") from exc
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                          "fix it or move it away — nothing was changed") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was changed")
    return data, text


def plan(path: Path, before: JSONObject, text: str | None, after: JSONObject) -> Change:
    removed = text is not None and not after and before != after
    changed = before != after or (text is None and bool(after))
    old = dump(before) if text is not None else ""
    new = "" if removed else dump(after)
    diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{path}" if text is not None else "/dev/null",
                                        f"b/{path}" if not removed else "/dev/null")) if changed else ""
    return Change(path=str(path), changed=changed, diff=diff, created=text is None and changed, removed=removed)


def write(path: Path, data: Mapping[str, Any]) -> None:
    """Atomically: a temp file beside it, fsync, rename; keeps the file's permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(dump(data))
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply(scope: str, vault: Path | None, *, install: bool, dry_run: bool = False, command: str | None = None,
          home: Path | None = None, project: Path | None = None, transport: str = "stdio") -> list[Change]:
    """Install (vault given) or uninstall; both files are read and checked before either is written.

    transport `stdio` (the default) has Claude Code start `vault-cortex mcp`; `http` points it at the running
    `serve` (where it recorded its URL, else the vault's `[server]` host and port)."""
    settings_file, mcp_file = files(scope, home=home, project=project)
    if install:
        if vault is None or not (vault / ".cortex").is_dir():
            raise VaultNotFound(f"{vault} is not a vault (no .cortex/): create it with `vault-cortex init` or "
                                "`vault-cortex serve` first")
        vault = vault.expanduser().resolve()
    command = command or default_command()
    loaded = [(settings_file, *load(settings_file)), (mcp_file, *load(mcp_file))]
    (s_path, s_data, s_text), (m_path, m_data, m_text) = loaded
    if install and vault is not None:
        s_new = with_hooks(s_data, command, vault)
        m_new = with_server(m_data, mcp_entry(transport, scope, command, vault, dry_run=dry_run))
    else:
        s_new = strip(s_data)[0]
        m_new = with_server(m_data, None)
    changes = [plan(s_path, s_data, s_text, s_new), plan(m_path, m_data, m_text, m_new)]
    if not dry_run:
        for change, data in zip(changes, (s_new, m_new), strict=True):
            if change.removed:
                Path(change.path).unlink()
            elif change.changed:
                write(Path(change.path), data)
    return changes
