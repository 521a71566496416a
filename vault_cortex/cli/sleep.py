"""The `vault-cortex` commands for sleep (consolidation), imports, and flushing the activity log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.importers import imports
from vault_cortex.importers.transcript import Imported
from vault_cortex.sleep import cycle as sleep

if TYPE_CHECKING:
    from vault_cortex.cli.main import AddCommand


def _print_apply(report: sleep.ApplyReport) -> None:
    verb = "rolled back" if report.rolled_back else "applied"
    steps = report.undone if report.rolled_back else report.applied
    print(f"{verb} plan {report.plan}: {len(steps)} operations, {len(report.skipped)} skipped")
    for s in report.skipped:
        print(f"  skipped step {s.step} ({s.path}): {s.reason}")
    if report.commit:
        print(f"committed {report.commit}" + (f" as {report.committed_as} (git has no identity for this vault: set "
                                              "user.name and user.email)" if report.committed_as else ""))


ACTIONS = ("plan", "apply", "resume", "rollback")


def _saved(root: Path, name: str) -> sleep.Plan:
    """A plan named by its id (as `sleep` prints it) or by its file."""
    path = sleep.plan_file(root, name) if "/" not in name and not name.endswith(".json") else Path(name)
    if not path.is_file():
        raise InvalidRequest(f"no saved sleep plan {name!r}: run `vault-cortex sleep` to plan again (a plan with "
                             "nothing to do is not saved, and a rollback removes the plan it undid)")
    return sleep.load_plan(path)


def _action(args: argparse.Namespace) -> str:
    """The action asked for, by its word or by the older flags (--apply PLAN, --resume, --rollback)."""
    if args.apply is not None:
        args.plan = args.apply
        return "apply"
    if args.dry_run:
        return "plan"
    if args.resume or args.rollback:
        return "resume" if args.resume else "rollback"
    if args.action == "plan" and args.plan is not None:
        raise InvalidRequest(f"`sleep plan` takes no PLAN (got {args.plan!r}); to apply it: `vault-cortex sleep "
                             f"apply {args.plan}`")
    return str(args.action)


def cmd_sleep(args: argparse.Namespace) -> int:
    """`sleep` (or `sleep plan`) plans and changes no note; `sleep apply [PLAN]`, `resume` and `rollback` write."""
    action = _action(args)
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        if action == "rollback":
            report = sleep.rollback(cx.vault)
        elif action == "resume":
            report = sleep.resume(cx.vault, commit=args.commit)
        else:
            plan = _saved(cx.root, args.plan) if args.plan else cx.sleep_plan(args.mode)
            if not args.plan:
                print(msgspec.json.encode(plan).decode() if args.json else sleep.plan_markdown(plan), end="")
            if action == "plan" or not plan.ops:
                if plan.ops and action == "plan":
                    print(f"plan saved to {sleep.plan_file(cx.root, plan.id).relative_to(cx.root)}; nothing was "
                          f"changed. To apply it: vault-cortex sleep apply {plan.id}", file=sys.stderr)
                elif not plan.ops:
                    print("nothing to do: no note would change", file=sys.stderr)
                return 0
            report = sleep.apply(cx.vault, plan, commit=args.commit)
    if args.json and (args.plan or action != "apply"):
        print(msgspec.json.encode(report).decode())
    else:
        _print_apply(report)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    files = list(args.file)
    if files[0] == "transcript" and len(files) > 1 and not Path("transcript").exists():
        files = files[1:]  # the old form, `vault-cortex import transcript FILE`
    if args.session and len(files) > 1:
        raise InvalidRequest("--session names one transcript: import one file at a time with it")
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        for file in files:
            _print_import(file, cx.import_file(file, args.format, args.session))
    return 0


def _print_import(file: str, done: Imported) -> None:
    held = ", ".join(f"{k} {v}" for k, v in done.counts.items() if v or k in ("exchanges", "entities"))
    fmt = f"claude-code, {done.format}" if done.format in ("jsonl", "markdown") else done.format
    what = f"session {done.session!r} ({held})" if done.session else held
    tools = f"; tool calls {done.tool_calls}, each kept as one line" if done.tool_calls else ""
    print(f"imported {file} ({fmt}): {what}{tools}")
    print(f"  notes: {len(done.created)} created, {len(done.updated)} updated, {len(done.unchanged)} already there, "
          f"{len(done.kept)} kept" + (" (edited since, or written by something else: left as they are)"
                                      if done.kept else ""))
    for label, paths in (("created", done.created), ("updated", done.updated), ("kept", done.kept)):
        for path in paths[:SHOW]:
            print(f"  {label}: {path}")
        if len(paths) > SHOW:
            print(f"  … and {len(paths) - SHOW} more {label}")


SHOW = 20  # notes listed per outcome; the counts above are complete


def cmd_activity(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault) as cx:
        waiting = cx.pending_activity()
        written = cx.flush_activity() if args.action == "flush" else []
    if args.json:
        print(msgspec.json.encode({"pending": 0 if written else waiting, "flushed": waiting if written else 0,
                                   "files": written}).decode())
    elif args.action == "flush":
        print(f"flushed {waiting} events into {', '.join(written)}" if written else "nothing to flush")
    else:
        print(f"{waiting} events wait in .cortex/pending-activity/ (machine-local, git-ignored); "
              "`vault-cortex activity flush` or the next sleep apply moves them into .cortex/activity/")
    return 0


def add_sleep_commands(add: AddCommand) -> None:
    """Register this module's commands on the main parser."""
    from vault_cortex.cli.main import vault_arg

    p = add("sleep", cmd_sleep, "consolidate: print and save a plan (no note changes); `sleep apply` applies it",
            description="Consolidate memory. `sleep` (or `sleep plan`) prints a plan, saves it under .cortex/sleep/ "
                        "and changes no note; `sleep apply PLAN` applies a saved plan exactly (journalled; "
                        "`sleep apply` alone plans and applies at once); `sleep resume` finishes an interrupted "
                        "sleep; `sleep rollback` undoes the last one.")
    vault_arg(p)
    p.add_argument("action", nargs="?", choices=ACTIONS, default="plan",
                   help="plan (default: changes nothing), apply, resume or rollback")
    p.add_argument("plan", nargs="?", default=None, metavar="PLAN",
                   help="apply: the plan's id as `sleep` printed it (or its .cortex/sleep/plan-*.json file)")
    p.add_argument("--mode", choices=sleep.MODES, default=sleep.DEFAULT_MODE,
                   help=f"full: every phase; light: promote and wire; save: handoff only (default: "
                        f"{sleep.DEFAULT_MODE})")
    p.add_argument("--commit", action="store_true", help="apply, resume: git-commit the files the sleep changed")
    p.add_argument("--json", action="store_true")
    # The older spellings of the actions, kept working for scripts: --dry-run is what `sleep` does now.
    p.add_argument("--dry-run", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--apply", default=None, metavar="PLAN", help=argparse.SUPPRESS)
    p.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--rollback", action="store_true", help=argparse.SUPPRESS)

    p = add("activity", cmd_activity, "what reads logged and is not in the versioned activity log yet; flush it",
            description="Recalls and reads log to .cortex/pending-activity/ (machine-local, git-ignored), so reading "
                        "leaves `git status` clean; ranking uses those events at once. `flush` moves them into the "
                        "versioned log, .cortex/activity/ (a sleep apply does it too).")
    vault_arg(p)
    p.add_argument("action", nargs="?", choices=("status", "flush"), default="status",
                   help="status: count the pending events (default); flush: move them into the versioned log")
    p.add_argument("--json", action="store_true")

    p = add("import", cmd_import, "import chats (Claude Code, ChatGPT) as raw notes, or an MCP memory graph as notes")
    vault_arg(p)
    p.add_argument("file", nargs="+", metavar="FILE",
                   help="a Claude Code JSONL transcript or markdown chat, ChatGPT's conversations.json, or the MCP "
                        "memory server's memory.json (several files: each is imported)")
    p.add_argument("--format", default=None, choices=imports.FORMATS,
                   help="the file's format (default: detected from its first bytes)")
    p.add_argument("--session", default=None, help="claude-code: the session's name (default: the file's name)")
