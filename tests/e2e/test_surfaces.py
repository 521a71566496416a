"""One core, three adapters: every MCP tool (every op of one) has a matching HTTP route and CLI command (or a
stated reason why not), and every tool's description tells an agent when to call it."""

from __future__ import annotations

import argparse
import re
from typing import Any

from harness import LiveServer, over_http
from litestar import Litestar
from mcp.client import Client

from server.cli import build_parser

# (tool, op) → (HTTP route, CLI command) calling the same facade operation; a tool without ops has op None
SURFACES: dict[tuple[str, str | None], tuple[str, str]] = {
    ("recall", None): ("GET /v1/recall", "recall"),
    ("context", None): ("POST /v1/context", "context"),
    ("remember", None): ("POST /v1/notes", "remember"),
    ("link", None): ("POST /v1/links", "link"),
    ("note", "read"): ("GET /v1/notes", "read"),
    ("note", "related"): ("GET /v1/related", "related"),
    **{("note", op): ("POST /v1/notes/edit", "edit") for op in ("append", "prepend", "replace_section",
                                                               "find_replace", "set_property", "remove_property")},
    ("note", "move"): ("POST /v1/notes/move", "move"),
    ("note", "archive"): ("POST /v1/notes/archive", "archive"),
    ("overview", "recent"): ("GET /v1/recent", "recent"),
    ("overview", "graph"): ("GET /v1/graph/health", "doctor"),  # `doctor --graph`
    ("habits", "match"): ("GET /v1/habits", "habits"),
    ("habits", "reinforce"): ("POST /v1/habits/reinforce", "reinforce"),
    ("resonance", "touch"): ("POST /v1/resonance/touch", "resonance"),  # `resonance touch CONCEPT`
    ("resonance", "report"): ("GET /v1/resonance/report", "resonance"),  # `resonance report`
    ("curiosity", "wonder"): ("POST /v1/curiosities", "wonder"),
    ("curiosity", "list"): ("GET /v1/curiosities", "curiosities"),
    ("curiosity", "explore"): ("POST /v1/curiosities/explore", "explore"),
    ("sleep", "plan"): ("POST /v1/sleep/plan", "sleep"),  # `sleep`: both save the plan, change no note (GET previews)
    ("sleep", "apply"): ("POST /v1/sleep/apply", "sleep"),  # `sleep apply PLAN`
    ("sleep", "rollback"): ("POST /v1/sleep/rollback", "sleep"),  # `sleep rollback`
}
# tool ops without a route or a command, and why (none today; add one here with its reason rather than skip it)
EXCEPTIONS: dict[tuple[str, str | None], str] = {}

WHEN = re.compile(r"\b([Cc]all (this|it|when)|BEFORE|AFTER|START)\b")


def _ops(tool: Any) -> set[tuple[str, str | None]]:
    """(tool, op) for each op a tool's schema offers, or (tool, None) for a tool without ops."""
    ops = tool.input_schema.get("properties", {}).get("op", {}).get("enum")
    return {(tool.name, op) for op in ops} if ops else {(tool.name, None)}


def _routes(app: Litestar) -> set[str]:
    return {f"{method} {route.path}" for route in app.routes for method in getattr(route, "methods", ())
            if method not in ("HEAD", "OPTIONS")}


def _commands() -> set[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_every_tool_has_a_route_and_a_command(live: LiveServer, app: Litestar) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    offered = set().union(*(_ops(t) for t in over_http(live, body)))
    assert offered == set(SURFACES) | set(EXCEPTIONS), "a new MCP tool or op needs a route and a CLI command"
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


def test_every_surface_plans_the_same_default_sleep_mode(live: LiveServer, app: Litestar) -> None:
    """`vault-cortex sleep`, GET /v1/sleep/plan and MCP `sleep` op=plan without a mode plan the same sleep."""
    from vault_cortex.sleep.consolidate import DEFAULT_MODE

    async def body(client: Client) -> Any:
        return {t.name: t for t in (await client.list_tools()).tools}["sleep"]

    mcp_default = over_http(live, body).input_schema["properties"]["mode"]["default"]
    schema = app.openapi_schema.to_schema()
    params = schema["paths"]["/v1/sleep/plan"]["get"]["parameters"]
    http_default = next(p for p in params if p["name"] == "mode")["schema"]["default"]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    cli_default = sub.choices["sleep"].parse_args([]).mode
    assert mcp_default == http_default == cli_default == DEFAULT_MODE == "full"
