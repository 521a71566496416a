"""The request limits are defined once (vault_cortex/limits.py): HTTP, MCP and the facade refuse the same
out-of-range values, each with a clear error naming the parameter, and accept the same edge values."""

from __future__ import annotations

from typing import Any

import pytest
from harness import LiveServer, over_http
from litestar import Litestar
from litestar.testing import TestClient
from mcp.client import Client

from vault_cortex.cortex import Cortex
from vault_cortex.errors import InvalidRequest
from vault_cortex.limits import MAX_BUDGET_TOKENS, MAX_QUERY_CHARS, MIN_BUDGET_TOKENS, MIN_K
from vault_cortex.recall.request import RecallRequest

QUERY = "battery voltage"
BAD_BUDGETS = (0, 10, MIN_BUDGET_TOKENS - 1, MAX_BUDGET_TOKENS + 1)
GOOD_BUDGETS = (MIN_BUDGET_TOKENS, MAX_BUDGET_TOKENS)


def _mcp(live: LiveServer, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def body(client: Client) -> list[Any]:
        return [await client.call_tool(name, args) for name, args in calls]

    return list(over_http(live, body))


@pytest.mark.parametrize("budget", BAD_BUDGETS)
def test_an_out_of_range_budget_is_refused_by_every_surface(client: TestClient[Litestar], live: LiveServer,
                                                            cx: Cortex, budget: int) -> None:
    for response in (client.get("/v1/recall", params={"q": QUERY, "budget_tokens": budget}),
                     client.post("/v1/recall", json={"query": QUERY, "budget_tokens": budget}),
                     client.post("/v1/context", json={"task": QUERY, "budget_tokens": budget})):
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "ValidationError", response.json()  # the schema's, not the facade's
        assert "budget_tokens" in response.json()["detail"]
    for result in _mcp(live, [("recall", {"query": QUERY, "budget_tokens": budget}),
                              ("context", {"task": QUERY, "budget_tokens": budget})]):
        assert result.is_error and "budget_tokens" in result.content[0].text
        assert "InvalidRequest" not in result.content[0].text, "refused by the tool's schema, not from inside"
    with pytest.raises(InvalidRequest, match=rf"budget_tokens must be between {MIN_BUDGET_TOKENS} and"):
        cx.recall(RecallRequest(query=QUERY, budget_tokens=budget), log_activity=False)
    with pytest.raises(InvalidRequest, match=rf"budget_tokens must be between {MIN_BUDGET_TOKENS} and"):
        cx.context(task=QUERY, budget_tokens=budget)


@pytest.mark.parametrize("budget", GOOD_BUDGETS)
def test_the_edge_budgets_are_accepted_by_every_surface(client: TestClient[Litestar], live: LiveServer,
                                                        cx: Cortex, budget: int) -> None:
    assert client.get("/v1/recall", params={"q": QUERY, "budget_tokens": budget}).status_code == 200
    assert client.post("/v1/context", json={"task": QUERY, "budget_tokens": budget}).status_code == 200
    for result in _mcp(live, [("recall", {"query": QUERY, "budget_tokens": budget}),
                              ("context", {"task": QUERY, "budget_tokens": budget})]):
        assert not result.is_error, result.content
    assert cx.recall(RecallRequest(query=QUERY, budget_tokens=budget), log_activity=False).context is not None
    assert cx.context(task=QUERY, budget_tokens=budget).context.budget_tokens <= budget


def test_k_and_query_length_agree_on_every_surface(client: TestClient[Litestar], live: LiveServer,
                                                   cx: Cortex) -> None:
    max_k, max_chars = cx.settings.recall.max_k, cx.settings.recall.max_query_chars
    refused = [{"k": MIN_K - 1}, {"k": max_k + 1}, {"query": "x" * (max_chars + 1)},
               {"query": "x" * (MAX_QUERY_CHARS + 1)}]
    accepted = [{"k": MIN_K}, {"k": max_k}, {"query": "battery " * (max_chars // 8)}]
    for args in refused + accepted:
        query, k = args.get("query", QUERY), args.get("k")
        ok = args in accepted
        params: dict[str, Any] = {"q": query} | ({"k": k} if k is not None else {})
        assert (client.get("/v1/recall", params=params).status_code == 200) is ok, args
        assert (not _mcp(live, [("recall", {"query": query} | ({"k": k} if k is not None else {}))])[0].is_error) is ok
        try:
            cx.recall(RecallRequest(query=str(query), k=k if isinstance(k, int) else None), log_activity=False)
        except InvalidRequest:
            assert not ok, args
        else:
            assert ok, args


def test_the_schemas_state_the_same_bounds(app: Litestar, live: LiveServer) -> None:
    async def body(client: Client) -> Any:
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    tools = over_http(live, body)
    openapi = app.openapi_schema.to_schema()
    recall_get = {p["name"]: p["schema"] for p in openapi["paths"]["/v1/recall"]["get"]["parameters"]}
    for name, schema in (("budget_tokens", recall_get["budget_tokens"]), ("k", recall_get["k"])):
        mcp_schema = tools["recall"]["properties"][name]
        mcp_bounds = next(s for s in mcp_schema.get("anyOf", [mcp_schema]) if s.get("type") == "integer")
        assert (schema.get("minimum"), schema.get("maximum")) == (mcp_bounds.get("minimum"),
                                                                 mcp_bounds.get("maximum")), name
    assert recall_get["budget_tokens"]["minimum"] == MIN_BUDGET_TOKENS
    assert recall_get["q"]["maxLength"] == MAX_QUERY_CHARS
    # MCP's schemas leave string lengths unsaid (they would cost every request of an eager client); the tool
    # refuses the same lengths (test_k_and_query_length_agree_on_every_surface)
    assert "maxLength" not in tools["recall"]["properties"]["query"]



def test_a_bad_filter_is_refused_alike_by_http_and_mcp(client: TestClient[Litestar], live: LiveServer) -> None:
    message = "created_after must be an ISO date (2026-11-30), a date-time or an age like 7d, 12h, 2w; not 'soon'"
    for response in (client.get("/v1/recall", params={"q": QUERY, "created_after": "soon"}),
                     client.post("/v1/recall", json={"query": QUERY, "created_after": "soon"}),
                     client.post("/v1/context", json={"task": QUERY, "created_after": "soon"})):
        assert response.status_code == 400 and response.json()["detail"] == message
    for result in _mcp(live, [("recall", {"query": QUERY, "created_after": "soon"}),
                              ("context", {"task": QUERY, "created_after": "soon"})]):
        assert result.is_error and result.content[0].text.endswith(f"InvalidRequest: {message}")
