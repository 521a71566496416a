"""A recall request: what every surface asks recall for, one value.

The HTTP body of `POST /v1/recall` decodes straight into `RecallRequest`; `GET /v1/recall`, the MCP `recall` tool,
`vault-cortex recall` and a program calling `Cortex.recall` build one from their arguments. The facade checks it
against the vault's own bounds (`recall.max_k`, `recall.max_query_chars`, its modes and regions); the types below
carry the ceilings of `limits`, which the HTTP schema states.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from vault_cortex.limits import MAX_BUDGET_TOKENS, MAX_K, MAX_QUERY_CHARS, MIN_BUDGET_TOKENS, MIN_K
from vault_cortex.recall.filters import Filters

__all__ = ["Budget", "FilterFields", "K", "QueryText", "RecallRequest"]

QueryText = Annotated[str, Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
K = Annotated[int, Meta(ge=MIN_K, le=MAX_K)]
Budget = Annotated[int, Meta(ge=MIN_BUDGET_TOKENS, le=MAX_BUDGET_TOKENS)]


class FilterFields(msgspec.Struct, frozen=True, kw_only=True):
    """The filters a request carries flat, as its JSON has them (see `Filters`): every one given must hold."""

    tags: list[str] | None = None  # nested: `a` matches `a/b`
    project: str | None = None
    created_after: str | None = None  # ISO date or age: 2026-11-01, 7d, 12h, 2w
    created_before: str | None = None
    modified_after: str | None = None
    path_prefix: str | None = None
    captures: str | None = None  # exclude (default): no capture; include; only: captures alone


class RecallRequest(FilterFields, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Notes for `query`: at most `k` (None: the vault's `recall.k`), ranked by `mode` (None: balanced); with
    `budget_tokens`, also the packed context; only the `regions` given, archived notes only with
    `include_archive`; with `gate`, only the hits the push gate passes. The filters apply inside the search."""

    query: QueryText
    k: K | None = None
    mode: str | None = None
    budget_tokens: Budget | None = None
    regions: list[str] | None = None
    include_archive: bool = False
    gate: bool = False  # only the hits the push gate passes, each with push_probability

    def filters(self) -> Filters:
        """The request's filters, checked (a bad tag, date or `captures` is an InvalidRequest naming it)."""
        return Filters.build(tags=self.tags, regions=self.regions, project=self.project,
                             created_after=self.created_after, created_before=self.created_before,
                             modified_after=self.modified_after, path_prefix=self.path_prefix,
                             captures=self.captures)
