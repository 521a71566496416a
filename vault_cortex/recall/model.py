"""The ranking model: the numbers recall learnt from data, shipped as a versioned file beside the embedding model.

Settings are what a person can reason about (modes, regions, budgets, thresholds, switches). The numbers here were
fitted or calibrated on data (`tests/bench/fit_gate.py` writes the file; `tests/bench/locomo.py` and
`tests/bench/second_look.py` measure them): the fusion weights, the shares the ranking's cues close, and the push
gate's logistic regression with its calibrated floor and second-look threshold. The file names its version, where
its numbers came from (which data, which command) and a sha256 of its content; it is read and checked once, when
a vault opens, so a damaged or foreign file is a clear error at start, never in the middle of a request.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

import msgspec

from vault_cortex.errors import ModelUnavailable

MODEL_VERSION = 2  # the layout this code reads; a file of another version is refused (2: the gate's `time` is `when`)
MODEL_PATH = Path(__file__).resolve().parents[1] / "index" / "data" / "ranking-model.json"
# The push gate's features (recall/gate.py computes them), in the order the file lists them.
GATE_FEATURES = ("relevance", "dense", "lexical", "cosine", "coverage", "rank", "margin", "gap", "region",
                 "recency", "known", "names", "words", "matched", "rare_words", "names_missed", "lead", "cosine_rank",
                 "rare_rank", "asks", "length", "person_missed", "when", "dated", "thread")

Share = Annotated[float, msgspec.Meta(ge=0, le=1)]


class Fusion(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The shares of the dense (meaning) and lexical (BM25) scores in a candidate's relevance."""

    dense: Annotated[float, msgspec.Meta(ge=0)]
    lexical: Annotated[float, msgspec.Meta(ge=0)]


class Cues(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How far each ranking cue raises a memory: the share of what its score lacks of 1 that it closes (the company
    lift: of what its relevance lacks). See docs/recall.md for what each cue reads."""

    company: Share  # its best neighbour among the candidates (a note it links with, the section beside it)
    session: Share  # the best other candidate of its conversation session
    person: Share  # by or about a person the query names
    when: Share  # holds a time expression, the query asking when
    dated: Share  # written in a time the query names
    answer: Share  # answers a question among the candidates (the note it follows asks one)


class Gate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The push gate: a logistic regression over the ranking's features, and its calibrated floor and second look."""

    intercept: float
    weights: dict[str, float]  # log-odds per unit of each feature; a feature left out weighs 0
    floor: Share  # once pushing, a memory whose own probability reaches this goes along
    second_look: Share  # the Stop hook looks again when a memory's own probability reaches this


class Provenance(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where the numbers came from."""

    data: str  # which data they were fitted on
    command: str  # the command that wrote them
    note: str = ""


class RankingModel(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    version: int
    provenance: Provenance
    fusion: Fusion
    cues: Cues
    gate: Gate


def checksum(document: dict[str, Any]) -> str:
    """sha256 of a model document without its own `sha256`: its keys sorted, compact, UTF-8."""
    body = {k: v for k, v in document.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def encode(model: RankingModel) -> bytes:
    """The file's text for a model, with its checksum (what `tests/bench/fit_gate.py --write` writes)."""
    document = msgspec.to_builtins(model)
    document["sha256"] = checksum(document)
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def decode(raw: bytes, where: str) -> RankingModel:
    """A model from its file's bytes, checked: parsed, of this version, its checksum matching, its gate naming only
    known features; anything else raises ModelUnavailable naming `where` and what is wrong."""
    fix = "reinstall vault-cortex, or write it again with `python tests/bench/fit_gate.py --write`"
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelUnavailable(f"the ranking model {where} is not JSON ({exc}): {fix}") from exc
    if not isinstance(document, dict):
        raise ModelUnavailable(f"the ranking model {where} is not a JSON object: {fix}")
    if document.get("version") != MODEL_VERSION:
        raise ModelUnavailable(f"the ranking model {where} is version {document.get('version')!r}; this vault-cortex "
                               f"reads version {MODEL_VERSION}: {fix}")
    if document.get("sha256") != checksum(document):
        raise ModelUnavailable(f"the ranking model {where} does not match its sha256 (changed or damaged): {fix}")
    try:
        model = msgspec.convert({k: v for k, v in document.items() if k != "sha256"}, RankingModel)
    except msgspec.ValidationError as exc:
        raise ModelUnavailable(f"the ranking model {where} is malformed ({exc}): {fix}") from exc
    unknown = sorted(set(model.gate.weights) - set(GATE_FEATURES))
    if unknown:
        raise ModelUnavailable(f"the ranking model {where} weighs unknown gate features {unknown}: {fix}")
    if model.fusion.dense + model.fusion.lexical == 0:
        raise ModelUnavailable(f"the ranking model {where} gives both fusion weights 0: {fix}")
    return model


def load_model(path: Path = MODEL_PATH) -> RankingModel:
    """The ranking model in `path` (the shipped one by default), read and checked (a few kilobytes: each vault
    that opens reads it once)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelUnavailable(f"the ranking model {path} cannot be read ({exc}): reinstall vault-cortex") from exc
    return decode(raw, str(path))
