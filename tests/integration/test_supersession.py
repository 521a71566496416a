"""A superseded note ranks below the note that supersedes it, says so in its why-line, and is never pushed alone.

A real vault (the starter vault plus a decision and its reversal), the real model and index, the real hook path.
The newer note names the older one with `supersedes:` — as a sleep writes it (`relations: supersedes:`) or as a
person writes it by hand (a top-level `supersedes:` property); both read the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from server.hooks import run_hook
from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

OLD = "long_term/Nodes send readings over MQTT.md"
NEW = "long_term/Nodes POST readings over HTTP.md"
OLD_TEXT = ("---\ncortex: long_term\nimportance: 0.6\ncreated: 2026-10-02T10:00\n---\n"
            "# Nodes send readings over MQTT\n\nDecision: the greenhouse sensor nodes send their temperature and "
            "humidity readings over MQTT to the "
            "collector on the Pi, every five minutes.\n")
BODY = ("# Nodes POST readings over HTTP\n\nDecision: the greenhouse sensor nodes no longer send their temperature and "
        "humidity readings over MQTT to the collector on the Pi; they POST them over HTTP, every five minutes.\n")
BY_SLEEP = ("---\ncortex: long_term\nimportance: 0.6\ncreated: 2026-11-20T10:00\nrelations:\n  supersedes:\n"
            "    - \"[[Nodes send readings over MQTT]]\"\n---\n" + BODY)
BY_HAND = ("---\ncortex: long_term\nimportance: 0.6\ncreated: 2026-11-20T10:00\n"
           "supersedes: \"[[Nodes send readings over MQTT]]\"\n---\n" + BODY)
QUERY = "Do the greenhouse nodes send their readings over MQTT to the collector?"


def _open(root: Path, embedder: Embedder, newer: str) -> Cortex:
    init_vault(root)
    (root / OLD).write_text(OLD_TEXT, encoding="utf-8")
    (root / NEW).write_text(newer, encoding="utf-8")
    cx = Cortex.open(root, embedder=embedder)
    cx.sync()
    return cx


@pytest.fixture(params=["by_sleep", "by_hand"])
def cx(request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder) -> Iterator[Cortex]:
    with _open(tmp_path / "vault", embedder, BY_SLEEP if request.param == "by_sleep" else BY_HAND) as c:
        yield c


def test_the_superseding_note_ranks_first_and_the_old_one_says_it_is_superseded(cx: Cortex) -> None:
    hits = cx.recall(RecallRequest(query=QUERY, k=5), log_activity=False).hits
    paths = [h.path for h in hits]
    assert paths[0] == NEW, paths
    old = next(h for h in hits if h.path == OLD)
    assert "superseded by [[Nodes POST readings over HTTP]]" in old.reason
    assert "superseded" not in hits[0].reason


def test_the_superseding_note_scores_as_it_would_without_the_old_one_superseded(
        tmp_path: Path, embedder: Embedder) -> None:
    plain = BY_SLEEP.replace("relations:\n  supersedes:\n    - \"[[Nodes send readings over MQTT]]\"\n", "")
    with _open(tmp_path / "a", embedder, plain) as a, _open(tmp_path / "b", embedder, BY_SLEEP) as b:
        before = {h.path: h.score for h in a.recall(RecallRequest(query=QUERY, k=5), log_activity=False).hits}
        after = {h.path: h.score for h in b.recall(RecallRequest(query=QUERY, k=5), log_activity=False).hits}
    assert after[NEW] >= before[NEW] - 0.02  # the link itself may move the graph signal a little
    assert after[OLD] < before[OLD]


def test_a_prompt_push_carries_the_superseding_note_before_the_old_one(cx: Cortex) -> None:
    out = run_hook(lambda: cx, "prompt", {"session_id": "s1", "prompt": QUERY})
    text = out["hookSpecificOutput"]["additionalContext"]
    assert f"## {NEW}" in text and f"## {OLD}" in text, text
    assert text.index(f"## {NEW}") < text.index(f"## {OLD}")
    assert "supersedes [[Nodes send readings over MQTT]]" in text
    assert "superseded by [[Nodes POST readings over HTTP]]" in text


def test_a_failure_push_never_carries_the_old_note_alone(cx: Cortex) -> None:
    payload = {"session_id": "s2", "tool_name": "Bash", "is_interrupt": False,
               "error": "mosquitto_sub: connection refused; greenhouse nodes send readings over MQTT to the collector"}
    out = run_hook(lambda: cx, "tool-failure", payload)
    text = out["hookSpecificOutput"]["additionalContext"]
    assert f"## {NEW}" in text and "supersedes [[Nodes send readings over MQTT]]" in text, text
    if f"## {OLD}" in text:
        assert text.index(f"## {NEW}") < text.index(f"## {OLD}")


def test_a_second_look_at_an_answer_restating_the_old_decision_shows_the_newer_note(cx: Cortex) -> None:
    answer = ("The greenhouse sensor nodes send their temperature and humidity readings over MQTT to the collector "
              "on the Pi every five minutes, so subscribe to the readings topic there.")
    out = run_hook(lambda: cx, "stop", {"session_id": "s3", "last_assistant_message": answer})
    reason = out.get("reason", "")
    assert NEW in reason, reason
    assert "supersedes [[Nodes send readings over MQTT]]" in reason
