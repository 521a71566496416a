"""Habits, resonance and curiosity under /v1: thin handlers over the facade (sync calls run in a worker thread)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import get, post
from litestar.params import JSONBody, QueryParameter
from msgspec import Meta

from server.routes import CortexDep, NotePath
from vault_cortex.identity.curiosity import Curiosities, Curiosity, Explored
from vault_cortex.identity.habits import Habits
from vault_cortex.identity.resonance import DecayPlan, ResonanceReport, WeightChange
from vault_cortex.limits import MAX_QUERY_CHARS
from vault_cortex.recall.request import QueryText

MAX_TOOL_CHARS = 2000
Context = Annotated[str, Meta(max_length=MAX_QUERY_CHARS)]


class ReinforceBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    path: NotePath  # the habit's note, e.g. habits/Write the test first.md
    context: Context | None = None  # what it was followed for (logged with the feedback)


class TouchBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    concept: Annotated[str, Meta(min_length=1, max_length=300)]  # file name, alias or path of a resonance note
    by: NotePath | None = None  # the note that touched it, if any (logged)


class DecayBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    apply: bool = False  # False: preview only


class WonderBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    question: QueryText
    context: Context | None = None  # why it came up: the new note's body


class ExploreBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    path: NotePath  # the question, in curiosities/
    answer_path: NotePath  # the memory that answers it


@get("/habits", sync_to_thread=True)
def habits_for_context(
    cx: CortexDep,
    text: Annotated[str | None, QueryParameter(max_length=MAX_QUERY_CHARS,
                                               description="The context: a task, a prompt, a note's text.")] = None,
    tool: Annotated[str | None, QueryParameter(max_length=MAX_TOOL_CHARS,
                                               description="An agent's tool call, e.g. Bash(pytest -q) or Edit.")
                    ] = None,
) -> Habits:
    """Habits that apply to a context (trigger word, meaning) or a tool call (tool pattern), strongest first,
    within the vault's count and token caps; `markdown` is ready to inject. Give text, tool or both."""
    return cx.habits_for_context(text or "", tool=tool)


@post("/habits/reinforce", status_code=200, sync_to_thread=True)
def reinforce(cx: CortexDep, data: JSONBody[ReinforceBody]) -> WeightChange:
    """A habit was followed: raise its `weight` by 0.1 (one line) and log it."""
    return cx.reinforce(data.path, context=data.context)


@post("/resonance/touch", status_code=200, sync_to_thread=True)
def touch(cx: CortexDep, data: JSONBody[TouchBody]) -> WeightChange:
    """Touch a resonance concept (by name, alias or path): raise its `weight` by 0.1 and log it."""
    return cx.touch(data.concept, by=data.by)


@get("/resonance/report", sync_to_thread=True)
def resonance_report(
    cx: CortexDep,
    days: Annotated[int | None, QueryParameter(ge=1, le=36500, description="The window in days (default: the "
                                                                           "vault's resonance.report_days).")
                    ] = None,
) -> ResonanceReport:
    """Each concept's claimed value (baseline) beside its actual use (touches, mentions in recent notes)."""
    return cx.resonance_report(days=days)


@post("/resonance/decay", status_code=200, sync_to_thread=True)
def resonance_decay(cx: CortexDep, data: JSONBody[DecayBody]) -> DecayPlan:
    """Resonance weights pulled toward their baselines since each was last touched: a preview, or with
    `apply: true` written (one line per concept). A full sleep plans the same, with habits."""
    return cx.decay_resonance(dry_run=not data.apply)


@post("/curiosities", status_code=200, sync_to_thread=True)
def wonder(cx: CortexDep, data: JSONBody[WonderBody]) -> Curiosity:
    """Write an open question to curiosities/ (asking the same question again returns the existing one)."""
    return cx.wonder(data.question, context=data.context)


@get("/curiosities", sync_to_thread=True)
def list_curiosities(
    cx: CortexDep,
    text: Annotated[str | None, QueryParameter(max_length=MAX_QUERY_CHARS,
                                               description="Only the questions close to this text, best first.")
                    ] = None,
) -> Curiosities:
    """Open questions, newest first; with `text`, those relevant to it, best first."""
    return cx.list_curiosities(text)


@post("/curiosities/explore", status_code=200, sync_to_thread=True)
def explore(cx: CortexDep, data: JSONBody[ExploreBody]) -> Explored:
    """Close a question with the memory that answers it: `status: explored` and `answered_by` on the question,
    `answers` on the answer (409 if either changed meanwhile; neither is then changed)."""
    return cx.explore(data.path, data.answer_path)


HANDLERS = [habits_for_context, reinforce, touch, resonance_report, resonance_decay, wonder, list_curiosities,
            explore]
