"""`vault-cortex install codex`: the hooks in Codex CLI's `hooks.json`, trusted, and the MCP server, in `config.toml`.

Scope `user`: the hooks in `~/.codex/hooks.json` (`$CODEX_HOME` when set). Scope `project`: in the project's
`.codex/hooks.json`, and the project trusted (`[projects."<root>"] trust_level = "trusted"`), without which Codex
runs none of a project's configuration. Both scopes: the stdio MCP server `[mcp_servers.vault-cortex]`, and each of
the hooks trusted in `~/.codex/config.toml` — `codex exec` skips an untrusted hook without a word — with the hash
Codex computes for it (`hook_trust`, as codex-rs/hooks/src/engine/discovery.rs does in 0.171; checked against
`codex app-server`'s `hooks/list` by tests/e2e/test_codex_cli.py).

hooks.json is merged as Claude Code's settings are (server/install.py: only our matcher groups touched, the file's
own JSON format kept). config.toml is the user's, comments and all, and Codex edits it too: this command owns one
block at its end, between a `# >>> vault-cortex` and a `# <<< vault-cortex` line, and touches nothing outside it.
Installing again changes nothing; another scope or project adds its tables to the block; `uninstall` takes out the
scope's and, when nothing is left in it, the block itself, giving the file back byte for byte. What is there
already outside the block (a trusted project, the same trust hash) is used, not written again; what contradicts it
(a `[mcp_servers.vault-cortex]` of the user's, a project marked untrusted) is a clear error and nothing is written.
A folder Codex reads (`~/.codex`, the project's `.codex`) kept as a link is refused: Codex keys its trust on the
path; a file kept as a link is written through.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from server import install
from server.clients import CODEX
from vault_cortex.errors import ConfigError

EVENT_LABELS = {"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request",
                "PostToolUse": "post_tool_use", "PreCompact": "pre_compact", "PostCompact": "post_compact",
                "SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop",
                "SessionEnd": "session_end"}
NO_MATCHER = {"UserPromptSubmit", "Stop"}  # events whose matcher Codex ignores (and leaves out of the hash)
BEGIN = "# >>> vault-cortex (`vault-cortex uninstall codex` removes this block)"
END = "# <<< vault-cortex"
SERVER_TABLE = f"mcp_servers.{install.SERVER_NAME}"


# -- trust, as Codex computes it ---------------------------------------------------------------------------
def hook_timeout(event: str, timeout: int | None) -> int:
    """The timeout Codex gives a command hook: 600 s by default, at least 1; SessionEnd 1 s, at most 3."""
    if event == "SessionEnd":
        return min(max(timeout or 1, 1), 3)
    return max(timeout or 600, 1)


def hook_trust_hash(event: str, handler: Mapping[str, Any], matcher: str | None = None) -> str:
    """The `trusted_hash` Codex expects for one command handler of `event`: sha256 over compact JSON with sorted
    keys (non-ASCII kept) of the handler as Codex normalises it (timeout and async always, statusMessage when set),
    with the event's snake-case label and its matcher (when the event takes one and it is set)."""
    normal: dict[str, Any] = {"type": "command", "command": handler["command"],
                              "timeout": hook_timeout(event, handler.get("timeout")),
                              "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": EVENT_LABELS[event], "hooks": [normal]}
    if matcher is not None and event not in NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def hook_trust(hooks_file: Path, hooks: Mapping[str, Any], only: Any = None) -> dict[str, str]:
    """Each command handler's state key in config.toml (`<hooks file>:<event label>:<group>:<handler>`) and its
    trusted hash, for a hooks.json at `hooks_file` holding `hooks` (its "hooks" object); `only`: a test of the
    handler (ours), else every command handler."""
    trust: dict[str, str] = {}
    for event, groups in hooks.items():
        if event not in EVENT_LABELS or not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            for h, handler in enumerate(group.get("hooks") or [] if isinstance(group, dict) else []):
                if isinstance(handler, dict) and handler.get("type") == "command" and (only is None or only(handler)):
                    key = f"{hooks_file}:{EVENT_LABELS[event]}:{g}:{h}"
                    trust[key] = hook_trust_hash(event, handler, group.get("matcher"))
    return trust


def trust_toml(hooks_file: Path, hooks: Mapping[str, Any], projects: Sequence[Path] = ()) -> str:
    """config.toml tables that trust every command hook in `hooks_file` (and the `projects`, for project hooks)."""
    tables = [table(f"hooks.state.{json.dumps(key)}", {"trusted_hash": digest})
              for key, digest in hook_trust(hooks_file, hooks).items()]
    tables += [table(f"projects.{json.dumps(str(p))}", {"trust_level": "trusted"}) for p in projects]
    return "\n".join(tables)


# -- config.toml: the block this command owns -------------------------------------------------------------
def table(header: str, values: Mapping[str, Any]) -> str:
    """One TOML table (strings and lists of strings; JSON's string escapes are TOML's)."""
    return f"[{header}]\n" + "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in values.items())


def split(text: str) -> tuple[str, dict[str, str]]:
    """config.toml's text without the block (as it was before the block was added), and the block's tables by
    header; a table of someone else's inside the block (Codex may add one there) stays in the text, at its end."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, ln in enumerate(lines) if ln.rstrip("\r\n") == BEGIN), None)
    if at is None:
        return text, {}
    end = next((i for i in range(at + 1, len(lines)) if lines[i].rstrip("\r\n") == END), len(lines) - 1)
    before, inside, after = "".join(lines[:at]), lines[at + 1:end], "".join(lines[end + 1:])
    tables: dict[str, str] = {}
    foreign: list[str] = []
    header = None
    for line in inside:
        if m := re.match(r"\s*\[([^\[\]].*)\]\s*$", line.rstrip("\r\n")):
            header = m.group(1)
            if not _owned(header):
                foreign.append(line)
                continue
            tables[header] = ""
        elif header is not None and header in tables:
            if line.strip():
                tables[header] += line.rstrip("\r\n") + "\n"
            continue
        elif line.strip():
            foreign.append(line)
    before = before[:-len(_newline(before))] if before.endswith(_newline(before)) else before  # the one we added
    return before + "".join(foreign) + after, tables


def _owned(header: str) -> bool:
    return header == SERVER_TABLE or header.startswith(('hooks.state."', 'projects."'))


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def joined(text: str, tables: Mapping[str, str]) -> str:
    """config.toml's text (without the block) with the block of `tables` at its end (none: no block)."""
    if not tables:
        return text
    nl = _newline(text)
    order = sorted(tables, key=lambda h: (h != SERVER_TABLE, not h.startswith("hooks."), h))
    body = "\n".join(f"[{h}]\n{tables[h]}" for h in order)
    block = f"{BEGIN}\n{body}{END}\n".replace("\n", nl)
    return text + (nl if text else "") + block


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it or move it away — nothing was changed") from exc


# -- where the files are ------------------------------------------------------------------------------------
def codex_home(env: Mapping[str, str], home: Path | None = None) -> Path:
    """Codex's own folder: `$CODEX_HOME`, else `~/.codex`."""
    return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else (home or Path.home()) / ".codex"


def files(scope: str, env: Mapping[str, str], *, home: Path | None = None,
          project: Path | None = None) -> tuple[Path, Path]:
    """(hooks.json, config.toml) for a scope."""
    config = codex_home(env, home) / "config.toml"
    if scope == "user":
        return config.parent / "hooks.json", config
    if scope == "project":
        return (project or Path.cwd()) / ".codex" / "hooks.json", config
    raise ConfigError(f"unknown scope {scope!r}: user or project")


def real_folder(folder: Path) -> None:
    """A folder Codex reads must not be a link: its trust is keyed on the path Codex finds, not the link's target."""
    if folder.is_symlink():
        raise ConfigError(f"{folder} is a link to {os.path.realpath(folder)}; Codex keys each hook's trust on its "
                          "path, so vault-cortex writes only to a real folder: install with the folder itself "
                          "(CODEX_HOME=…) — nothing was changed")


def server_tables(command: str, vault: Path) -> dict[str, str]:
    """The stdio MCP server: Codex starts `vault-cortex mcp --vault VAULT` itself (works with no server running)."""
    program, *pre = shlex.split(command)
    return {SERVER_TABLE: table(SERVER_TABLE, {"command": program, "args": [*pre, "mcp", "--vault", str(vault)]})
            .split("\n", 1)[1]}


def owned_tables(hooks_file: Path, hooks: Mapping[str, Any], project: Path | None,
                 user: Mapping[str, Any]) -> dict[str, str]:
    """The trust tables the block needs for `hooks_file` (and `project`), leaving out what `user` (config.toml
    outside the block) already says; a clear error where it says otherwise."""
    tables: dict[str, str] = {}
    state = _sub(_sub(user, "hooks"), "state")
    for key, digest in hook_trust(hooks_file, hooks, install.is_ours).items():
        theirs = _sub(state, key).get("trusted_hash")
        if theirs == digest:
            continue
        if theirs is not None:
            raise ConfigError(f"config.toml trusts {key} with another hash ({theirs}); remove that "
                              f"[hooks.state] table first — nothing was changed")
        tables[f"hooks.state.{json.dumps(key)}"] = f"trusted_hash = {json.dumps(digest)}\n"
    if project is not None:
        level = _sub(_sub(user, "projects"), str(project)).get("trust_level")
        if level not in (None, "trusted"):
            raise ConfigError(f"config.toml marks {project} {level!r}; Codex runs a project's hooks only when it is "
                              "trusted: change that yourself, or install with --scope user — nothing was changed")
        if level is None:
            tables[f"projects.{json.dumps(str(project))}"] = 'trust_level = "trusted"\n'
    return tables


def _sub(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A table of parsed TOML, or {} where there is none (or a value that is no table: the final parse tells)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _mine(header: str, hooks_file: Path, project: Path | None) -> bool:
    """A table of the block that belongs to this scope's install."""
    return header.startswith("hooks.state." + json.dumps(f"{hooks_file}:")[:-1]) or (
        project is not None and header == f"projects.{json.dumps(str(project))}")


def apply(scope: str, vault: Path | None, *, install_: bool, dry_run: bool = False, command: str | None = None,
          home: Path | None = None, project: Path | None = None,
          env: Mapping[str, str] | None = None) -> list[install.Change]:
    """Install (vault given) or uninstall for a scope; both files are read and checked before either is written."""
    env = os.environ if env is None else env
    project = (project or Path.cwd()).resolve() if scope == "project" else None
    hooks_file, config_file = files(scope, env, home=home, project=project)
    for folder in {hooks_file.parent, config_file.parent}:
        real_folder(folder)
    if install_:
        vault = install.vault_root(vault)
    command = command or install.default_command()
    h_data, h_text = install.load(hooks_file)
    c_text = _read(config_file)
    rest, block = split(c_text or "")
    user = _parse(config_file, rest)
    if install_ and vault is not None:
        if install.SERVER_NAME in _sub(user, "mcp_servers"):
            raise ConfigError(f"{config_file} already has [{SERVER_TABLE}] of its own; remove it (or rename it) "
                              "first — nothing was changed")
        h_new = install.with_hooks(h_data, command, vault, CODEX)
    else:
        h_new = install.strip(h_data)[0]
    tables = {h: t for h, t in block.items() if not _mine(h, hooks_file, project) and h != SERVER_TABLE}
    if install_ and vault is not None:
        tables |= server_tables(command, vault) | owned_tables(hooks_file, h_new.get("hooks") or {}, project, user)
    elif tables and SERVER_TABLE in block:  # another scope still runs the hooks: its MCP server stays
        tables[SERVER_TABLE] = block[SERVER_TABLE]
    c_new = joined(rest, tables)
    if c_new != (c_text or ""):
        _parse(config_file, c_new)  # e.g. a `hooks` of the user's that is no table: an error, nothing written
    changes = [install.plan(hooks_file, h_data, h_text, h_new),
               install.text_plan(config_file, c_text, c_new, removed=c_text is not None and not c_new)]
    if not dry_run:
        for change, text in ((changes[0], install.dump(h_new, install.style_of(h_text, h_data))), (changes[1], c_new)):
            if change.removed:
                Path(change.target or change.path).unlink()
            elif change.changed:
                install.write(Path(change.path), text)
    return changes


def _read(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; nothing was changed") from exc


def installed(vault: Path, env: Mapping[str, str], *, home: Path | None = None,
              project: Path | None = None) -> Iterator[str]:
    """A line for each scope whose hooks.json runs vault-cortex (for `vault-cortex status`)."""
    for scope in ("user", "project"):
        hooks_file, config_file = files(scope, env, home=home, project=project)
        try:
            data, _ = install.load(hooks_file)
            rest, block = split(_read(config_file) or "")
        except ConfigError:
            yield f"{scope}: cannot read {hooks_file} or {config_file}"
            continue
        ours = hook_trust(hooks_file, data.get("hooks") or {}, install.is_ours)
        if not ours:
            continue
        trusted = sum(1 for k in ours if f"hooks.state.{json.dumps(k)}" in block)
        mcp = "MCP server" if SERVER_TABLE in block else "no MCP server"
        on = "this vault" if str(vault.resolve()) in json.dumps(data) else "another vault"
        yield f"{scope}: {mcp}, hooks on {len(ours)} events for {on}, {trusted} trusted ({hooks_file})"
