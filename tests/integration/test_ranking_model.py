"""The ranking model ships as a versioned, checksummed file beside the embedding model (recall/model.py): the
shipped file loads and says where its numbers came from; a damaged, edited or foreign file is refused with a
sentence naming it, when a vault opens, never in the middle of a request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vault_cortex import Cortex
from vault_cortex.errors import ModelUnavailable
from vault_cortex.recall.model import GATE_FEATURES, MODEL_PATH, MODEL_VERSION, checksum, encode, load_model


def test_the_shipped_model_loads_checked_with_its_provenance() -> None:
    model = load_model()
    assert model.version == MODEL_VERSION
    assert set(model.gate.weights) == set(GATE_FEATURES), "the gate weighs every feature it computes"
    assert "LoCoMo" in model.provenance.data and "tests/bench/fit_gate.py" in model.provenance.command
    document = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    assert document["sha256"] == checksum(document)
    assert encode(model) == MODEL_PATH.read_bytes(), "the file is exactly what fit_gate.py --write writes"
    assert MODEL_PATH.parent == Path(__file__).resolve().parents[2] / "vault_cortex" / "index" / "data", (
        "beside the embedding model's tokenizer, shipped as package data")


def _written(tmp_path: Path, change: dict[str, object], *, resum: bool = True) -> Path:
    document = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    document.update(change)
    if resum:
        document["sha256"] = checksum(document)
    path = tmp_path / "ranking-model.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "resum", "message"),
    [
        ({"version": MODEL_VERSION + 1}, True,
         rf"is version {MODEL_VERSION + 1}; this vault-cortex reads version {MODEL_VERSION}"),
        ({"version": 1}, True, rf"is version 1; this vault-cortex reads version {MODEL_VERSION}"),  # its gate's `time`
        ({"cues": {"company": 0.9, "session": 0.2, "person": 0.4, "when": 0.2, "dated": 0.3, "answer": 0.2}},
         False, r"does not match its sha256"),
        ({"cues": {"company": 3.0, "session": 0.2, "person": 0.4, "when": 0.2, "dated": 0.3, "answer": 0.2}},
         True, r"malformed.*cues\.company"),
        ({"gate": {"intercept": -5.0, "weights": {"vibes": 1.0}, "floor": 0.1, "second_look": 0.2}}, True,
         r"unknown gate features \['vibes'\]"),
    ],
)
def test_a_damaged_or_foreign_model_is_refused_naming_the_file(tmp_path: Path, change: dict[str, object],
                                                                  resum: bool, message: str) -> None:
    path = _written(tmp_path, change, resum=resum)
    with pytest.raises(ModelUnavailable, match=message) as raised:
        load_model(path)
    assert str(path) in str(raised.value) and "fit_gate.py --write" in str(raised.value)


def test_a_file_that_is_not_json_or_is_missing_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "ranking-model.json"
    broken.write_bytes(MODEL_PATH.read_bytes()[:100])
    with pytest.raises(ModelUnavailable, match=r"is not JSON"):
        load_model(broken)
    with pytest.raises(ModelUnavailable, match=r"cannot be read.*reinstall vault-cortex"):
        load_model(tmp_path / "gone.json")


def test_a_vault_reads_the_model_when_it_opens(tmp_path: Path) -> None:
    (tmp_path / ".cortex").mkdir()
    with Cortex.open(tmp_path) as cx:
        assert cx.model == load_model()
        gate = cx.push_gate()
        assert (gate.intercept, gate.weights) == (cx.model.gate.intercept, cx.model.gate.weights)
        assert gate.threshold == cx.settings.push.threshold and gate.floor == cx.model.gate.floor
