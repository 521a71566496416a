"""The `vault-cortex` commands for habits, resonance and curiosity."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import msgspec

from vault_cortex.cli.output import emit, indexing_progress
from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.identity.curiosity import Curiosities
from vault_cortex.identity.habits import Habits
from vault_cortex.identity.resonance import DecayPlan, ResonanceReport, WeightChange

if TYPE_CHECKING:
    from vault_cortex.cli.main import AddCommand


def cmd_habits(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        result = cx.habits_for_context(args.context, tool=args.tool)
    return emit(result, args.json, _print_habits)


def _print_habits(result: Habits) -> None:
    for h in result.habits:
        print(f"{h.path} — {h.why} (weight {h.weight:.2f}, score {h.score:.2f})")
        print("".join(f"  {line}\n" for line in h.text.splitlines()), end="")
    n = len(result.habits)
    print(f"({n} habit{'' if n == 1 else 's'}, {result.tokens} tokens)" if n else "no habit matches this context")


def _print_weight(change: WeightChange) -> None:
    moved = f"{change.before:.3g} → {change.after:.3g}" if change.written else f"stays {change.after:.3g}"
    print(f"{change.path}: weight {moved} (baseline {change.baseline:.3g}; {change.reason})")


def cmd_resonance(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        if args.action == "touch":
            if not args.concept:
                raise InvalidRequest("name the concept to touch: vault-cortex resonance touch CONCEPT")
            out: msgspec.Struct = cx.touch(args.concept, by=args.by)
        elif args.action == "decay":
            out = cx.decay_resonance(dry_run=not args.apply)
        else:
            out = cx.resonance_report(days=args.days)
    return emit(out, args.json, _print_resonance)


def _print_resonance(out: msgspec.Struct) -> None:
    if isinstance(out, WeightChange):
        _print_weight(out)
    elif isinstance(out, DecayPlan):
        for change in out.changes:
            _print_weight(change)
        verb = "decayed" if out.applied else "would decay"
        print(f"{verb} {len(out.changes)} of {len(out.changes) + out.unchanged} concepts toward their baselines"
              + ("" if out.applied else "; run with --apply to write"))
    elif isinstance(out, ResonanceReport):
        print(f"claimed (baseline) vs actual use over the last {out.days} days")
        print(f"{'concept':<24} {'category':<12} claimed weight touches mentions actual   gap  verdict")
        for r in out.concepts:
            print(f"{r.name[:24]:<24} {r.category:<12} {r.claimed:>7.2f} {r.weight:>6.2f} {r.touches:>7} "
                  f"{r.mentions:>8} {r.actual:>6.2f} {r.gap:>+5.2f}  {r.verdict}")


def cmd_wonder(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        q = cx.wonder(args.question, context=args.context)
    print(f"{q.status} question: {q.path}" + (f" (answered by {q.answered_by})" if q.answered_by else ""))
    return 0


def cmd_curiosities(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        result = cx.list_curiosities(args.match)
    return emit(result, args.json, lambda r: _print_curiosities(r, matched=bool(args.match)))


def _print_curiosities(result: Curiosities, *, matched: bool) -> None:
    for q in result.items:
        score = f"{q.similarity:.2f}  " if q.similarity is not None else ""
        print(f"- {score}{q.question}  ({q.path})")
    found = f"{len(result.items)} match; " if matched else ""
    print(f"({found}{result.open} open question{'' if result.open == 1 else 's'})")


def cmd_explore(args: argparse.Namespace) -> int:
    with Cortex.open(args.vault, index_dir=args.index_dir) as cx:
        cx.sync(indexing_progress())
        done = cx.explore(args.question, args.answer)
    print(f"explored {done.question.path}: answered_by {done.question.answered_by}; "
          f"{done.answer} answers it")
    return 0


def add_identity_commands(add: AddCommand) -> None:
    """Register this module's commands on the main parser."""
    from vault_cortex.cli.main import vault_arg

    p = add("habits", cmd_habits, "habits that apply to a context or tool call, strongest first")
    vault_arg(p)
    p.add_argument("context", help="what you are about to do")
    p.add_argument("--tool", default=None, metavar="NAME", help="a tool call, e.g. Edit or 'Bash(pytest -q)'")
    p.add_argument("--json", action="store_true")

    p = add("resonance", cmd_resonance, "resonance: report claimed vs actual, touch a concept, decay weights")
    vault_arg(p)
    p.add_argument("action", nargs="?", choices=("report", "touch", "decay"), default="report")
    p.add_argument("concept", nargs="?", help="the concept to touch (name, alias or path)")
    p.add_argument("--by", default=None, metavar="NOTE", help="touch: the note that touched it")
    p.add_argument("--days", type=int, default=None, help="report: window in days (default: resonance.report_days)")
    p.add_argument("--apply", action="store_true", help="decay: write the weights (default: preview)")
    p.add_argument("--json", action="store_true")

    p = add("wonder", cmd_wonder, "write an open question to curiosities/")
    vault_arg(p)
    p.add_argument("question")
    p.add_argument("--context", default=None, help="what prompted it, written as the note's body")

    p = add("curiosities", cmd_curiosities, "list open questions, or those matching a text")
    vault_arg(p)
    p.add_argument("--match", default=None, metavar="TEXT")
    p.add_argument("--json", action="store_true")

    p = add("explore", cmd_explore, "close a question with the note that answers it (links both ways)")
    vault_arg(p)
    p.add_argument("question", help="the curiosity's vault path")
    p.add_argument("answer", help="the answering note's vault path")
