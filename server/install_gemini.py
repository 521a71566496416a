"""`vault-cortex install gemini`: the MCP server entry and the hooks, merged into Gemini CLI's settings.json.

Scope `user`: `~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini/` when Gemini CLI's home is moved); scope
`project`: `.gemini/settings.json` in the project folder. Both the hooks (`hooks.<Event>`) and the MCP server
(`mcpServers.vault-cortex`) live in that one file. The merge, the file's own JSON format, the link written through
and the token's 0600 are the Claude Code installer's (server/install.py): only entries it recognises as its own are
touched, installing again changes nothing, and uninstall gives the file back byte for byte (removes it when this
command created it).

The hooks run the core's events for Gemini (`vault-cortex hook EVENT --client gemini`):

- SessionStart → `session-start`, BeforeAgent → `prompt`, AfterTool → `tool-result` (every tool, matcher `*`; a
  failing command is a success whose output holds `Exit Code: N`, a tool that failed itself carries `error`),
  AfterAgent → `stop` (the second look: a block sends the agent on once), SessionEnd → `session-end` (the capture).
- Not BeforeTool: its context reaches no model request. Not PreCompress: it fires before every model request,
  compressed or not, so it says nothing about a compaction and would capture the session over and over.

Each handler is named (`vault-cortex-EVENT`), so that `hooksConfig.disabled` in the settings (or `/hooks
disable NAME` in Gemini CLI) can turn one off.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path

from server import install
from server.clients import GEMINI
from server.install import Change, JSONObject
from vault_cortex.errors import ConfigError

CLIENT = "gemini"
TITLE = "Gemini CLI"
HOME_ENV = GEMINI.home_env  # moves the folder Gemini CLI keeps `.gemini/` in
# Gemini CLI event → (`vault-cortex hook` event, matcher or None), as the adapter (server/clients.py) maps them
HOOKS: dict[str, tuple[str, str | None]] = {name: (h.event, h.matcher) for name, h in GEMINI.hooks.items()}
CAPTURE = "SessionEnd"  # the event whose hook captures the session into the vault
_COMMENT = re.compile(r"^\s*//|/\*", re.M)  # a comment Gemini CLI strips before it parses its settings


def settings_file(scope: str, *, home: Path | None = None, project: Path | None = None) -> Path:
    """Gemini CLI's settings file for a scope."""
    if scope == "user":
        home = home or Path(os.environ.get(HOME_ENV) or Path.home())
        return home / ".gemini" / "settings.json"
    if scope == "project":
        return (project or Path.cwd()) / ".gemini" / "settings.json"
    raise ConfigError(f"unknown scope {scope!r}: user or project")


def hook_name(event: str) -> str:
    """The name a handler is known by in Gemini CLI (`hooksConfig.disabled` lists such names)."""
    return f"{install.SERVER_NAME}-{HOOKS[event][0]}"


def groups(command: str, vault: Path) -> dict[str, JSONObject]:
    """One matcher group per Gemini event, running `vault-cortex hook EVENT --client gemini`."""
    out: dict[str, JSONObject] = {}
    for event, (ours, matcher) in HOOKS.items():
        handler = {"type": "command", "command": install.hook_command(command, ours, vault, CLIENT),
                   "name": hook_name(event)}
        out[event] = {"matcher": matcher, "hooks": [handler]} if matcher is not None else {"hooks": [handler]}
    return out


def mcp_entry(transport: str, shared: bool, command: str, vault: Path, *, dry_run: bool = False) -> JSONObject:
    """Gemini CLI's MCP entry: stdio `{command, args}` (it starts `vault-cortex mcp`), or http `{type, url,
    headers}`, which it reads as Claude Code does (and it expands `${VAR}` in its settings too)."""
    if transport == "stdio":
        program, *pre = shlex.split(command)
        return {"command": program, "args": [*pre, "mcp", "--vault", str(vault)]}
    return install.mcp_entry(transport, shared, command, vault, dry_run=dry_run)


def apply(scope: str, vault: Path | None, *, install_: bool, dry_run: bool = False, command: str | None = None,
          home: Path | None = None, project: Path | None = None, transport: str = "stdio") -> Change:
    """Install (vault given) or uninstall in the scope's settings.json; it is read and checked before it is written.

    A shared file (a project's, or a user file kept as a link into a dotfiles repository) gets the HTTP entry with
    a reference to `$VAULT_CORTEX_TOKEN`; the user's own file the token itself, and mode 0600."""
    path = settings_file(scope, home=home, project=project)
    try:
        data, text = install.load(path)
    except ConfigError as exc:
        if "not valid JSON" in str(exc) and _COMMENT.search(path.read_text(encoding="utf-8", errors="replace")):
            raise ConfigError(f"{exc} (Gemini CLI reads comments in its settings; this installer writes JSON only: "
                              "take them out, or add the entries by hand)") from exc
        raise
    if install_:
        vault = install.vault_root(vault)
    command = command or install.default_command()
    shared = scope == "project" or path.is_symlink()
    if install_ and vault is not None:
        entry = mcp_entry(transport, shared, command, vault, dry_run=dry_run)
        after = install.with_server(install.with_groups(data, groups(command, vault)), entry)
    else:
        after = install.with_server(install.strip(data)[0], None)
    change = install.plan(path, data, text, after, private=install_ and transport == "http" and not shared)
    if not dry_run:
        install.save(change, data, text, after)
    return change


def installed(vault: Path, env: Mapping[str, str], *, project: Path | None = None) -> Iterator[str]:
    """A line for each scope whose settings.json runs vault-cortex (for `vault-cortex status`)."""
    for scope in ("user", "project"):
        home = Path(env.get(HOME_ENV) or env.get("HOME") or Path.home())
        path = settings_file(scope, home=home, project=project)
        try:
            data, _ = install.load(path)
        except ConfigError:
            yield f"{scope}: cannot read {path}"
            continue
        hooks = data.get("hooks")
        hooks = hooks if isinstance(hooks, dict) else {}
        events = [e for e, groups_ in hooks.items() if isinstance(groups_, list) and any(
            install.is_ours(h) for g in groups_ if isinstance(g, dict) for h in g.get("hooks") or [])]
        servers = data.get("mcpServers")
        servers = servers if isinstance(servers, dict) else {}
        if not events and install.SERVER_NAME not in servers:
            continue
        mcp = "MCP server" if install.SERVER_NAME in servers else "no MCP server"
        on = "this vault" if str(vault.resolve()) in json.dumps(data) else "another vault"
        yield f"{scope}: {mcp}, hooks on {len(events)} events for {on} ({path})"
