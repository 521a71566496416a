"""The `vault-cortex install` and `uninstall` commands: an agent client's settings (Claude Code, Codex CLI, Gemini
CLI) or the Obsidian plugin, what each install says it did, and the vault indexed for the first session."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from server import clients
from server.serve_lock import recorded_url

if TYPE_CHECKING:
    from server.install import Change


def cmd_install(args: argparse.Namespace) -> int:
    """Write (or with uninstall, remove) the MCP server and hook entries in Claude Code's settings."""
    from server import install

    if args.agent == "obsidian":
        return cmd_obsidian(args)
    if args.agent == "gemini":
        return cmd_gemini(args)
    if args.agent == "codex":
        return cmd_codex(args)

    install_, vault, project, transport = _install_args(args)
    changes = install.apply(args.scope, vault, install=install_, dry_run=args.dry_run, command=args.command,
                            project=project, transport=transport)
    _report(changes, args.dry_run)
    if install_ and not args.dry_run:
        events = ", ".join(install.HOOKS)
        print(f"Claude Code ({args.scope} scope) now runs vault-cortex on {vault}: the MCP server "
              f"'{install.SERVER_NAME}' ({transport}) and the hooks {events}. Restart Claude Code to load them.",
              file=sys.stderr)
        if vault is not None:
            print(install.capture_notice(vault.resolve()), file=sys.stderr)
        if transport == "http" and vault is not None:
            print(install.http_notice(changes[1], vault), file=sys.stderr)
        if vault is not None and not args.no_index:
            return _index_for_the_first_session(vault)
    return 0


def _install_args(args: argparse.Namespace) -> tuple[bool, Path | None, Path | None, str]:
    """An agent install's arguments: installing (else uninstalling), the vault, the project folder, the transport."""
    install_ = args.fn is cmd_install
    vault = Path(args.vault).expanduser() if install_ else None
    project = Path(args.project).expanduser().resolve() if args.project else None
    return install_, vault, project, getattr(args, "transport", "stdio")


def _report(changes: Sequence[Change], dry_run: bool) -> None:
    """What an install or uninstall changed (or with dry_run would change): each file's state, and the diffs."""
    for change in changes:
        if dry_run and change.diff:
            print(change.diff, end="")
        state = ("deleted (left empty)" if change.removed else "created" if change.created
                 else "updated" if change.changed else "unchanged")
        if change.target and change.changed:
            state += f" (a link: {'its target ' if change.removed else 'written to '}{change.target}"
            state += " deleted, the link kept)" if change.removed else ")"
        print(f"{change.path}: {'would be ' if dry_run and change.changed else ''}{state}", file=sys.stderr)
    if dry_run:
        print("dry run: nothing written", file=sys.stderr)


def cmd_gemini(args: argparse.Namespace) -> int:
    """Write (or with uninstall, remove) the MCP server and hook entries in Gemini CLI's settings.json."""
    from server import install, install_gemini

    install_, vault, project, transport = _install_args(args)
    change = install_gemini.apply(args.scope, vault, install_=install_, dry_run=args.dry_run, command=args.command,
                                  project=project, transport=transport)
    _report([change], args.dry_run)
    if install_ and not args.dry_run and vault is not None:
        vault = vault.resolve()
        events = ", ".join(install_gemini.HOOKS)
        print(f"{install_gemini.TITLE} ({args.scope} scope) now runs vault-cortex on {vault}: the MCP server "
              f"'{install.SERVER_NAME}' ({transport}) and the hooks {events}. Start a new Gemini CLI "
              "session to load them.", file=sys.stderr)
        print(install.capture_notice(vault), file=sys.stderr)
        _transcripts_allowed(vault, clients.GEMINI)
        if transport == "http":
            print(install.http_notice(change, vault, install_gemini.TITLE), file=sys.stderr)
        if not args.no_index:
            return _index_for_the_first_session(vault)
    return 0


def cmd_codex(args: argparse.Namespace) -> int:
    """Write (or with uninstall, remove) the hooks, their trust and the MCP server in Codex CLI's files."""
    from server import install, install_codex

    if getattr(args, "transport", "stdio") != "stdio":
        print("error: codex: the MCP server is the stdio one Codex starts (no --transport http)", file=sys.stderr)
        return 2
    installing = args.fn is cmd_install
    vault = Path(args.vault).expanduser() if installing else None
    project = Path(args.project).expanduser() if args.project else None
    changes = install_codex.apply(args.scope, vault, install_=installing, dry_run=args.dry_run, command=args.command,
                                  project=project)
    _report(changes, args.dry_run)
    if installing and not args.dry_run and vault is not None:
        print(f"Codex CLI ({args.scope} scope) now runs vault-cortex on {vault}: the MCP server "
              f"'{install.SERVER_NAME}' and the hooks {', '.join(clients.CODEX.hooks)}, trusted in "
              f"{changes[1].path}. Codex loads them when it next starts.", file=sys.stderr)
        _transcripts_allowed(vault, clients.CODEX)
        if not args.no_index:
            return _index_for_the_first_session(vault)
    return 0


def _transcripts_allowed(vault: Path, agent: clients.Client) -> None:
    """Say so when the vault's `[hooks] transcript_dirs` leaves out the client's transcript folder (a config from an
    older starter vault names Claude Code's only): no capture, and the second look without its prompt, until it names
    it."""
    from vault_cortex.config import load_settings

    folder = clients.transcript_folders([agent.transcript_folder(os.environ)], os.environ)
    if folder and folder[0] not in clients.transcript_folders(load_settings(vault).hooks.transcript_dirs, os.environ):
        print(f"note: {vault}/.cortex/config.toml's [hooks] transcript_dirs does not name {folder[0]}: "
              f"{agent.title} sessions are not captured until it does "
              f'(add "~/{agent.dot_folder}/{agent.transcripts}")', file=sys.stderr)


def _index_for_the_first_session(vault: Path) -> int:
    """Index the vault now, as `sync` does: a hook opens the index but never builds it (it must answer within a
    second), so on a vault never indexed the first session would get no start context and no push. Not while a
    `serve` runs for the vault (its watcher keeps the index); a vault already indexed costs a scan."""
    from vault_cortex.cli.output import ProgressBar
    from vault_cortex.cortex import Cortex
    from vault_cortex.errors import VaultCortexError

    if recorded_url(vault) is not None:
        return 0
    print(f"indexing {vault} for the first session (Ctrl-C is safe: `serve`, the MCP server or `vault-cortex sync` "
          "finishes it)", file=sys.stderr)
    try:
        with Cortex.open(vault) as cx:
            report = cx.sync(ProgressBar())  # long on a big vault: a bar on a terminal, a line a quarter otherwise
    except VaultCortexError as exc:  # the settings are written: say so, and what is left to do
        print(f"error: installed, but the vault could not be indexed: {exc}\n"
              f"the hooks find nothing until it is: fix that and run `vault-cortex sync --vault {vault}`",
              file=sys.stderr)
        return 1
    print(f"indexed: {report.notes} notes in {report.seconds:.1f} s", file=sys.stderr)
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    return cmd_install(args)


def cmd_obsidian(args: argparse.Namespace) -> int:
    """Put the built plugin and its settings in the vault's .obsidian/plugins/vault-cortex/ (or remove them)."""
    from server import obsidian
    from vault_cortex.errors import UnsafePath

    vault = Path(args.vault).expanduser()
    installing = args.fn is cmd_install
    try:
        steps = (obsidian.install(vault, url=args.url, dry_run=args.dry_run) if installing
                 else obsidian.uninstall(vault, dry_run=args.dry_run))
    except UnsafePath as exc:  # a plugin folder that is a link or leads out of the vault: refused, as bad input is
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verbs = {"create": "created", "update": "updated", "unchanged": "unchanged", "remove": "removed"}
    for step in steps:
        state = f"would be {verbs[step.action]}" if args.dry_run and step.action != "unchanged" else verbs[step.action]
        print(f"{step.path}: {state}", file=sys.stderr)
        if args.dry_run and step.shown and step.action != "unchanged":
            print(step.shown, end="", flush=True)  # in order with the lines on stderr, through a pipe too
    if args.dry_run:
        print("dry run: nothing written", file=sys.stderr)
    elif installing:
        print(f"The Obsidian plugin is in {vault / obsidian.FOLDER}, set to reach the server with the vault's token "
              "(data.json, kept out of git). In Obsidian: Settings → Community plugins → turn them on if asked, "
              "then enable \"Vault Cortex\". Keep `vault-cortex serve` running.", file=sys.stderr)
    elif not steps:
        print(f"the Obsidian plugin is not installed in {vault}: nothing to remove", file=sys.stderr)
    return 0
