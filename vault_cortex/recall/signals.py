"""A candidate's signals, typed, pure: the ones every mode weighs, and the cues it met, each concept under one name
(the ranking model's `when` share and the `when` cue a memory meets). A hit reports them as one mapping, name →
value (`named`), in this order.
"""

from __future__ import annotations

import msgspec

from vault_cortex.recall.question import Match


class Signals(msgspec.Struct, frozen=True, kw_only=True):
    """What a mode weighs (config.SIGNALS), each in [0, 1], and a raw capture's layer factor (`rank.layer_factor`)."""

    relevance: float
    region: float
    importance: float
    coactivation: float
    graph: float
    recency: float
    resonance: float
    raw: float | None = None  # a raw capture's factor; None for every other note

    def named(self) -> dict[str, float]:
        """The signals by name, as a hit reports them and a mode's weights name them (`raw` only when set)."""
        out = {"relevance": self.relevance, "region": self.region, "importance": self.importance,
               "coactivation": self.coactivation, "graph": self.graph, "recency": self.recency,
               "resonance": self.resonance}
        if self.raw is not None:
            out["raw"] = self.raw
        return out


class Cued(msgspec.Struct, frozen=True, kw_only=True):
    """The cues a candidate met, each the share of what its score lacks of 1 that it closes (None: not met); the
    ranking model's `Cues` says how far each raises."""

    session: float | None = None  # the best other candidate of its conversation session (its share × relevance)
    person: float | None = None  # by or about a person the query names
    when: float | None = None  # holds a time, the query asking when
    dated: float | None = None  # written in a time the query names
    answer: float | None = None  # answers a question among the candidates (its share × the question's relevance)

    def met(self) -> dict[str, float]:
        """The cues met by name, in the order they raise a score."""
        shares = {"session": self.session, "person": self.person, "when": self.when, "dated": self.dated,
                  "answer": self.answer}
        return {name: share for name, share in shares.items() if share is not None}

    def raised(self, score: float) -> float:
        """A score raised by the cues met: each closes its share of the way left to 1, so the score stays in [0, 1]
        and a weak match gains more than a strong one."""
        for share in self.met().values():
            score += (1.0 - score) * share
        return score


def phrases(cued: Cued, m: Match) -> list[str]:
    """The why-line's words for the person, time and dated cues a candidate met."""
    out = []
    if cued.person is not None:
        out.append(f"by or about {m.person}, whom the query names")
    if cued.when is not None:
        out.append("holds a time, as the query asks when")
    if cued.dated is not None:
        out.append(f"written {m.period}, as the query names")
    return out
