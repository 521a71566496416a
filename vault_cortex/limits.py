"""The bounds of a request, defined once: the facade, the config checks, HTTP and MCP all read them.

A vault's `recall.max_k` and `recall.max_query_chars` narrow the ceilings below per vault (the facade checks
them); the surfaces put the ceilings themselves in their schemas.
"""

from __future__ import annotations

from vault_cortex.errors import InvalidRequest

MIN_K = 1
MAX_K = 1000  # the ceiling of recall.max_k
MIN_BUDGET_TOKENS = 50  # less holds no memory worth reading
MAX_BUDGET_TOKENS = 100_000
MAX_QUERY_CHARS = 10_000  # a query or task text; the ceiling of recall.max_query_chars
MAX_PATH_CHARS = 1024  # a vault-relative note path or name


def check_budget(budget_tokens: int) -> int:
    """The token budget, refused outside MIN_BUDGET_TOKENS..MAX_BUDGET_TOKENS."""
    if not MIN_BUDGET_TOKENS <= budget_tokens <= MAX_BUDGET_TOKENS:
        raise InvalidRequest(f"budget_tokens must be between {MIN_BUDGET_TOKENS} and {MAX_BUDGET_TOKENS}, "
                             f"not {budget_tokens}")
    return budget_tokens
