"""The bounds of a request, defined once: the facade, the config checks, HTTP and MCP all read them.

A vault's `recall.max_k` and `recall.max_query_chars` narrow the ceilings below per vault (the facade checks
them); the surfaces put the ceilings themselves in their schemas.
"""

from __future__ import annotations

import re

from vault_cortex.errors import InvalidRequest

MIN_K = 1
MAX_K = 1000  # the ceiling of recall.max_k
MIN_BUDGET_TOKENS = 50  # less holds no memory worth reading
MAX_BUDGET_TOKENS = 100_000
MAX_QUERY_CHARS = 10_000  # a query or task text; the ceiling of recall.max_query_chars
MAX_PATH_CHARS = 1024  # a vault-relative note path or name
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def check_budget(budget_tokens: int) -> int:
    """The token budget, refused outside MIN_BUDGET_TOKENS..MAX_BUDGET_TOKENS."""
    if not MIN_BUDGET_TOKENS <= budget_tokens <= MAX_BUDGET_TOKENS:
        raise InvalidRequest(f"budget_tokens must be between {MIN_BUDGET_TOKENS} and {MAX_BUDGET_TOKENS}, "
                             f"not {budget_tokens}")
    return budget_tokens


def lone_surrogate(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Where `text` (between `start` and `end`) first holds a lone surrogate, None if nowhere: a broken escape
    from a client, or a byte that was not UTF-8 decoded with `surrogateescape`. Such text cannot be saved as
    UTF-8."""
    found = _LONE_SURROGATE.search(text, start, len(text) if end is None else end)
    return None if found is None else found.start()


def check_unicode(text: str, what: str) -> str:
    """`text`, refused (InvalidRequest naming `what`) when it holds a lone surrogate."""
    if lone_surrogate(text) is not None:
        raise InvalidRequest(f"{what} is not valid Unicode text (it holds a lone surrogate)")
    return text
