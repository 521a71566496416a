"""Sleep plans clients name or send: find a saved plan by its id, check a plan sent whole before applying it.

The library applies any `Plan` it is given; a plan that arrives over HTTP is checked here first, so that a
malformed one is refused with a 400 instead of failing halfway through (a 500 and an interrupted journal).
"""

from __future__ import annotations

import re

from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.relations import RELATIONS_PATH
from vault_cortex.files.vault import note_path
from vault_cortex.sleep.consolidate import MODES
from vault_cortex.sleep.cycle import load_plan, plan_file
from vault_cortex.sleep.operations import STATE_PATH, Op, Plan

PLAN_ID = re.compile(r"\d{8}T\d{6}Z")  # what `sleep.plan` names a plan: its UTC time, e.g. 20261130T033000Z
EDITS = ("set_property", "add_to_list", "add_relation")
WRITES = ("create", "write")
EDGE = "add_edge"  # an edge added to the relations sidecar (an adopted vault's)


def check_id(plan_id: str) -> str:
    if not PLAN_ID.fullmatch(plan_id):
        raise InvalidRequest(f"not a sleep plan id: {plan_id!r} (ids look like 20261130T033000Z)")
    return plan_id


def saved_plan(cx: Cortex, plan_id: str) -> Plan:
    """The plan `sleep_plan` saved under `.cortex/sleep/` with this id."""
    path = plan_file(cx.root, check_id(plan_id))
    if not path.is_file():
        raise InvalidRequest(f"no saved sleep plan {plan_id!r}: plan again (a plan with nothing to do is not "
                             "saved, and `sleep rollback` or a cleanup may have removed it)")
    return load_plan(path)


def check_plan(cx: Cortex, plan: Plan) -> Plan:
    """The plan, if every operation is one the journal can carry out on notes inside the vault."""
    check_id(plan.id)
    if plan.mode not in MODES:
        raise InvalidRequest(f"unknown sleep mode {plan.mode!r}; modes: {', '.join(MODES)}")
    for i, op in enumerate(plan.ops, 1):
        problem = _problem(cx, op, i)
        if problem:
            raise InvalidRequest(f"step {op.step} of plan {plan.id} is not applicable: {problem}")
    return plan


def _problem(cx: Cortex, op: Op, index: int) -> str | None:
    if op.step != index or any(not 0 < s < op.step for s in op.requires):
        return "steps must be numbered 1, 2, … in order and require only earlier steps"
    if op.path == STATE_PATH:
        if (op.phase, op.action) != ("state", "write"):
            return f"only the state phase may write {STATE_PATH}"
    elif op.path == RELATIONS_PATH or op.action == EDGE:
        if op.path != RELATIONS_PATH or op.action != EDGE or op.src is None or op.key is None \
                or not isinstance(op.value, str):
            return f"{EDGE} adds an edge (src, key, value) to {RELATIONS_PATH}, and only it writes there"
        note_path(cx.root, op.src)  # the edge is from a note inside the vault
    else:
        note_path(cx.root, op.path)  # UnsafePath (400) outside the vault, in a dot-folder, or not .md
    if op.path not in op.hashes or set(op.hashes) - {op.path, op.dest}:
        return "its hashes must name its own file (and a move's destination) only"
    if op.action == "move":
        if op.dest is None:
            return "a move needs a dest"
        note_path(cx.root, op.dest)
    elif op.action in EDITS:
        if op.key is None or (op.action != "set_property" and not isinstance(op.value, str)):
            return f"{op.action} needs a key and a value"
    elif op.action in WRITES:
        if op.content is None:
            return f"{op.action} needs the content"
    elif op.action != EDGE:
        return f"unknown action {op.action!r}"
    return None
