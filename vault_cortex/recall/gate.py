"""The push gate, pure: the chance that a recalled memory bears on a prompt, from the ranking's own features.

A logistic regression over a handful of features every ranked candidate already has (see FEATURES). It is
fitted by `tests/bench/fit_gate.py` on the LoCoMo development set plus off-topic prompts, and its
coefficients ship in the ranking model (recall/model.py), a versioned file beside the embedding model; the vault's
config keeps what a person decides (`push.threshold`, `push.most`).
The probability is calibrated on that data: 0.6 means that, of memories given 0.6, about six in ten were
evidence for the question asked. It is an estimate, not a guarantee.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

import msgspec

from vault_cortex.config import PushSettings
from vault_cortex.index.fts import STOPWORDS, WORD
from vault_cortex.recall.answer import asks
from vault_cortex.recall.model import GATE_FEATURES as FEATURES
from vault_cortex.recall.model import Gate

__all__ = ["CANDIDATES", "FEATURES", "Cue", "PushGate", "Verdict", "choose", "coverage", "features", "found",
           "found_in_each", "judge", "logistic", "places", "push_gate", "why"]
CANDIDATES = 10  # the best-ranked candidates the gate judges (the fit's rows were these)
SPECIFIC_WORDS = 6  # a prompt with this many content words counts as fully specific ("tell me more" has 1)
MIN_WORDS = 3  # coverage is out of at least this many query words
MATCHED = 4  # query words a memory shares, counted up to this many (one shared word proves little)
MARGIN_NEXT = 3  # the margin is to the mean score of this many candidates below
WHY_PARTS = 2  # features named in a why-line
LENGTH = 300  # a memory's length counts up to this many characters (a one-line reply holds little)


class Cue(msgspec.Struct, frozen=True, kw_only=True):
    """What the gate reads of one ranked candidate (best first in its list)."""

    score: float  # the mode-weighted ranking score
    relevance: float  # fused dense + lexical, relative to the query's best
    dense: float  # normalised dense part
    lexical: float  # normalised lexical part
    cosine: float  # raw cosine of the query and the note's best chunk
    text: str  # title and best chunk, for query-term coverage
    region: float  # the region weight signal
    recency: float  # the recency signal
    person: bool = False  # by or about a person the query names (the ranking's person cue)
    when: bool = False  # holds a time expression, the query asking when (the ranking's when cue)
    dated: bool = False  # written in a time the query names (the ranking's dated cue)
    thread: bool = False  # a few exchanges from the best candidate in its conversation (`pipeline.in_thread`)


class PushGate(msgspec.Struct, frozen=True, kw_only=True):
    """The push gate as one recall applies it: the person's threshold and size, the model's floor and coefficients."""

    threshold: float  # push only when a memory not yet shown reaches this probability
    floor: float  # then each memory whose own probability reaches this goes along
    most: int  # memories in one push at most
    intercept: float
    weights: dict[str, float]


def push_gate(push: PushSettings, model: Gate) -> PushGate:
    """The gate of a vault's `[push]` settings and the ranking model's coefficients (the floor never above the
    threshold a person set)."""
    return PushGate(threshold=push.threshold, floor=min(model.floor, push.threshold), most=push.most,
                    intercept=model.intercept, weights=dict(model.weights))


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """The gate's estimate for one candidate and the features it came from."""

    probability: float
    features: dict[str, float]
    why: str


def content_words(text: str) -> set[str]:
    """Lower-cased words of three letters or more that are not stopwords, cut to a 6-letter stem."""
    return {w.lower()[:6] for w in WORD.findall(text) if len(w) > 2 and w.lower() not in STOPWORDS}


def coverage(query_words: set[str], text: str) -> float:
    """Share of the query's content words (stemmed) found in the text, out of at least MIN_WORDS: the one word
    of "tell me more" found in a chat turn is not full coverage."""
    return len(found(query_words, text)) / max(len(query_words), MIN_WORDS)


def names(text: str) -> set[str]:
    """Capitalised words not at the start of a sentence: names, places, products (stemmed like content words)."""
    out = set()
    for m in re.finditer(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+)", text.strip()):
        w = m.group(1).lower()
        if len(w) > 2 and w not in STOPWORDS:
            out.add(w[:6])
    return out


def found(stems: set[str], text: str) -> set[str]:
    """The given stems among the text's content words: `stems & content_words(text)`."""
    return found_in_each(stems, [text])[0]


def found_in_each(stems: set[str], texts: Sequence[str]) -> list[set[str]]:
    """`found` for each text, in one pass over them all, without stemming every word (a query's few words
    against the hundred passages the ranking gathered)."""
    out: list[set[str]] = [set() for _ in texts]
    lows = [t.lower() for t in texts]  # lower-cased before joining: a few letters lower-case to two
    low = "\n".join(lows)
    if not stems or not any(s in low for s in stems):
        return out
    starts = list(itertools.accumulate((len(t) + 1 for t in lows[:-1]), initial=0))
    for m in _stem_pattern(frozenset(stems)).finditer(low):
        w = m.group(0)
        if len(w) > 2 and w not in STOPWORDS and w[:6] in stems:
            out[bisect.bisect_right(starts, m.start()) - 1].add(w[:6])
    return out


@lru_cache(maxsize=64)
def _stem_pattern(stems: frozenset[str]) -> re.Pattern[str]:
    """Whole (lower-cased) words that start with one of the stems (the caller checks the word's stem)."""
    alternatives = "|".join(re.escape(s) for s in sorted(stems, key=len, reverse=True))
    return re.compile(rf"\b(?:{alternatives})\w*")


def features(query: str, cues: Sequence[Cue], seen: Sequence[str] = ()) -> list[dict[str, float]]:
    """The gate's features of every candidate, in the candidates' (ranked) order.

    `seen` is the text of every candidate the ranking gathered (more than the cues): a query word or name
    found in none of them is likely not in the vault at all, the mark of a prompt about something else; a
    word found in few of them is a rare one, and a memory holding the prompt's rare words is likelier its answer.
    A memory that ends by asking something (`asks`) is more often the question than its answer, a one-line reply
    (`length`) holds little, one not by or about the person the prompt names while others are (`person_missed`;
    0 when none is: a vault without people, a prompt naming no one, lose nothing) is likelier about someone else,
    and one holding a time when the prompt asks when (`when`), or written in the time the prompt names (`dated`),
    likelier its answer. In a conversation (exchanges linked by `follows::`) the answer is often told a turn or
    two from the best match (`thread`).
    """
    words = content_words(query)
    proper = names(query)
    stems = words | proper
    gathered = found_in_each(stems, [*(c.text for c in cues), *seen])
    held = gathered[: len(cues)]
    vocab = set().union(*gathered)
    known = len(words & vocab) / len(words) if words else 0.0
    named = len(proper & vocab) / len(proper) if proper else 1.0
    rarity = {w: math.log((len(gathered) + 1) / (sum(w in g for g in gathered) + 0.5)) for w in words}
    rare_total = math.fsum(rarity.values()) or 1.0  # fsum: exact, so the order of a set of words cannot move it
    top = cues[0].score if cues else 0.0
    lead = top - cues[1].score if len(cues) > 1 else top
    rare = [math.fsum(rarity[w] for w in words & has) / rare_total for has in held]
    by_cosine, by_rare = places([c.cosine for c in cues]), places(rare)
    # the prompt names someone these memories are by or about: one that is not is likelier about someone else
    asked_about = any(c.person for c in cues)
    out = []
    for i, (c, has) in enumerate(zip(cues, held, strict=True)):
        below = [n.score for n in cues[i + 1:i + 1 + MARGIN_NEXT]]
        margin = c.score - (sum(below) / len(below) if below else 0.0)
        shared = words & has
        out.append({
            "relevance": c.relevance, "dense": c.dense, "lexical": c.lexical, "cosine": c.cosine,
            "coverage": coverage(words, c.text), "rank": math.log1p(i), "margin": margin,
            "gap": top - c.score, "matched": min(len(shared), MATCHED) / MATCHED,
            "region": c.region, "recency": c.recency, "known": known, "names": named,
            "words": min(len(words), SPECIFIC_WORDS) / SPECIFIC_WORDS,
            "rare_words": rare[i], "names_missed": len(proper - has) / len(proper) if proper else 0.0, "lead": lead,
            "cosine_rank": math.log1p(by_cosine[i]), "rare_rank": math.log1p(by_rare[i]),
            "asks": float(asks(c.text)), "length": min(len(c.text), LENGTH) / LENGTH,
            "person_missed": float(asked_about and not c.person), "when": float(c.when), "dated": float(c.dated),
            "thread": float(c.thread),
        })
    return out


def places(values: Sequence[float]) -> list[int]:
    """Each value's place when they are ordered highest first (0 for the highest; ties keep their order): how a
    candidate compares with the others gathered for the same prompt, which its own value does not say."""
    out = [0] * len(values)
    for place, i in enumerate(sorted(range(len(values)), key=lambda j: -values[j])):
        out[i] = place
    return out


# A recall asked for (the MCP tool) answers that nothing in the vault bears on the query when its best memory's chance
# is under this: held out on the development set (`tests/bench/fit_gate.py` prints the curve), 0.08 still answers
# 98.8% of the questions whose evidence is among the candidates and 18% of off-topic prompts (nonsense: none);
# the push's own floor (0.15) would refuse 7.7% of the answerable ones, which an agent that asked cannot afford.
ASKED_FLOOR = 0.08


def choose(probabilities: Sequence[float], threshold: float, floor: float, most: int) -> list[int]:
    """The candidates to push, likeliest first: none unless one reaches `threshold`; then, each on its own
    probability, those at or above `floor`, at most `most` (so one when only one is likely, up to `most` when
    several are). With each memory's probability calibrated on its own, the likeliest `most` are the set of that
    size likeliest to hold what the prompt needs."""
    if max(probabilities, default=0.0) < threshold:
        return []
    order = sorted(range(len(probabilities)), key=lambda i: -probabilities[i])
    return [i for i in order if probabilities[i] >= floor][:most]


def logistic(x: Mapping[str, float], weights: Mapping[str, float], intercept: float) -> float:
    """The model's probability for one feature vector."""
    z = intercept + sum(weights.get(k, 0.0) * v for k, v in x.items())
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


_PHRASES = {
    "cosine": "meaning {v:.2f}", "coverage": "{v:.0%} of the words",
    "margin": "ahead of the next by {v:.2f}", "relevance": "relevance {v:.2f}",
    "lexical": "words {v:.2f}", "dense": "meaning {v:.2f}",
    "rank": "near the top", "gap": "close to the best result", "region": "from a weighted region",
    "recency": "recent", "known": "the vault knows {v:.0%} of the words", "names": "names it knows",
    "words": "a specific prompt", "matched": "shares several of its words",
    "rare_words": "holds its rarer words", "names_missed": "{v:.0%} of the names missing", "lead": "a clear best match",
    "cosine_rank": "among the closest in meaning", "rare_rank": "among those holding its rarer words",
    "asks": "it asks something", "length": "more than a one-line reply", "person_missed": "not by whom it names",
    "when": "holds a time, as the prompt asks when", "dated": "written in the time the prompt names",
    "thread": "a few exchanges from the best match in its conversation",
}


def why(x: Mapping[str, float], weights: Mapping[str, float]) -> str:
    """The features that raised the probability most, in words."""
    pushes = sorted(((weights.get(k, 0.0) * v, k) for k, v in x.items() if weights.get(k, 0.0) * v > 0.05),
                    reverse=True)
    return "; ".join(_PHRASES[k].format(v=x[k]) for _, k in pushes[:WHY_PARTS]) or "no strong sign"


def judge(query: str, cues: Sequence[Cue], weights: Mapping[str, float], intercept: float,
          seen: Sequence[str] = ()) -> list[Verdict]:
    """The gate's verdict on each candidate, in their order."""
    out = []
    for x in features(query, cues, seen):
        out.append(Verdict(probability=round(logistic(x, weights, intercept), 4),
                           features={k: round(v, 4) for k, v in x.items()}, why=why(x, weights)))
    return out
