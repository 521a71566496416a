"""The sleep routes under /v1: preview a consolidation (GET, writes nothing), or plan and save it (POST) to apply
exactly that plan by id."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from litestar import get, post
from litestar.params import JSONBody, QueryParameter
from msgspec import Meta

from server.plans import PLAN_ID, check_plan, saved_plan
from server.routes import CortexDep
from vault_cortex.errors import InvalidRequest
from vault_cortex.sleep.cycle import ApplyReport
from vault_cortex.sleep.operations import Plan, plan_markdown

SleepMode = Literal["full", "light", "save"]
PlanId = Annotated[str, Meta(pattern=f"^{PLAN_ID.pattern}$", max_length=32,
                             description="The id of a plan POST /v1/sleep/plan saved, e.g. 20261130T033000Z.")]
MODE_HELP = "full (every phase), light (promote and link) or save (the handoff only)."


class SleepPlanView(msgspec.Struct, frozen=True, kw_only=True):
    """A sleep plan, and the same plan as markdown for review (what `vault-cortex sleep --dry-run` prints)."""

    plan: Plan
    markdown: str
    saved: bool  # POST: saved in .cortex/sleep/ under plan.id, to apply by id (not a plan with nothing to do)


class PlanBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which sleep to plan and save."""

    mode: Annotated[SleepMode, Meta(description=MODE_HELP)] = "full"


class ApplyBody(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which plan to apply: the id of a saved plan, or the plan itself (one of the two)."""

    plan_id: PlanId | None = None
    plan: Plan | None = None
    commit: bool = False  # commit the changed files when the vault is a git repository


@get("/sleep/plan", sync_to_thread=True)
def sleep_plan(
    cx: CortexDep,
    mode: Annotated[SleepMode, QueryParameter(description=MODE_HELP)] = "full",
) -> SleepPlanView:
    """Preview a consolidation: every operation with its reason. Writes nothing, not even the plan (`saved` is
    false); POST /v1/sleep/plan plans and saves one to apply by id."""
    plan = cx.sleep_plan(mode, save=False)
    return SleepPlanView(plan=plan, markdown=plan_markdown(plan), saved=False)


@post("/sleep/plan", status_code=200, sync_to_thread=True)
def save_sleep_plan(cx: CortexDep, data: JSONBody[PlanBody]) -> SleepPlanView:
    """Plan a consolidation and save the plan under `.cortex/sleep/` (no note changes), to apply it by id with
    POST /v1/sleep/apply; a plan with nothing to do is not saved."""
    plan = cx.sleep_plan(data.mode)
    return SleepPlanView(plan=plan, markdown=plan_markdown(plan), saved=bool(plan.ops))


@post("/sleep/apply", status_code=200, sync_to_thread=True)
def sleep_apply(cx: CortexDep, data: JSONBody[ApplyBody]) -> ApplyReport:
    """Apply exactly a plan, journalled: a file changed since planning is skipped and reported (`skipped`),
    never overwritten; 409 while an interrupted sleep waits to be resumed or rolled back."""
    if (data.plan_id is None) == (data.plan is None):
        raise InvalidRequest("send either plan_id (a plan POST /v1/sleep/plan saved) or the plan itself")
    plan = saved_plan(cx, data.plan_id) if data.plan_id is not None else data.plan
    assert plan is not None
    return cx.sleep_apply(check_plan(cx, plan), commit=data.commit)


HANDLERS = [sleep_plan, save_sleep_plan, sleep_apply]
