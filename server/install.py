"""`vault-cortex install claude-code`: the MCP server entry and every hook, merged into Claude Code's settings.

Scope `user`: hooks in `~/.claude/settings.json`, the MCP server in `~/.claude.json` (`mcpServers`, where
`claude mcp add --scope user` puts it). Scope `project`: `.claude/settings.json` and `.mcp.json` in the
project folder. Only entries this command recognises as its own are touched: one matcher group per hook
event whose command runs `vault-cortex hook EVENT`, and the `vault-cortex` MCP server. Installing again
changes nothing; installing with another vault replaces them in place; `uninstall` removes exactly them
(and a container only when removing them left it empty). A file that is not a JSON object is an error and
no file is written.

Each file is written in its own format (indent, separators, escapes, line ends, final newline: whatever JSON
writer made it), so uninstall gives back its exact bytes. A file kept as a link (a dotfiles repository) is
written through: the target is replaced atomically and the link stays. A file that holds the bearer token is
left readable by its owner only (0600); a linked `~/.claude.json` is shared, so it gets `${VAULT_CORTEX_TOKEN}`.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from server.bearer import TOKEN_ENV, load_or_create_token, read_token
from server.clients import CLAUDE_CODE, Client
from server.hooks import server_urls
from vault_cortex.errors import ConfigError, VaultNotFound

SERVER_NAME = "vault-cortex"
# Claude Code event → (`vault-cortex hook` event, matcher or None), and the seconds Claude Code gives a handler (its
# `timeout`) where its default is too short: server/clients.py's record of Claude Code (test_install checks that
# every hook in server.hooks is here).
HOOKS: dict[str, tuple[str, str | None]] = {e: (h.event, h.matcher) for e, h in CLAUDE_CODE.hooks.items()}
TIMEOUTS: dict[str, int] = {e: h.timeout for e, h in CLAUDE_CODE.hooks.items() if h.timeout is not None}
JSONObject = dict[str, Any]


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """One settings file: its path, whether it changes, and the unified diff of the change."""

    path: str
    changed: bool
    diff: str
    created: bool = False  # the file did not exist
    removed: bool = False  # uninstall left it empty: deleted
    target: str | None = None  # the file is a link: what was written (or deleted) is this, its target
    private: bool = False  # it holds the bearer token: its owner's only (0600)


class Style(msgspec.Struct, frozen=True, kw_only=True):
    """How a settings file's JSON is written, so that a file comes back in its own format (byte for byte)."""

    indent: str | None = "  "  # None: on one line
    separators: tuple[str, str] = (",", ": ")
    ensure_ascii: bool = False
    newline: str = "\n"
    final_newline: bool = True


PRETTY = Style()  # a file this command creates


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


def hook_command(command: str, event: str, vault: Path, client: Client | str = CLAUDE_CODE) -> str:
    """A hook's command line (Claude Code's as it always was; another client's names it with `--client`)."""
    name = client if isinstance(client, str) else client.name
    named = "" if client is CLAUDE_CODE or name == CLAUDE_CODE.name else f" --client {name}"
    return f"{command} hook {event} --vault {shlex.quote(str(vault))}{named}"


def server_entry(command: str, vault: Path) -> JSONObject:
    """The stdio MCP entry: Claude Code starts `vault-cortex mcp` itself (works with no server running)."""
    program, *pre = shlex.split(command)
    return {"type": "stdio", "command": program, "args": [*pre, "mcp", "--vault", str(vault)], "env": {}}


def http_entry(url: str, token: str) -> JSONObject:
    """The HTTP MCP entry: Claude Code talks to the running `serve` at `url` (its /mcp) with the bearer token
    (`token` may be Claude Code's `${VAR}` expansion, so that no secret is written to a versioned file)."""
    return {"type": "http", "url": f"{url.rstrip('/')}/mcp", "headers": {"Authorization": f"Bearer {token}"}}


def http_token(shared: bool, vault: Path, *, dry_run: bool = False) -> str:
    """What the HTTP entry's header carries: in a shared file (the project's `.mcp.json`, often versioned, or a
    `~/.claude.json` kept as a link into a dotfiles repository) a reference to `$VAULT_CORTEX_TOKEN`, which Claude
    Code expands when it loads the file; in the user's own `~/.claude.json` the vault's token itself (created now
    if `serve` has not yet made it; a dry run creates nothing)."""
    if shared:
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


def with_hooks(settings: JSONObject, command: str, vault: Path, client: Client = CLAUDE_CODE) -> JSONObject:
    """settings with one matcher group per event of `client` running `vault-cortex hook`, each where the old one
    was."""
    groups: dict[str, JSONObject] = {}
    for event, hook in client.hooks.items():
        handler: JSONObject = {"type": "command", "command": hook_command(command, hook.event, vault, client)}
        if hook.timeout is not None:
            handler["timeout"] = hook.timeout
        groups[event] = {"matcher": hook.matcher, "hooks": [handler]} if hook.matcher is not None else {
            "hooks": [handler]}
    return with_groups(settings, groups)


def with_groups(settings: JSONObject, groups: Mapping[str, JSONObject]) -> JSONObject:
    """settings without this command's hook handlers and with `groups` (client event → its matcher group), each
    where the old one was, else last: the merge every client's settings share (their `hooks` are alike)."""
    out, where = strip(settings)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("`hooks` in the settings is not an object; fix it by hand first")
    for event, group in groups.items():
        present = hooks.setdefault(event, [])
        if not isinstance(present, list):
            raise ConfigError(f"`hooks.{event}` in the settings is not a list; fix it by hand first")
        present.insert(where.get(event, len(present)), copy.deepcopy(group))
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


def http_notice(change: Change, vault: Path, client: str = "Claude Code") -> str:
    """What a user of the HTTP transport must know: the server must run, and where the token comes from
    (`change`: the MCP servers file's; `client`: who reads it)."""
    where = f"`vault-cortex serve --vault {shlex.quote(str(vault))}` must be running for the MCP tools to answer"
    name = Path(change.path).name
    if change.private:
        return f"{where}; the bearer token is in {change.path} (mode 0600: yours only, never in a project)."
    token_file = shlex.quote(str(vault / ".cortex" / "token"))
    shared = f"{name} (a link to {change.target}, so shared)" if change.target else name
    return (f"{where}. {shared} holds no secret: its header reads ${{{TOKEN_ENV}}}, so export it where you "
            f'start {client}: export {TOKEN_ENV}="$(cat {token_file})"')


def mcp_entry(transport: str, shared: bool, command: str, vault: Path, *, dry_run: bool = False) -> JSONObject:
    """The MCP server entry for a transport: `stdio` (Claude Code starts it) or `http` (the running `serve`;
    `shared`: the file is shared, so the entry names the token's variable, not the token)."""
    if transport == "stdio":
        return server_entry(command, vault)
    if transport == "http":
        return http_entry(server_urls(vault)[0], http_token(shared, vault, dry_run=dry_run))
    raise ConfigError(f"unknown transport {transport!r}: stdio or http")


# -- the files -----------------------------------------------------------------------------------------
def dump(data: Mapping[str, Any], style: Style = PRETTY) -> str:
    text = json.dumps(data, indent=style.indent, separators=style.separators, ensure_ascii=style.ensure_ascii)
    if style.newline != "\n":
        text = text.replace("\n", style.newline)  # only indentation's: a newline inside a string is escaped
    return text + (style.newline if style.final_newline else "")


def style_of(text: str | None, data: Mapping[str, Any]) -> Style:
    """The format `text` (holding `data`) was written in: the one that writes it back exactly, else a close guess
    (its indent, separators and line ends) for a file formatted by hand."""
    if text is None or not text.strip():
        return PRETTY
    newline = "\r\n" if "\r\n" in text else "\n"
    nested = re.search(r"\n([ \t]+)\S", text)
    indent = nested.group(1) if nested else None
    key = ": " if re.search(r'"\s*:\s', text) else ":"
    item = ", " if indent is None and re.search(r'[]}"\w],\s', text) else ","
    guess = Style(indent=indent, separators=(item, key), ensure_ascii=bool(re.search(r"\\u[0-9a-fA-F]{4}", text)),
                  newline=newline, final_newline=text.endswith(newline))
    candidates = [guess, *(msgspec.structs.replace(guess, separators=(i, k), ensure_ascii=a)
                           for i in (",", ", ") for k in (": ", ":") for a in (False, True))]
    return next((style for style in candidates if dump(data, style) == text), guess)


def load(path: Path) -> tuple[JSONObject, str | None]:
    """A settings file's object and text (None when missing); a clear error when it is not a JSON object."""
    try:
        with path.open(encoding="utf-8", newline="") as fh:  # line ends as they are, so a CRLF file stays one
            text = fh.read()
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


def destination(path: Path) -> Path | None:
    """Where a settings file kept as a link really is (None: it is no link); a clear error, before anything is
    written, when the target's folder does not exist."""
    if not path.is_symlink():
        return None
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise ConfigError(f"{path} is a link to {target}, whose folder does not exist; nothing was changed")
    return target


def plan(path: Path, before: JSONObject, text: str | None, after: JSONObject, *, private: bool = False) -> Change:
    removed = text is not None and not after and before != after
    changed = before != after or (text is None and bool(after))
    new = "" if removed else dump(after, style_of(text, before))
    return text_plan(path, text, new, changed=changed, removed=removed, private=private)


def text_plan(path: Path, text: str | None, new: str, *, changed: bool | None = None, removed: bool = False,
              private: bool = False) -> Change:
    """A file's change from `text` (None: missing) to `new` ("" and `removed`: deleted), with its diff."""
    changed = (text or "") != new if changed is None else changed
    diff = "".join(difflib.unified_diff((text or "").splitlines(True), new.splitlines(True),
                                        f"a/{path}" if text is not None else "/dev/null",
                                        f"b/{path}" if not removed else "/dev/null")) if changed else ""
    target = destination(path)
    return Change(path=str(path), changed=changed, diff=diff, created=text is None and changed, removed=removed,
                  target=None if target is None else str(target), private=private)


def write(path: Path, text: str, *, private: bool = False) -> None:
    """Atomically: a temp file beside it, fsync, rename; keeps the file's permissions (`private`: 0600).
    A link is written through: its target is replaced and the link stays."""
    path = destination(path) or path
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        mode = 0o600 if private else mode
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def capture_notice(vault: Path) -> str:
    """One line: whether the capture hooks write sessions into the vault, where, and how to turn that off."""
    from vault_cortex.config import CONFIG_PATH, load_settings
    from vault_cortex.errors import ConfigError

    config = vault / CONFIG_PATH
    try:
        keep = load_settings(vault).capture
        folder = keep.path
    except ConfigError as exc:
        return f"Sessions are not captured until {config} loads: {exc}"
    if not keep.on:
        return f"Sessions are not captured ([capture] in {config}); turn it on with [capture] enabled = true"
    return f"Sessions are captured into {folder}/ of {vault}; turn off with [capture] enabled = false in {config}"


def vault_root(vault: Path | None) -> Path:
    """The vault to install for, resolved; VaultNotFound when it is none."""
    if vault is None or not (vault / ".cortex").is_dir():
        raise VaultNotFound(f"{vault} is not a vault (no .cortex/): create it with `vault-cortex init` or "
                            "`vault-cortex serve` first")
    return vault.expanduser().resolve()


def apply(scope: str, vault: Path | None, *, install: bool, dry_run: bool = False, command: str | None = None,
          home: Path | None = None, project: Path | None = None, transport: str = "stdio") -> list[Change]:
    """Install (vault given) or uninstall; both files are read and checked before either is written.

    transport `stdio` (the default) has Claude Code start `vault-cortex mcp`; `http` points it at the running
    `serve` (where it recorded its URL, else the vault's `[server]` host and port)."""
    settings_file, mcp_file = files(scope, home=home, project=project)
    if install:
        vault = vault_root(vault)
    command = command or default_command()
    loaded = [(settings_file, *load(settings_file)), (mcp_file, *load(mcp_file))]
    (s_path, s_data, s_text), (m_path, m_data, m_text) = loaded
    shared = scope == "project" or m_path.is_symlink()  # a linked ~/.claude.json lives in a dotfiles repository
    holds_token = install and transport == "http" and not shared
    if install and vault is not None:
        s_new = with_hooks(s_data, command, vault)
        m_new = with_server(m_data, mcp_entry(transport, shared, command, vault, dry_run=dry_run))
    else:
        s_new = strip(s_data)[0]
        m_new = with_server(m_data, None)
    changes = [plan(s_path, s_data, s_text, s_new), plan(m_path, m_data, m_text, m_new, private=holds_token)]
    if not dry_run:
        save(changes[0], s_data, s_text, s_new)
        save(changes[1], m_data, m_text, m_new)
    return changes


def save(change: Change, before: JSONObject, text: str | None, after: JSONObject) -> None:
    """Carry out a planned change of a settings file (`before`, read as `text`, becomes `after`) in its own format."""
    where = Path(change.target or change.path)
    if change.removed:
        where.unlink()
    elif change.changed:
        write(where, dump(after, style_of(text, before)), private=change.private)
    elif change.private and where.stat().st_mode & 0o077:
        where.chmod(0o600)  # installed before, unchanged, but readable by others: the token is not
