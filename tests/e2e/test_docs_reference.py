"""Docs tested like code: every HTTP route (docs/server.md), MCP tool (docs/mcp.md) and hook (docs/claude-code.md)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from litestar import Litestar
from litestar.routes import ASGIRoute, HTTPRoute

from server.hooks import HOOK_EVENTS
from server.mcp_tools import build_mcp
from vault_cortex.cortex import Cortex

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _documented(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")


def _route_rows(app: Litestar) -> set[str]:
    """`METHOD /path` for every route of ours (the OpenAPI document's own routes aside)."""
    rows = set()
    for route in app.routes:
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
        if path.startswith("/schema") and path != "/schema":
            continue
        if isinstance(route, ASGIRoute):
            rows.add(path)
        elif isinstance(route, HTTPRoute):
            rows |= {f"{m} {path}" for m in route.methods if m not in ("OPTIONS", "HEAD")}
    return rows


def test_every_route_is_in_the_server_page(app: Litestar) -> None:
    text = _documented("server.md")
    missing = sorted(row for row in _route_rows(app) if f"`{row}`" not in text)
    assert not missing, f"docs/server.md does not document these routes (as `METHOD /path`): {missing}"


def test_every_mcp_tool_is_in_the_mcp_page(cx: Cortex) -> None:
    text = _documented("mcp.md")
    tools = anyio.run(build_mcp(cx).list_tools)
    missing = sorted(t.name for t in tools if f"`{t.name}`" not in text)
    assert not missing, f"docs/mcp.md does not document these MCP tools: {missing}"


def test_every_hook_is_in_the_claude_code_page() -> None:
    text = _documented("claude-code.md")
    missing = [e for e in HOOK_EVENTS if f"vault-cortex hook {e}" not in text]
    assert not missing, f"docs/claude-code.md does not document these hooks: {missing}"
