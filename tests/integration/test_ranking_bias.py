"""Ranking without hub bias or runaway self-reinforcement (issue 12, item 5), on the real model and index."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from vault_cortex.cortex import Cortex
from vault_cortex.recall.request import RecallRequest


def test_a_hub_linked_from_every_page_stays_out_of_the_top_3(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("hub")
    (root / ".cortex").mkdir(exist_ok=True)
    expected = json.loads((root / "expected.json").read_text("utf-8"))
    hub = expected["hub"]
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert cx.graph().degree(hub) >= 50
        for query, answer in expected["queries"].items():
            top3 = [h.path for h in cx.recall(RecallRequest(query=query, k=3), log_activity=False).hits]
            assert top3[0] == answer, (query, top3)
            assert hub not in top3, (query, top3)
        for query, answer in {**expected["queries"], **expected["by_words"]}.items():
            hits = cx.recall(RecallRequest(query=query, k=60), log_activity=False).hits
            assert hits[0].path == answer
            at = [h for h in hits if h.path == hub]
            assert not at or at[0].signals["graph"] <= 0.1, (query, at[0].signals)  # degree is no evidence


def test_five_recalls_of_one_query_do_not_change_the_top_hit_of_another(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    root = fixture_vault("hub")
    (root / ".cortex").mkdir(exist_ok=True)
    query = "how do I back up my notes"
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        before = [h.path for h in cx.recall(RecallRequest(query=query, k=5), log_activity=False).hits]
        # another query whose results are this query's runners-up, recalled five times over
        other = " ".join((root / p).read_text("utf-8").split("\n")[5] for p in before[1:4])
        for _ in range(5):
            assert before[0] not in [h.path for h in cx.recall(RecallRequest(query=other, k=10)).hits[:5]]
        cx.sync()
        assert cx.db.co_retrieval(), "the recalls were replayed into co-retrieval pairs"
        assert cx.recall(RecallRequest(query=query, k=1), log_activity=False).hits[0].path == before[0]


def test_a_pair_counts_once_per_distinct_query_and_fades(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    from vault_cortex.files.activity import RecallEvent, append

    root = fixture_vault("graph_lift")
    now = datetime.now(UTC)
    pair = ("long_term/Houseplant watering.md", "long_term/Bicycle chain care.md")
    for i in range(4):
        append(root, RecallEvent(ts=now, client="test", query=f"Query {i % 2}", mode="balanced", paths=pair))
        append(root, RecallEvent(ts=now, client="test", query=f"query   {i % 2} ", mode="balanced", paths=pair))
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert [queries for _, _, queries, _ in cx.db.co_diversity()] == [2]  # 8 recalls, 2 distinct queries
        hits = {h.path: h for h in cx.recall(RecallRequest(query="watering the fern and the cactus", k=5,
                                                           mode="explore"), log_activity=False).hits}
        assert hits["long_term/Bicycle chain care.md"].signals["coactivation"] == 0.0  # two queries: not yet


def test_sleep_writes_no_co_retrieved_edge_for_one_query_recalled_again_and_again(fixture_vault, embedder) -> None:  # type: ignore[no-untyped-def]
    from vault_cortex.files.activity import RecallEvent, append

    root = fixture_vault("graph_lift")
    now = datetime.now(UTC)
    pair = ("long_term/Houseplant watering.md", "long_term/Bicycle chain care.md")
    for _ in range(6):
        append(root, RecallEvent(ts=now, client="test", query="plants and bikes", mode="balanced", paths=pair))
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        wires = [op for op in cx.sleep_plan("full").ops if op.key == "co_retrieved"]
        assert wires == []
        for i in range(3):  # three distinct queries: now it is a pattern worth an edge
            append(root, RecallEvent(ts=now, client="test", query=f"query {i}", mode="balanced", paths=pair))
        cx.sync()
        wires = [op for op in cx.sleep_plan("full").ops if op.key == "co_retrieved"]
        assert wires and "4 distinct queries" in wires[0].reason  # the repeated one counts once
