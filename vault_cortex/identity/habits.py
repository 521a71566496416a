"""Habits: procedural memory in `habits/` notes, surfaced by trigger words, meaning or agent tool calls.

A habit note carries `triggers` (words or phrases), `tool_patterns` (`Edit`, `mcp__*`, `Bash(pytest*)`),
`weight` (rises when the habit is followed) and `baseline` (where sleep lets the weight decay back to).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import msgspec

from vault_cortex.config import Settings
from vault_cortex.errors import InvalidRequest
from vault_cortex.files.activity import FeedbackEvent, current_client
from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.paths import note_name
from vault_cortex.identity.resonance import (
    DEFAULT_WEIGHT,
    DecayPlan,
    WeightChange,
    as_weight,
    bump,
    decay_folder,
    last_feedback,
)
from vault_cortex.index.vectors import Vector
from vault_cortex.recall.recaller import Recaller
from vault_cortex.store.change import Vault

HABITS_DIR = "habits"
SEMANTIC_THRESHOLD = 0.45  # least cosine for a habit to match without a trigger word (MiniLM's scale)
REINFORCE_STEP = 0.1  # weight added to a habit each time it is followed, capped at 1.0

_CALL = re.compile(r"\s*([^()\s]+)\s*(?:\((.*)\))?\s*", re.S)
_SHELL_SPLIT = re.compile(r"&&|\|\||[;|\n]")
_ENV_ASSIGN = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+")
_COMMENT = re.compile(r"%%.*?%%", re.S)
_SUFFIX = r"(?:s|es|d|ed|ing)?"  # so `fix` matches `fixes` and `fixing` but not `fixture`


class HabitMatch(msgspec.Struct, frozen=True, kw_only=True):
    """One habit that applies to a context, with why it matched and the text to show."""

    path: str
    title: str
    score: float  # match strength (1 for a trigger or tool pattern, else the similarity) scaled by the weight
    weight: float
    why: str
    trigger: str | None = None
    tool_pattern: str | None = None
    similarity: float = 0.0
    text: str  # the habit's lead (When / Do / Why), cut to fit the token cap
    tokens: int


class Habits(msgspec.Struct, frozen=True, kw_only=True):
    """The habits for a context, strongest first, at most `habits.max` within `habits.token_cap` tokens."""

    text: str
    tool: str | None
    habits: list[HabitMatch]
    markdown: str  # ready to inject: one bullet per habit
    tokens: int
    took_ms: float


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A habit that matched, before its text is read and fitted into the cap."""

    path: str
    score: float
    weight: float
    why: str
    trigger: str | None = None
    tool_pattern: str | None = None
    similarity: float = 0.0


# -- pure ------------------------------------------------------------------------------------------------
def tool_matches(pattern: str, tool_name: str, tool_input: Mapping[str, Any] | None = None) -> bool:
    """Whether a tool pattern (`Edit`, `mcp__*`, `Bash(pytest*)`, `Edit(*.py)`) matches a tool call.

    The name part is a case-sensitive glob over the tool name; an argument glob must match the input's
    `command` (or any part of a compound shell command) or its `file_path`. `:*` at its end means a prefix.
    """
    m = _CALL.fullmatch(pattern or "")
    if m is None or not tool_name or not fnmatchcase(tool_name, m[1]):
        return False
    arg = (m[2] or "").strip()
    if arg in ("", "*"):
        return True
    arg = arg[:-2] + "*" if arg.endswith(":*") else arg
    return any(fnmatchcase(candidate, arg) for candidate in tool_arguments(tool_input or {}))


def tool_arguments(tool_input: Mapping[str, Any]) -> list[str]:
    """The strings an argument glob is tried on: the command, each part of it, and the file path."""
    out = []
    command = tool_input.get("command")
    if isinstance(command, str) and command.strip():
        out.append(command.strip())
        for part in _SHELL_SPLIT.split(command):
            part = part.strip()
            out += [part, _ENV_ASSIGN.sub("", part)] if part else []
    path = tool_input.get("file_path")
    if isinstance(path, str) and path:
        out.append(path)
    return list(dict.fromkeys(out))


def parse_tool(tool: str) -> tuple[str, dict[str, Any]]:
    """`Bash(pytest -q)` → ("Bash", {"command": ..., "file_path": ...}); a bare name has no input."""
    m = _CALL.fullmatch(tool)
    if m is None or m[2] is None:
        return tool.strip(), {}
    arg = m[2].strip()
    return m[1], {"command": arg, "file_path": arg}


def as_list(value: object) -> list[str]:
    """A frontmatter list of words (or one word) as strings; anything else as empty."""
    items: Iterable[object] = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(x).strip() for x in items if x is not None and str(x).strip()]


def trigger_hit(triggers: Sequence[str], text: str) -> str | None:
    """The first trigger that occurs in the text as a whole word or phrase (plural and -ed/-ing forms too)."""
    lowered = text.casefold().replace("\u2019", "'")
    for trigger in triggers:
        t = trigger.casefold().replace("\u2019", "'").strip()
        if t and re.search(rf"(?<!\w){re.escape(t)}{_SUFFIX}(?!\w)", lowered):
            return trigger
    return None


def strength(weight: float, base: float) -> float:
    """A match's score: its base strength, scaled from half (weight 0) to full (weight 1)."""
    return round(base * (0.5 + 0.5 * weight), 4)


def candidate(path: str, fm: Mapping[str, Any], text: str, similarity: float, threshold: float,
              tool_name: str | None, tool_input: Mapping[str, Any]) -> Candidate | None:
    """Whether and how strongly one habit applies: a tool pattern, then a trigger word, then meaning."""
    weight = as_weight(fm.get("weight"), as_weight(fm.get("baseline"), DEFAULT_WEIGHT))
    if tool_name:
        for pattern in as_list(fm.get("tool_patterns")):
            if tool_matches(pattern, tool_name, tool_input):
                return Candidate(path=path, score=strength(weight, 1.0), weight=weight, tool_pattern=pattern,
                                 similarity=similarity, why=f"tool pattern {pattern}")
    trigger = trigger_hit(as_list(fm.get("triggers")), text) if text else None
    if trigger:
        return Candidate(path=path, score=strength(weight, 1.0), weight=weight, trigger=trigger,
                         similarity=similarity, why=f"trigger “{trigger}”")
    if text and similarity >= threshold:
        return Candidate(path=path, score=strength(weight, similarity), weight=weight, similarity=similarity,
                         why=f"similar to the context ({similarity:.2f})")
    return None


def lead(body: str) -> str:
    """A habit's lead: its text before the first sub-heading, without the title and `%% comments %%`."""
    lines: list[str] = []
    for line in _COMMENT.sub("", body).strip().splitlines():
        if line.startswith("## "):
            break
        if not (line.startswith("# ") and not lines):
            lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def render(title: str, text: str) -> str:
    """One markdown bullet for a habit, its text indented under it."""
    rest = "".join(f"\n  {ln}" if ln else "\n" for ln in text.splitlines())
    return f"- **{title}**{rest}"


def fit(text: str, title: str, budget: int, count: Any) -> tuple[str, int] | None:
    """The habit's text cut at line ends so its bullet fits the budget; None when not even one line fits."""
    lines = text.splitlines()
    while lines:
        cut = "\n".join(lines).strip()
        tokens = int(count(render(title, cut)))
        if tokens <= budget:
            return cut, tokens
        lines.pop()
    return None


# -- IO: the index through the Recaller ------------------------------------------------------------------------------
def match(recaller: Recaller, text: str, qvec: Vector | None, *, tool: str | None = None,
          tool_input: Mapping[str, Any] | None = None) -> list[Candidate]:
    """Every habit that applies to the text (and tool call), strongest first."""
    db = recaller.index.db
    paths = db.paths_under(HABITS_DIR)
    threshold = SEMANTIC_THRESHOLD
    sims = recaller.similarity(qvec, paths) if qvec is not None and paths else {}
    tool_name, parsed = parse_tool(tool) if tool else (None, {})
    found = []
    for path in paths:
        c = candidate(path, db.frontmatter(path) or {}, text, round(sims.get(path, 0.0), 4), threshold,
                      tool_name, tool_input if tool_input is not None else parsed)
        found += [c] if c else []
    return sorted(found, key=lambda c: (-c.score, c.path))


def habits_for_context(recaller: Recaller, vault: Vault, text: str, *, tool: str | None = None,
                       tool_input: Mapping[str, Any] | None = None) -> Habits:
    """Habits for a context (trigger, meaning or tool pattern), strongest first, within the count and token caps."""
    started = time.perf_counter()
    settings = recaller.settings
    text = (text or "").strip()[: settings.recall.max_query_chars]
    if not text and not tool:
        raise InvalidRequest("give a context text or a tool to find habits for")
    qvec = recaller.index.embedder.embed([text])[0] if text else None
    limit = settings.habits.max
    budget = settings.habits.token_cap
    chosen: list[HabitMatch] = []
    for c in match(recaller, text, qvec, tool=tool, tool_input=tool_input):
        if len(chosen) >= limit:
            break
        doc = vault.read_note(c.path)
        title = note_name(doc.path)
        fitted = fit(lead(body_text(doc.content)), title, budget, recaller.index.count_tokens)
        if fitted is None:
            continue
        budget -= fitted[1]
        chosen.append(HabitMatch(path=c.path, title=title, score=c.score, weight=c.weight, why=c.why,
                                 trigger=c.trigger, tool_pattern=c.tool_pattern, similarity=c.similarity,
                                 text=fitted[0], tokens=fitted[1]))
    markdown = "\n".join(render(h.title, h.text) for h in chosen)
    return Habits(text=text, tool=tool, habits=chosen, markdown=markdown + "\n" if markdown else "",
                  tokens=sum(h.tokens for h in chosen), took_ms=round((time.perf_counter() - started) * 1000, 2))


def reinforce(vault: Vault, path: str, *, context: str | None = None) -> WeightChange:
    """A habit was followed: raise its weight (one line) and log it as useful feedback."""
    if not path.startswith(HABITS_DIR + "/"):
        raise InvalidRequest(f"{path!r} is not a habit (habits live in {HABITS_DIR}/)")
    step = REINFORCE_STEP
    change = bump(vault, path, step, "reinforced: the habit was followed")
    vault.log(FeedbackEvent(ts=vault.clock(), client=current_client(), path=path, useful=True, query=context))
    return change


def half_life(settings: Settings) -> float:
    """Days for the distance between a habit's weight and its baseline to halve."""
    return settings.habits.half_life_days


def decay_habits(vault: Vault, *, dry_run: bool = True) -> DecayPlan:
    """Preview (or apply) decay of every habit's weight toward its baseline (a full sleep plans the same)."""
    return decay_folder(vault, HABITS_DIR, half_life(vault.settings), last_feedback(vault.root, HABITS_DIR), dry_run)


