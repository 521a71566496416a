"""The `vault-cortex` commands that read, edit, move and archive notes, list recent activity, and the filter
flags shared by `recall` and `context`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from vault_cortex.cli.output import emit, indexing_progress
from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.links import unwrap
from vault_cortex.files.sections import OPERATIONS, EditOp
from vault_cortex.files.vault import NoteDoc
from vault_cortex.index.recent import KINDS, Recent
from vault_cortex.notes import Moved
from vault_cortex.recall.filters import Filters

if TYPE_CHECKING:
    from vault_cortex.cli.main import AddCommand


def filter_args(p: argparse.ArgumentParser, *, project: bool = True) -> None:
    """--tag, --region, --project, --created-after, --created-before, --modified-after, --path-prefix, --captures."""
    g = p.add_argument_group("filters (applied inside the search; every one given must hold)")
    g.add_argument("--tag", dest="filter_tags", action="append", metavar="TAG",
                   help="only notes with this tag; nested: `a` matches `a/b` (repeatable: all must match)")
    g.add_argument("--region", dest="filter_regions", action="append", metavar="REGION",
                   help="only notes of this region (repeatable: any)")
    if project:
        g.add_argument("--project", dest="filter_project", default=None, help="only notes of this project")
    for name, what in (("created-after", "created since"), ("created-before", "created before"),
                       ("modified-after", "whose file changed since")):
        g.add_argument(f"--{name}", dest=name.replace("-", "_"), default=None, metavar="WHEN",
                       help=f"only notes {what} WHEN: an ISO date (2026-11-01) or an age (7d, 12h, 2w)")
    g.add_argument("--path-prefix", default=None, metavar="PREFIX", help="only notes under this path")
    captures_arg(g)


def captures_arg(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--captures: whether captured sessions (notes of `layer: raw`) come back."""
    p.add_argument("--captures", default=None, metavar="exclude|include|only",
                   help="captured sessions (what was said, not what is true): exclude (the default) leaves them "
                        "out, include keeps them, only returns nothing else")


def filter_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The filter flags (`filter_args`) by the names `Filters` and `RecallRequest` give them."""
    return {"tags": args.filter_tags, "regions": args.filter_regions, "project": getattr(args, "filter_project", None),
            "created_after": args.created_after, "created_before": args.created_before,
            "modified_after": args.modified_after, "path_prefix": args.path_prefix, "captures": args.captures}


def filters_from(args: argparse.Namespace) -> Filters:
    return Filters.build(**filter_fields(args))


def _text(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


def cmd_read(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        doc = cx.open_note(args.note)
    return emit(doc, args.json, _print_note)


def _print_note(doc: NoteDoc) -> None:
    sys.stdout.write(doc.content)
    print(f"\n-- {doc.path} (etag {doc.etag})", file=sys.stderr)


def _value(raw: str | None) -> str | float | bool | list[str] | None:
    """A property value from the command line: JSON (1, true, null, ["a"]) when it parses, else text."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return list(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise InvalidRequest(f"a property value is text, a number, true/false, null or a list of text, not {raw!r}")


def cmd_edit(args: argparse.Namespace) -> int:
    op = args.operation
    if op in ("append", "prepend", "replace_section") and args.content is None:
        raise InvalidRequest(f"{op} needs --content TEXT (or --content - to read stdin)")
    if args.remove:
        if op != "set_property":
            raise InvalidRequest("--remove goes with set_property (or use the remove_property operation)")
        op = "remove_property"
    edit = EditOp(op=op, content=_text(args.content) if args.content is not None else None, heading=args.heading,
                  find=args.find, replace=args.replace, count=args.count, key=args.key,
                  value=None if op == "remove_property" else _value(args.value))
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        result = cx.edit_note(args.note, edit, etag=args.etag)
    return emit(result, args.json, lambda r: print(f"{r.op}: {r.path}" + ("" if r.changed else " (no change)")
                                                   + f" (etag {r.etag})"))


def _print_moved(m: Moved) -> None:
    print(f"moved {m.path} → {m.dest}")
    for r in m.relinked:
        print(f"  {r.path}:{r.line}: {r.old.strip()}  →  {r.new.strip()}")
    n = len(m.relinked)
    print(f"({n} link line{'' if n == 1 else 's'} rewritten)")


def cmd_move(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        moved = cx.move_note(args.note, args.dest, etag=args.etag)
    return emit(moved, args.json, _print_moved)


def cmd_archive(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        moved = cx.archive_note(args.note, etag=args.etag)
    return emit(moved, args.json, _print_moved)


def _print_recent(r: Recent) -> None:
    if not r.groups:
        print(f"nothing {', '.join(r.kinds)} in the last {r.days} days")
        return
    for day in r.groups:
        print(day.date)
        for i in day.items:
            times = f" ×{i.count}" if i.count > 1 else ""
            detail = f"  ({i.detail})" if i.detail else ""
            print(f"  {i.last.astimezone():%H:%M}  {i.kind:<8} {i.path}{times}{detail}")


def cmd_recent(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        result = cx.recent(days=args.days, kinds=args.kind)
    return emit(result, args.json, _print_recent)


def cmd_related(args: argparse.Namespace) -> int:
    from vault_cortex.cli.main import _print_recall

    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        result = cx.related(cx.resolve(args.note), k=args.k, mode=args.mode, captures=args.captures)
    return emit(result, args.json, _print_recall)


def cmd_link(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        doc = cx.link(cx.resolve(args.src), args.rel, args.dst)
    print(f"{doc.path}: {args.rel} → [[{unwrap(args.dst)}]]")
    return 0


def cmd_reinforce(args: argparse.Namespace) -> int:
    from vault_cortex.cli.identity import _print_weight

    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        change = cx.reinforce(cx.resolve(args.habit), context=args.context)
    return emit(change, args.json, _print_weight)


def add_note_commands(add: AddCommand) -> None:
    from vault_cortex.cli.main import vault_arg

    p = add("related", cmd_related, "memories related to a note by its content, leaving out what it links")
    vault_arg(p)
    p.add_argument("note", help="a vault path or a note name")
    p.add_argument("-k", "--k", type=int, default=None)
    p.add_argument("--mode", default=None)
    captures_arg(p)
    p.add_argument("--json", action="store_true")

    p = add("link", cmd_link, "add a typed relation from one note to another (one frontmatter line)")
    vault_arg(p)
    p.add_argument("src", help="the source note (path or name)")
    p.add_argument("rel", help="the relation: supports, contradicts, leads_to, depends_on, ...")
    p.add_argument("dst", help="the target note's name or path")

    p = add("reinforce", cmd_reinforce, "a habit was followed: raise its weight (one line) and log it")
    vault_arg(p)
    p.add_argument("habit", help="the habit note (path or name)")
    p.add_argument("--context", default=None, help="what it was followed for")
    p.add_argument("--json", action="store_true")

    p = add("read", cmd_read, "print a note (by path or title, as a link resolves) and its etag")
    vault_arg(p)
    p.add_argument("note", help="a vault path or a note name")
    p.add_argument("--json", action="store_true", help="print {path, content, etag}")

    p = add("edit", cmd_edit, "one minimal edit of a note: append, prepend, replace_section, find_replace, "
                              "set_property, remove_property")
    vault_arg(p)
    p.add_argument("note", help="a vault path or a note name")
    p.add_argument("operation", choices=OPERATIONS)
    p.add_argument("--content", default=None, help="text to add or the section's new text (- reads stdin)")
    p.add_argument("--heading", default=None, help="replace_section: heading path, e.g. Setup/Install")
    p.add_argument("--find", default=None, help="find_replace: the exact text to find")
    p.add_argument("--replace", default=None, help="find_replace: its replacement")
    p.add_argument("--count", type=int, default=1, help="find_replace: how many times --find must occur")
    p.add_argument("--key", default=None, help="set_property, remove_property: the property")
    p.add_argument("--value", default=None, help="set_property: the value (JSON like 0.7, true, [\"a\"] or text)")
    p.add_argument("--remove", action="store_true", help="set_property --remove: the same as remove_property")
    p.add_argument("--etag", default=None, help="refuse the edit if the note changed since this etag")
    p.add_argument("--json", action="store_true")

    for name, fn, what in (("move", cmd_move, "move or rename a note, rewriting links to it as Obsidian does"),
                           ("archive", cmd_archive, "move a note to archive/ (never deleted)")):
        p = add(name, fn, what)
        vault_arg(p)
        p.add_argument("note", help="a vault path or a note name")
        if name == "move":
            p.add_argument("dest", help="the new vault path")
        p.add_argument("--etag", default=None, help="refuse if the note changed since this etag")
        p.add_argument("--json", action="store_true")

    p = add("recent", cmd_recent, "notes created, changed, recalled and opened lately, by day")
    vault_arg(p)
    p.add_argument("--days", type=int, default=7, help="how many days back (default 7)")
    p.add_argument("--kind", action="append", choices=KINDS, help="only this kind (repeatable)")
    p.add_argument("--json", action="store_true")
