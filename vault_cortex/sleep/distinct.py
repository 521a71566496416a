"""What is distinctive in each note of a vault, and how much of it two notes share. Pure: texts in, values out.

Pages written from one template (plugin pages, video notes, people pages) are close in embedding space
because of what they share — headings, "Developed by:", the badges, the footer — not because they say the
same thing. So similarity only proposes; a merge, a supersession or a related_to link also needs evidence
from what each note says of its own:

1. Boilerplate lines are stripped: a line (trimmed, case folded) written in `BOILERPLATE_NOTES` or more notes
   of the vault is template, not content. Link addresses and comments (`%% … %%`, `<!-- … -->`) are not words.
2. Each remaining word weighs its inverse document frequency over the vault, log((notes + 1) ÷ notes with it):
   a word in every plugin page weighs almost nothing, a name or a number written in two notes weighs a lot.
3. Two notes' `overlap` is the weight of the words they share over the weight of the larger note's words
   (1.0: both say the same distinctive things). Over the larger, not the smaller: a short page (an author's,
   naming one plugin) is not the same thing as the long page it names. And two notes that share only the
   words of their titles (a page and the page that links it by name) say nothing alike: `untitled` counts the
   shared words in neither title.

Pages of one template (two notes holding `TEMPLATE_LINES` of the same boilerplate lines) are pages of two
things of one kind — two plugins, two people, two meetings — so sleep never merges them, whatever they share.

One pass over the vault builds the tables (a line and a word count per note), so a sleep of 10,000 notes
spends a fraction of a second here.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

import msgspec

BOILERPLATE_NOTES = 4  # a line in this many notes or more is template (a duplicate group is rarely this large)
TEMPLATE_LINES = 3  # two notes holding this many of the same boilerplate lines are pages of one template
SHOWN = 6  # shared words named in a plan's reason
DISTINCTIVE = 1.0  # least weight of a word named or counted as shared: in at most ~37% (1/e) of the notes, or two
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.S)
_ADDRESS = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|<?(?:https?|obsidian|file)://\S+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be been but by do does for from had has have he her his i if in into is it its me my "
    "of on or our she so than that the their them then there they this to was we were what when which who "
    "will with you your".split())


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """How much of what is distinctive two notes share, and the words that carry the most of it."""

    overlap: float  # shared weight over the larger note's weight, 0..1
    shared: list[str]  # the heaviest shared words, heaviest first
    untitled: int  # shared words in neither note's title: what they say alike beyond naming each other
    template: int  # boilerplate lines both hold: TEMPLATE_LINES or more make them pages of one template


def _line_key(line: str) -> str:
    return " ".join(line.split()).casefold()


def content_lines(text: str) -> list[str]:
    """A note body's lines with comments and link addresses taken out; blank lines dropped."""
    text = _ADDRESS.sub(lambda m: "]" if m.group(0).startswith("]") else " ", _COMMENT.sub(" ", text))
    return [line for line in text.splitlines() if line.strip()]


def words(text: str) -> set[str]:
    """The words of a text, case folded, possessive `'s` dropped, stop words left out."""
    out = set()
    for m in _WORD.finditer(text):
        w = re.sub(r"['’]s$", "", m.group(0).casefold())
        if w not in STOPWORDS:
            out.add(w)
    return out


class Distinct:
    """The vault's boilerplate lines and word weights, built in one pass; a note's distinctive words on demand."""

    def __init__(self, notes: Mapping[str, tuple[str, str]]) -> None:
        """`notes`: path → (title, body without frontmatter), for every note the plan may compare."""
        lines = {p: content_lines(body) for p, (_, body) in notes.items()}
        line_df: Counter[str] = Counter()
        for ls in lines.values():
            line_df.update({_line_key(line) for line in ls})
        self.boilerplate = frozenset(k for k, n in line_df.items() if n >= BOILERPLATE_NOTES)
        self.body = {p: "\n".join(x for x in ls if _line_key(x) not in self.boilerplate) for p, ls in lines.items()}
        self.skeleton = {p: frozenset(k for x in ls if (k := _line_key(x)) in self.boilerplate)
                         for p, ls in lines.items()}
        self.titled = {p: words(title) for p, (title, _) in notes.items()}
        self.terms = {p: words(title) | words(self.body[p]) for p, (title, _) in notes.items()}
        df: Counter[str] = Counter()
        for ts in self.terms.values():
            df.update(ts)
        self.weight = {w: math.log((len(notes) + 1) / n) for w, n in df.items()}
        self.distinctive = min(DISTINCTIVE, math.log((len(notes) + 1) / 2))  # a pair's words, in a tiny vault

    def join(self, path: str, members: Iterable[str]) -> None:
        """A merged note's distinctive words: its members'."""
        self.terms[path] = set().union(*(self.terms.get(m, set()) for m in members))

    def mass(self, path: str) -> float:
        return sum(self.weight[w] for w in self.terms.get(path, ()))

    def evidence(self, a: str, b: str) -> Evidence:
        """What `a` and `b` share of their distinctive words."""
        ta, tb = self.terms.get(a, set()), self.terms.get(b, set())
        shared = sorted(ta & tb, key=lambda w: (-self.weight[w], w))
        large = max(self.mass(a), self.mass(b))
        got = sum(self.weight[w] for w in shared)
        titled = self.titled.get(a, set()) | self.titled.get(b, set())
        return Evidence(overlap=round(got / large, 3) if large > 0 else 0.0,
                        shared=[w for w in shared if self.weight[w] >= self.distinctive][:SHOWN],
                        untitled=sum(1 for w in shared if w not in titled and self.weight[w] >= self.distinctive),
                        template=len(self.skeleton.get(a, frozenset()) & self.skeleton.get(b, frozenset())))


def shared_neighbours(a: Iterable[str], b: Iterable[str], degree: Mapping[str, int], most: int) -> list[str]:
    """Notes both `a` and `b` link with (either way) that link with at most `most` notes: an explicit link path
    a → n → b through a note that is not a hub."""
    return sorted(n for n in set(a) & set(b) if degree.get(n, 0) <= most)


# Similarity proposes; what each note says of its own must back it (boilerplate lines out, words weighed by
# how few notes use them). EVIDENCE: the share of the larger note's distinctive weight two notes
# must have in common to merge, supersede or be suggested related_to (on the development set, true paraphrased
# duplicates share 0.36-0.78, a reversal or a correction 0.48-0.75, two bugs with one symptom 0.24-0.33, two
# pages of one template at most 0.32), with at least EVIDENCE_WORDS shared words in neither title (a page and the
# page naming it share only names). A related_to may instead rest on a link path.
EVIDENCE = 0.35
EVIDENCE_WORDS = 2


def backed(e: Evidence) -> bool:
    """Whether what two similar notes share of their own is enough to merge, supersede or relate them."""
    return e.overlap >= EVIDENCE and e.untitled >= EVIDENCE_WORDS
