"""The sleep routes end to end: a plan is a dry run with markdown, applying it by id or whole, conflicts skipped."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness import TEST_HOSTS, TOKEN, checked_client
from litestar import Litestar
from litestar.testing import TestClient

from server.app import create_app
from vault_cortex.cortex import Cortex

HABIT = "habits/Write the test first.md"  # weight 0.7, baseline 0.6


def notes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md")
            if not p.relative_to(root).as_posix().startswith(".")}


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the vault, its own under .cortex/ included, but the derived index."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not p.relative_to(root).as_posix().startswith(".cortex/index/")}


def test_plan_is_a_dry_run_with_markdown(client: TestClient[Litestar], cx: Cortex) -> None:
    """Issue 21 F11: a GET must not write; it wrote the plan file. GET previews (writes nothing at all), POST
    plans and saves the plan to apply by id."""
    before = _files(cx.root)
    response = client.get("/v1/sleep/plan", params={"mode": "light"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"plan", "markdown", "saved"}
    plan = body["plan"]
    assert plan["mode"] == "light" and plan["ops"] and body["saved"] is False
    assert body["markdown"].startswith(f"# Sleep plan {plan['id']} (light)") and "## Operations" in body["markdown"]
    assert all(op["action"] and op["path"] and op["reason"] for op in plan["ops"])
    assert _files(cx.root) == before  # nothing written, not even the plan
    assert client.post("/v1/sleep/apply", json={"plan_id": plan["id"]}).json()["error"] == "InvalidRequest"

    saved = client.post("/v1/sleep/plan", json={"mode": "light"})
    assert saved.status_code == 200, saved.text
    body = saved.json()
    assert body["saved"] is True and body["plan"]["ops"]
    assert notes(cx.root) == {k: v for k, v in before.items() if k.endswith(".md") and not k.startswith(".")}
    assert (cx.root / ".cortex" / "sleep" / f"plan-{body['plan']['id']}.json").is_file()
    assert client.post("/v1/sleep/plan", json={"mode": "deep"}).json()["error"] == "ValidationError"


def test_plan_modes(client: TestClient[Litestar]) -> None:
    save = client.get("/v1/sleep/plan", params={"mode": "save"}).json()
    assert [op["phase"] for op in save["plan"]["ops"]] == ["handoff"]
    bad = client.get("/v1/sleep/plan", params={"mode": "deep"})
    assert bad.status_code == 400 and bad.json()["error"] == "ValidationError"


def test_apply_refuses_what_it_cannot_apply(client: TestClient[Litestar], cx: Cortex) -> None:
    plan = client.get("/v1/sleep/plan", params={"mode": "save"}).json()["plan"]
    unsafe = {**plan, "ops": [{**plan["ops"][0], "path": "../outside.md"}]}
    odd = {**plan, "ops": [{**plan["ops"][0], "action": "delete"}]}
    cases = [
        ({}, "InvalidRequest"),
        ({"plan_id": plan["id"], "plan": plan}, "InvalidRequest"),
        ({"plan_id": "../../etc/passwd"}, "ValidationError"),
        ({"plan_id": "20000101T000000Z"}, "InvalidRequest"),
        ({"plan": {**plan, "id": "../x"}}, "InvalidRequest"),
        ({"plan": unsafe}, "UnsafePath"),
        ({"plan": odd}, "InvalidRequest"),
        ({"plan": plan, "force": True}, "ValidationError"),
    ]
    for body, error in cases:
        response = client.post("/v1/sleep/apply", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"] == error, (body, response.text)
    assert not (cx.root.parent / "outside.md").exists()


def test_apply_a_saved_plan_by_id(client: TestClient[Litestar], cx: Cortex) -> None:
    plan = client.post("/v1/sleep/plan", json={"mode": "light"}).json()["plan"]
    response = client.post("/v1/sleep/apply", json={"plan_id": plan["id"]})
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["plan"] == plan["id"] and report["skipped"] == [] and report["commit"] is None
    assert report["applied"] == [op["step"] for op in plan["ops"]]
    assert "<!-- vault-cortex:sleep:start -->" in (cx.root / "HANDOFF.md").read_text(encoding="utf-8")
    again = client.post("/v1/sleep/apply", json={"plan_id": plan["id"]}).json()  # every file changed since
    assert again["applied"] == [] and len(again["skipped"]) == len(plan["ops"])


def test_full_plan_decays_habit_weights_and_skips_what_changed(client: TestClient[Litestar], cx: Cortex) -> None:
    later = datetime.now(UTC) + timedelta(days=45)  # the habit was last written 45 days ago
    with Cortex.open(cx.root, embedder=cx.embedder, clock=lambda: later) as ahead, \
            checked_client(create_app(ahead, token=TOKEN, allowed_hosts=TEST_HOSTS)) as later_client:
        body = later_client.get("/v1/sleep/plan", params={"mode": "full"}).json()
    plan = body["plan"]
    weights = {w["path"]: w for w in plan["findings"]["weights"]}
    w = weights[HABIT]  # 0.6 + 0.1 · 0.5^(days / 30), days ≥ 45: since the note was last written
    assert (w["kind"], w["before"], w["baseline"], w["half_life"]) == ("habit", 0.7, 0.6, 30.0)
    assert w["days"] >= 45 and 0.6 < w["after"] <= 0.636
    op = next(op for op in plan["ops"] if op["path"] == HABIT)
    assert (op["phase"], op["action"], op["key"], op["value"], op["before"], op["after"]) == (
        "decay", "set_property", "weight", w["after"], "0.7", f"{w['after']:g}")
    assert f"`habits/Write the test first.md`: weight: 0.7 → {w['after']:g}" in body["markdown"]

    edited = next(op["path"] for op in plan["ops"] if op["phase"] == "decay" and op["key"] == "importance")
    (cx.root / edited).write_text((cx.root / edited).read_text(encoding="utf-8") + "\nBy hand.\n", encoding="utf-8")
    response = client.post("/v1/sleep/apply", json={"plan": plan})  # the plan itself, as a client may hold it
    assert response.status_code == 200, response.text
    report = response.json()
    assert [s["path"] for s in report["skipped"]] == [edited]
    assert "changed on disk" in report["skipped"][0]["reason"]
    assert (cx.root / edited).read_text(encoding="utf-8").endswith("\nBy hand.\n")
    assert f"weight: {w['after']:g}\n" in (cx.root / HABIT).read_text(encoding="utf-8")
    dream = (cx.root / next(op["path"] for op in plan["ops"] if op["phase"] == "dream")).read_text(encoding="utf-8")
    assert f"[[Write the test first]]: habit weight 0.7 → {w['after']:g}" in dream
    assert "## Skipped when applied" in dream


def test_an_interrupted_sleep_is_a_409_not_a_500(client: TestClient[Litestar], cx: Cortex) -> None:
    journal = cx.root / ".cortex" / "sleep" / "journal.jsonl"
    kept = journal.read_bytes()
    plan = client.get("/v1/sleep/plan", params={"mode": "save"}).json()["plan"]
    journal.write_text(json.dumps({"t": "start", "id": plan["id"], "plan": f".cortex/sleep/plan-{plan['id']}.json"})
                       + "\n", encoding="utf-8")
    try:
        response = client.post("/v1/sleep/apply", json={"plan": plan})
    finally:
        journal.write_bytes(kept)
    assert response.status_code == 409
    assert response.json()["error"] == "WriteConflict" and "resume" in response.json()["detail"]
