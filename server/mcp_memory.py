"""The MCP tools of habits, resonance, curiosity and sleep, each one tool with an `op` (the /v1/habits,
/v1/resonance, /v1/curiosities and /v1/sleep routes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from server.mcp_args import ADDITIVE, REWRITES, Call, builtins, needs, told
from server.plans import check_plan, saved_plan
from vault_cortex.limits import MAX_PATH_CHARS, MAX_QUERY_CHARS
from vault_cortex.privacy import agent_text
from vault_cortex.recall import brief
from vault_cortex.sleep.consolidate import DEFAULT_MODE, SleepMode
from vault_cortex.sleep.operations import plan_markdown


def memory_tools(tool: Callable[[ToolAnnotations], Callable[[Any], Any]], call: Call) -> None:
    """Register `habits`, `resonance`, `curiosity` and `sleep` with `tool` (build_mcp's registrar)."""

    @tool(ADDITIVE)
    def habits(
        op: Annotated[Literal["match", "reinforce"], Field(description="match or reinforce.")],
        text: Annotated[str | None, Field(description="match: what you will do; reinforce: what for.",
                                          max_length=MAX_QUERY_CHARS)] = None,
        tool: Annotated[str | None, Field(description="match: a tool call, e.g. 'Bash(pytest -q)'.",
                                          max_length=2000)] = None,
        habit: Annotated[str | None, Field(description="reinforce: its path or name.",
                                           max_length=MAX_PATH_CHARS)] = None,
    ) -> CallToolResult:
        """The user's habits (how they want things done). match: call it BEFORE a kind of task or a tool call,
        and follow what it returns. reinforce: call it AFTER following one (once a task); it then ranks higher."""
        if op == "reinforce":
            needs(op, habit=habit)
            return told(call(lambda cx: cx.reinforce(habit or "", context=agent_text(text))))
        found = call(lambda cx: cx.habits_for_context(text or "", tool=tool))
        return told(found, found.markdown or "No habit of the user's applies to this.")

    @tool(ADDITIVE)
    def resonance(
        op: Annotated[Literal["touch", "report"], Field(description="touch or report.")],
        concept: Annotated[str | None, Field(description="touch: its name or path.",
                                             max_length=300)] = None,
        by: Annotated[str | None, Field(description="touch: the note engaging it.",
                                        max_length=MAX_PATH_CHARS)] = None,
        days: Annotated[int | None, Field(description="report: days back.", ge=1, le=36500)] = None,
    ) -> dict[str, Any]:
        """What matters to the user (resonance/). touch: call it when the work truly engages a concept (not to
        flatter). report: call it when asked to reflect; what they say matters beside what they engaged with."""
        if op == "touch":
            needs(op, concept=concept)
            return builtins(call(lambda cx: cx.touch(concept or "", by=by)))
        return builtins(call(lambda cx: cx.resonance_report(days=days)))

    @tool(ADDITIVE)
    def curiosity(
        op: Annotated[Literal["wonder", "list", "explore"], Field(description="wonder, list or explore.")],
        question: Annotated[str | None, Field(description="wonder: the question; explore: its path.",
                                              max_length=MAX_PATH_CHARS)] = None,
        text: Annotated[str | None, Field(description="wonder: why it came up; list: relevant to.",
                                          max_length=MAX_QUERY_CHARS)] = None,
        answer: Annotated[str | None, Field(description="explore: the note answering it.",
                                            max_length=MAX_PATH_CHARS)] = None,
    ) -> CallToolResult:
        """Open questions (curiosities/). wonder: call it when something is worth answering later. list: call it
        when starting on a topic. explore: call it once a memory answers one (remember it first); links both."""
        if op == "wonder":
            needs(op, question=question)
            return told(call(lambda cx: cx.wonder(agent_text(question) or "", context=agent_text(text))))
        if op == "explore":
            needs(op, question=question, answer=answer)
            return told(call(lambda cx: cx.explore(question or "", answer or "")))
        found = call(lambda cx: cx.list_curiosities(text))
        lines = [brief.item(q.path, "an open question", "") for q in found.items]
        return told(found, "\n".join(lines) if lines else f"No open question{' bears on this' if text else ''} "
                                                            f"({found.open} open in all).")

    @tool(REWRITES)
    def sleep(
        op: Annotated[Literal["plan", "apply", "rollback"], Field(description="plan, apply or rollback.")],
        mode: Annotated[SleepMode,
                        Field(description="plan: full; light (promote, link); save (handoff).")] = DEFAULT_MODE,
        plan_id: Annotated[str | None, Field(description="apply: the plan's id.", max_length=32)] = None,
        commit: Annotated[bool, Field(description="apply: git commit it.")] = False,
    ) -> dict[str, Any]:
        """Consolidate memory. plan: call it at the end of a long session or when asked to tidy; changes nothing;
        show its markdown to the user. apply: call it only once they approve (journalled, nothing deleted).
        rollback: undo the last sleep."""
        if op == "plan":
            plan = call(lambda cx: cx.sleep_plan(mode))
            return {"id": plan.id, "mode": plan.mode, "operations": len(plan.ops), "saved": bool(plan.ops),
                    "markdown": plan_markdown(plan)}
        if op == "apply":
            needs(op, plan_id=plan_id)
            return builtins(call(lambda cx: cx.sleep_apply(check_plan(cx, saved_plan(cx, plan_id or "")),
                                                           commit=commit)))
        return builtins(call(lambda cx: cx.sleep_rollback()))
