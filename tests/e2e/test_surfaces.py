"""One core, three adapters: every MCP tool has a matching HTTP route and CLI command (or a stated reason why
not), and every tool's description tells an agent when to call it."""

from __future__ import annotations

import argparse
import re
from typing import Any

from harness import LiveServer, over_http
from litestar import Litestar
from mcp.client import Client

from server.cli import build_parser

# tool → (HTTP route, CLI command) calling the same facade operation
SURFACES: dict[str, tuple[str, str]] = {
    "recall": ("GET /v1/recall", "recall"),
    "context": ("POST /v1/context", "context"),
    "remember": ("POST /v1/notes", "remember"),
    "related": ("GET /v1/related", "related"),
    "link": ("POST /v1/links", "link"),
    "graph_health": ("GET /v1/graph/health", "doctor"),  # `doctor --graph`
    "habits_for_context": ("GET /v1/habits", "habits"),
    "reinforce_habit": ("POST /v1/habits/reinforce", "reinforce"),
    "resonate": ("POST /v1/resonance/touch", "resonance"),  # `resonance touch CONCEPT`
    "resonance_report": ("GET /v1/resonance/report", "resonance"),  # `resonance report`
    "wonder": ("POST /v1/curiosities", "wonder"),
    "list_curiosities": ("GET /v1/curiosities", "curiosities"),
    "explore": ("POST /v1/curiosities/explore", "explore"),
    "sleep_plan": ("POST /v1/sleep/plan", "sleep"),  # `sleep --dry-run`; both save the plan (GET previews)
    "sleep_apply": ("POST /v1/sleep/apply", "sleep"),  # `sleep --apply PLAN`
    "read_note": ("GET /v1/notes", "read"),
    "edit_note": ("POST /v1/notes/edit", "edit"),
    "move_note": ("POST /v1/notes/move", "move"),
    "archive_note": ("POST /v1/notes/archive", "archive"),
    "recent": ("GET /v1/recent", "recent"),
}
# tools without a route or a command, and why (none today; add one here with its reason rather than skip it)
EXCEPTIONS: dict[str, str] = {}

WHEN = re.compile(r"\b(Call (this|it)|call this|BEFORE|AFTER)\b")


def _routes(app: Litestar) -> set[str]:
    return {f"{method} {route.path}" for route in app.routes for method in getattr(route, "methods", ())
            if method not in ("HEAD", "OPTIONS")}


def _commands() -> set[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_every_tool_has_a_route_and_a_command(live: LiveServer, app: Litestar) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in over_http(live, body)}
    assert set(tools) == set(SURFACES) | set(EXCEPTIONS), "a new MCP tool needs a route and a CLI command"
    routes, commands = _routes(app), _commands()
    missing = [(name, route) for name, (route, _) in SURFACES.items() if route not in routes]
    missing += [(name, command) for name, (_, command) in SURFACES.items() if command not in commands]
    assert not missing, missing
    assert all(reason.strip() for reason in EXCEPTIONS.values())


def test_every_tool_description_says_when_to_call_it(live: LiveServer) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    for tool in over_http(live, body):
        assert tool.description and WHEN.search(tool.description), (tool.name, tool.description)
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), (tool.name, name)
