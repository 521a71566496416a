"""Recall: from a query to grouped, explained, token-budgeted memories.

Lives here: the ranking maths, the link graph and its proximity, the recall pipeline and packing.
May import `index` and `files` (and `errors`, `config`); never `identity`, `sleep`, the facade or adapters.
"""
