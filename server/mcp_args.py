"""What the MCP tools share: their annotations, the arguments several take (each described in a few words: an eager
client sends every description with every request), and the answer to an op missing an argument."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar

import msgspec
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from vault_cortex.limits import MAX_BUDGET_TOKENS, MAX_K, MAX_PATH_CHARS, MAX_QUERY_CHARS, MIN_BUDGET_TOKENS, MIN_K

if TYPE_CHECKING:
    from vault_cortex.cortex import Cortex

T = TypeVar("T")


class Call(Protocol):
    """Runs one facade call for a tool with the opened Cortex (`Opened.call`)."""

    def __call__(self, fn: Callable[[Cortex], T], /) -> T: ...


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                           open_world_hint=False)
REWRITES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                           open_world_hint=False)  # edits and moves notes (nothing deleted; reversible)

Query = Annotated[str, Field(description="A question, topic or task, in words.", min_length=1,
                             max_length=MAX_QUERY_CHARS)]
K = Annotated[int | None, Field(description="Notes at most.", ge=MIN_K, le=MAX_K)]
Mode = Annotated[str | None, Field(description="balanced, focus, explore, identity, recent.")]
Budget = Annotated[int | None, Field(description="Token budget.", ge=MIN_BUDGET_TOKENS,
                                     le=MAX_BUDGET_TOKENS)]
NotePath = Annotated[str, Field(description="Path or [[link]] name.", min_length=1,
                                max_length=MAX_PATH_CHARS)]
Tags = Annotated[list[str] | None, Field(description="Only notes with all these tags.")]
Regions = Annotated[list[str] | None, Field(description="Only these regions.")]
When = Annotated[str | None, Field(description="ISO date or age ('7d').", max_length=40)]
PathPrefix = Annotated[str | None, Field(description="Only notes under this folder.", max_length=MAX_PATH_CHARS)]
Captures = Annotated[str | None, Field(description="Sessions captured: exclude (default), include, only.",
                                       max_length=16)]


def needs(op: str, **args: object) -> None:
    """A tool's op called without an argument it needs is the agent's error, named."""
    missing = [name for name, value in args.items() if value is None]
    if missing:
        raise ToolError(f"InvalidRequest: {op} needs {', '.join(f'`{m}`' for m in missing)}")


def builtins(value: Any) -> dict[str, Any]:
    out = msgspec.to_builtins(value)
    return out if isinstance(out, dict) else {"result": out}


def told(data: Any, text: str | None = None) -> CallToolResult:
    """A tool's answer in its two forms: the text a model reads (`text`, the one text form of recall/brief.py where
    the answer is memories; else the fields as JSON) and the fields for programs (the structured content)."""
    fields = builtins(data)
    said = text if text is not None else json.dumps(fields, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=said)], structured_content=fields)
