"""The library's commands (init, sync, recall, status, doctor, verify and the groups in cli/identity, cli/sleep and
cli/notes) and the parser they share: a thin adapter over `Cortex`.

`build_parser(*groups)` builds the whole command line from command groups, each a function given `add`;
adapters above the library add theirs (the server's serve, mcp, hook, install). The one `vault-cortex` entry
point is `server/cli.py:main`, which passes the server's group.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from vault_cortex import __version__
from vault_cortex.cli.identity import add_identity_commands
from vault_cortex.cli.notes import add_note_commands, filter_args, filter_fields, filters_from
from vault_cortex.cli.output import emit, indexing_progress
from vault_cortex.cli.sleep import add_sleep_commands
from vault_cortex.cortex import Cortex
from vault_cortex.errors import VaultCortexError
from vault_cortex.files.activity import acting_as
from vault_cortex.files.adopt import adopt_vault
from vault_cortex.files.vault import init_vault, is_vault
from vault_cortex.index.dbfile import is_corruption
from vault_cortex.index.doctor import Doctor
from vault_cortex.index.location import INDEX_DIR_ENV
from vault_cortex.index.progress import SyncReport
from vault_cortex.recall.request import RecallRequest
from vault_cortex.recall.scored import Recall

log = logging.getLogger("vault_cortex")
CLI_CLIENT = "cli"  # the activity log's client for everything a command does


def vault_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vault", default=os.environ.get("VAULT_CORTEX_VAULT", "."),
                   help="the vault folder (default: $VAULT_CORTEX_VAULT or the current folder)")
    index_dir_arg(p)


def index_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index-dir", type=Path, default=None, metavar="DIR",
                   help=f"keep the index in DIR, not in the vault's .cortex/index (default: ${INDEX_DIR_ENV}; a "
                        "read-only vault's index goes to the user cache folder)")


def _print_sync(report: SyncReport) -> None:
    print(
        f"synced {report.notes} notes in {report.seconds:.2f}s: {report.added} added, {report.updated} updated, "
        f"{report.renamed} renamed, {report.deleted} deleted, {report.unchanged} unchanged"
    )
    print(
        f"  chunks: {report.chunks_embedded} embedded, {report.chunks_cached} from cache; "
        f"noise blocks left out: {report.noise_blocks}; skipped files: {report.skipped}; "
        f"parse problems: {report.problems}"
    )
    if report.skipped or report.problems:
        print("  run `vault-cortex doctor` to see the skipped files and problems")


def _print_recall(result: Recall) -> None:
    if not result.hits:
        print(f"nothing found for {result.query!r}")
        return
    for n, hit in enumerate(result.hits, 1):
        where = f" › {hit.heading}" if hit.heading else ""
        print(f"{n:>2}. {hit.score:.3f}  {hit.path}{where}  [{hit.region}]")
        print(f"    why: {hit.reason}")
        print(f"    {hit.snippet}")
    print(f"({len(result.hits)} results, mode {result.mode}, {result.took_ms:.0f} ms)")
    if result.indexing is not None:
        print(f"(still indexing, phase {result.indexing.phase}: {result.indexing.done} of {result.indexing.total}; "
              "the answer comes from what is indexed so far)")


def _print_doctor(d: Doctor) -> None:
    def section(title: str, rows: Sequence[str]) -> None:
        print(f"{title}: {len(rows)}")
        for row in rows[:200]:
            print(f"  {row}")
        if len(rows) > 200:
            print(f"  … and {len(rows) - 200} more")

    section("parse problems", [f"{p}: {why}" for p, why in d.problems])
    section("skipped files", [f"{s.path}: {s.reason}" for s in d.skipped])
    section("dangling links", [f"{ln.src}:{ln.line} → [[{ln.target}]] ({ln.rel})" for ln in d.dangling])
    section("ambiguous links", [
        f"{ln.src}:{ln.line} → [[{ln.target}]] chose {ln.dst}, also {', '.join(ln.ambiguous)}"
        for ln in d.ambiguous])
    section("index/file drift", d.drift)
    if d.drift:
        print("run `vault-cortex sync` to bring the index up to date")
    if d.activity_conflicts:
        section("activity log conflicts", d.activity_conflicts)


def cmd_init(args: argparse.Namespace) -> int:
    """An empty or missing folder gets the starter vault; a folder of notes is adopted (only .cortex/ added)."""
    dest = Path(args.dir).expanduser()
    if dest.is_dir() and any(dest.iterdir()) and not is_vault(dest):
        written = adopt_vault(dest)
        print(f"adopted {dest} as a vault: added {', '.join(written)}; no note was written")
    else:
        init_vault(dest)
        print(f"created a vault at {dest}")
    print(f"next: vault-cortex serve --vault {dest}")
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        report = cx.sync(progress=indexing_progress(quiet=args.quiet), contents=args.full)
    return emit(report, args.json, _print_sync)


def cmd_recall(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        if not args.no_sync:
            cx.sync(indexing_progress(quiet=args.quiet))
        result = cx.recall(recall_request(args))
    return emit(result, args.json, _print_recalled)


def recall_request(args: argparse.Namespace) -> RecallRequest:
    """The request `vault-cortex recall` makes of its arguments (the filter flags: `filter_args`)."""
    return RecallRequest(query=args.query, k=args.k, mode=args.mode, budget_tokens=args.budget,
                         include_archive=args.include_archive, **filter_fields(args))


def _print_recalled(result: Recall) -> None:
    """The packed context when a budget was asked for, else the hits."""
    if result.context is not None:
        print(result.context.markdown, end="")
    else:
        _print_recall(result)


def cmd_doctor(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        report = cx.doctor()
        graph = cx.graph_health() if args.graph else None
    if args.json:
        out = msgspec.to_builtins(report)
        if graph is not None:
            out["graph"] = msgspec.to_builtins(graph)
        print(msgspec.json.encode(out).decode())
        return 0
    _print_doctor(report)
    if graph is not None:
        print(f"graph: {graph.notes} notes, {graph.edges} edges, {graph.components} components "
              f"(largest {graph.largest_component})")
        print(f"hubs: {len(graph.hubs)}")
        for hub in graph.hubs:
            print(f"  {hub.path} ({hub.degree} links)")
        print(f"islands (no links in or out): {len(graph.islands)}")
        for path in graph.islands[:100]:
            print(f"  {path}")
        print(f"bridges (links whose removal splits the graph): {len(graph.bridges)}")
        for a, b in graph.bridges[:100]:
            print(f"  {a} — {b}")
        print(f"articulation points (notes whose removal splits the graph): {len(graph.articulation_points)}")
        for path in graph.articulation_points[:100]:
            print(f"  {path}")
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        if not args.no_sync:
            cx.sync(indexing_progress(quiet=args.quiet))
        ctx = cx.context(task=args.task, project=args.project, active_note=args.note, recent=args.recent or None,
                         budget_tokens=args.budget, mode=args.mode, filters=filters_from(args))
    if args.format == "json":
        print(msgspec.json.encode(ctx).decode())
    else:
        print(ctx.markdown, end="")
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    text = args.text if args.text != "-" else sys.stdin.read()
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        doc = cx.remember(text, title=args.title, region=args.region, tags=args.tag or None,
                          importance=args.importance, project=args.project)
    print(f"remembered as {doc.path}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        result = cx.verify()
    if args.json:
        print(msgspec.json.encode(result).decode())
    elif result.ok:
        print(f"ok: a rebuild from the files matches the live index ({result.seconds:.1f}s)")
    else:
        print(f"the live index differs from a rebuild ({len(result.differences)} differences):")
        for line in result.differences:
            print(f"  {line}")
        print("delete .cortex/index/index.db and run `vault-cortex sync` to rebuild (the cache is kept)")
    return 0 if result.ok else 1


class AddCommand(Protocol):
    """Register one command: its name, the function that runs it (returns the exit code) and its help."""

    def __call__(self, name: str, fn: Callable[[argparse.Namespace], int], help: str, *,
                 description: str | None = None) -> argparse.ArgumentParser: ...


CommandGroup = Callable[[AddCommand], None]


def build_parser(*groups: CommandGroup) -> argparse.ArgumentParser:
    """The command line: the library's commands, then each group an adapter adds."""
    parser = argparse.ArgumentParser(
        prog="vault-cortex",
        description="Long-term memory kept as a markdown vault: index it, recall from it, consolidate it, serve it.",
        epilog="Docs: README.md and docs/cli.md. The vault defaults to $VAULT_CORTEX_VAULT, else the current folder.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more (never note bodies)")
    parser.add_argument("-V", "--version", action="version", version=f"vault-cortex {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str, *,
            description: str | None = None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=description or help)
        p.set_defaults(fn=fn)
        return p

    p = add("init", cmd_init, "start a vault: the starter vault in an empty folder, or adopt a folder of notes",
            description="In a missing or empty folder, copy the starter vault. In a folder of notes (an Obsidian "
                        "vault, say), adopt it: add .cortex/ (settings, and git rules that keep the index, token "
                        "and other machine-local files out of git) and write nothing else. Never overwrites.")
    p.add_argument("dir", help="the folder: missing or empty for a new vault, or your notes' folder to adopt")

    p = add("sync", cmd_sync, "bring the index up to date with the files")
    vault_arg(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--full", action="store_true",
                   help="read and hash every note, not only those whose size or time changed (after cp -p, rsync "
                        "-t, tar, or on a file system with coarse timestamps)")

    p = add("recall", cmd_recall, "find the notes that answer a query")
    vault_arg(p)
    p.add_argument("query")
    p.add_argument("-k", "--k", type=int, default=None, help="how many notes (default: recall.k)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--mode", default=None, help="a ranking mode from config.toml (default: balanced)")
    p.add_argument("--budget", type=int, default=None, metavar="TOKENS",
                   help="print the token-budgeted context block (markdown) instead of the list")
    p.add_argument("--include-archive", action="store_true", help="also search notes in archive/")
    p.add_argument("--no-sync", action="store_true", help="skip the incremental sync before recalling")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress while the sync before it indexes")
    filter_args(p)

    p = add("context", cmd_context, "session-start context for a task: pinned, habits, questions, handoff, recall")
    vault_arg(p)
    p.add_argument("--task", default=None, help="what you are about to do")
    p.add_argument("--project", default=None, help="the project's name (notes with `project:` set to it)")
    p.add_argument("--note", default=None, help="the active note's vault path")
    p.add_argument("--recent", action="append", help="a recently opened note's path (repeatable)")
    p.add_argument("--budget", type=int, default=None, metavar="TOKENS", help="default: recall.budget_tokens")
    p.add_argument("--mode", default=None)
    p.add_argument("--format", choices=("md", "json"), default="md")
    p.add_argument("--no-sync", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress while the sync before it indexes")
    filter_args(p, project=False)

    p = add("remember", cmd_remember, "write a new memory note (never overwrites) and index it")
    vault_arg(p)
    p.add_argument("text", help="the memory's text, or - to read it from stdin")
    p.add_argument("--title", default=None)
    p.add_argument("--region", default=None, help="default: regions.default (short_term)")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--importance", type=float, default=None)
    p.add_argument("--project", default=None)

    p = add("doctor", cmd_doctor, "list parse problems, skipped files, dangling/ambiguous links, drift")
    vault_arg(p)
    p.add_argument("--graph", action="store_true", help="also show hubs, islands, bridges, articulation points")
    p.add_argument("--json", action="store_true")

    p = add("verify", cmd_verify, "rebuild the index in a temporary folder and compare it with the live one")
    vault_arg(p)
    p.add_argument("--json", action="store_true")

    for group in (add_identity_commands, add_sleep_commands, add_note_commands, *groups):
        group(add)
    return parser


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse argv with the given parser and run the chosen command, mapping our errors to exit 1. What a command
    logs is the CLI's (`client` "cli"), bound here once for every command."""
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    with acting_as(CLI_CLIENT):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        try:
            return int(args.fn(args))
        except Exception as exc:
            if not is_corruption(exc) or not getattr(args, "vault", None):
                raise
            # The index is derived data: set the damaged one aside, rebuild it, and run the command again.
            with Cortex.open(args.vault, index_dir=getattr(args, "index_dir", None)) as cx:
                if cx.index.recovered is None:
                    cx.index.recover(f"{type(exc).__name__}: {exc}")
                cx.sync()
            return int(args.fn(args))
    except VaultCortexError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `vault-cortex doctor | head -3`: the reader left; stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by a closed pipe

