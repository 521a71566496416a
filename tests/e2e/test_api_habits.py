"""Habits, resonance and curiosity over HTTP, and the regions and modes /v1/status reports."""

from __future__ import annotations

from litestar import Litestar
from litestar.testing import TestClient

from vault_cortex.cortex import Cortex

HABIT = "habits/Write the test first.md"
QUESTION = "Does the soil probe drift in cold weather?"


def test_status_reports_regions_in_order_and_modes(client: TestClient[Litestar], cx: Cortex) -> None:
    body = client.get("/v1/status").json()
    assert body["regions"] == cx.settings.regions.order == [
        "soul", "personality", "artistic", "linguistic", "scientific", "long_term", "short_term"]
    assert body["modes"] == sorted(cx.settings.modes)
    assert {"balanced", "focus", "explore", "identity", "recent"} <= set(body["modes"])
    assert body["nightly"] is None  # this app runs no nightly schedule; test_nightly covers one


def test_habits_by_trigger_and_by_tool(client: TestClient[Litestar]) -> None:
    by_text = client.get("/v1/habits", params={"text": "fix the regression in the collector"})
    assert by_text.status_code == 200, by_text.text
    body = by_text.json()
    top = body["habits"][0]
    assert top["path"] == HABIT and top["trigger"] == "fix" and top["why"]
    assert body["markdown"].startswith("- **Write the test first**")
    by_tool = client.get("/v1/habits", params={"tool": "Bash(pytest -q tests)"}).json()
    assert [h["path"] for h in by_tool["habits"]] == [HABIT]
    assert by_tool["habits"][0]["tool_pattern"] == "Bash(pytest*)"
    neither = client.get("/v1/habits")
    assert neither.status_code == 400 and neither.json()["error"] == "InvalidRequest"
    assert client.get("/v1/habits", params={"text": "x" * 10_001}).status_code == 400


def test_reinforce_raises_a_habit_by_one_line(client: TestClient[Litestar], cx: Cortex) -> None:
    before = (cx.root / HABIT).read_text(encoding="utf-8")
    response = client.post("/v1/habits/reinforce", json={"path": HABIT, "context": "fixed the rounding bug"})
    assert response.status_code == 200, response.text
    change = response.json()
    assert (change["before"], change["after"], change["baseline"], change["written"]) == (0.7, 0.8, 0.6, True)
    after = (cx.root / HABIT).read_text(encoding="utf-8")
    assert after == before.replace("weight: 0.7\n", "weight: 0.8\n")
    wrong = client.post("/v1/habits/reinforce", json={"path": "scientific/SQLite WAL mode.md"})
    assert wrong.status_code == 400 and wrong.json()["error"] == "InvalidRequest"
    missing = client.post("/v1/habits/reinforce", json={"path": "habits/No such habit.md"})
    assert missing.status_code == 404 and missing.json()["error"] == "NoteNotFound"


def test_touch_report_and_decay(client: TestClient[Litestar], cx: Cortex) -> None:
    touched = client.post("/v1/resonance/touch", json={"concept": "craft", "by": "artistic/Enclosure sketches.md"})
    assert touched.status_code == 200, touched.text
    assert touched.json()["path"] == "resonance/Craftsmanship.md"
    assert touched.json()["after"] > touched.json()["before"]
    unknown = client.post("/v1/resonance/touch", json={"concept": "astrology"})
    assert unknown.status_code == 404 and unknown.json()["error"] == "NoteNotFound"

    report = client.get("/v1/resonance/report", params={"days": 30})
    assert report.status_code == 200, report.text
    rows = {r["name"]: r for r in report.json()["concepts"]}
    assert rows["Craftsmanship"]["touches"] == 1 and rows["Craftsmanship"]["claimed"] == 0.75
    assert client.get("/v1/resonance/report", params={"days": 0}).status_code == 400

    preview = client.post("/v1/resonance/decay", json={})
    assert preview.status_code == 200 and preview.json()["applied"] is False
    applied = client.post("/v1/resonance/decay", json={"apply": True}).json()
    assert applied["applied"] is True and applied["folder"] == "resonance"
    assert client.post("/v1/resonance/decay", json={"apply": "yes"}).status_code == 400


def test_wonder_list_and_explore(client: TestClient[Litestar], cx: Cortex) -> None:
    asked = client.post("/v1/curiosities", json={"question": QUESTION, "context": "Readings dip below 5 °C."})
    assert asked.status_code == 200, asked.text
    question = asked.json()
    assert question["path"] == "curiosities/Does the soil probe drift in cold weather.md"
    assert question["status"] == "open" and question["question"] == QUESTION
    assert client.post("/v1/curiosities", json={"question": QUESTION}).json()["path"] == question["path"]
    assert client.post("/v1/curiosities", json={"question": ""}).status_code == 400

    everything = client.get("/v1/curiosities").json()
    assert question["path"] in [c["path"] for c in everything["items"]] and everything["open"] >= 1
    matching = client.get("/v1/curiosities", params={"text": "soil moisture probe readings in the cold"}).json()
    assert matching["items"][0]["path"] == question["path"] and matching["items"][0]["similarity"] > 0

    answer = "scientific/Soil probe drift.md"
    created = client.put("/v1/notes", params={"path": answer},
                         json={"content": "# Soil probe drift\n\nThe capacitive probe reads 4% low below 5 °C.\n"})
    assert created.status_code == 201
    explored = client.post("/v1/curiosities/explore", json={"path": question["path"], "answer_path": answer})
    assert explored.status_code == 200, explored.text
    body = explored.json()
    assert body["question"]["status"] == "explored" and body["question"]["answered_by"] == "[[Soil probe drift]]"
    assert "Does the soil probe drift in cold weather" in (cx.root / answer).read_text(encoding="utf-8")
    assert question["path"] not in [c["path"] for c in client.get("/v1/curiosities").json()["items"]]
    not_a_question = client.post("/v1/curiosities/explore", json={"path": answer, "answer_path": answer})
    assert not_a_question.status_code == 400


def test_unknown_fields_are_refused(client: TestClient[Litestar]) -> None:
    for url, body in (("/v1/habits/reinforce", {"path": HABIT, "weight": 1}),
                      ("/v1/resonance/touch", {"concept": "craft", "step": 1}),
                      ("/v1/curiosities", {"question": QUESTION, "status": "explored"}),
                      ("/v1/curiosities/explore", {"path": "a.md", "answer_path": "b.md", "force": True})):
        response = client.post(url, json=body)
        assert response.status_code == 400 and response.json()["error"] == "ValidationError", url
