"""The FTS5 query text, pure: a query's words OR-ed for BM25, stopwords dropped."""

from __future__ import annotations

import re

# Words too common to help BM25; a query made only of them falls back to all its words.
_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours yourself
    yourselves ever
    """.split()
)
WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(query: str) -> str:
    """An FTS5 MATCH expression: the query's words OR-ed, stopwords dropped, each quoted."""
    words = [w.lower() for w in WORD.findall(query)]
    kept = [w for w in words if w not in _STOPWORDS] or words
    unique = list(dict.fromkeys(kept))
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in unique)
