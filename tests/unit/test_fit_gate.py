"""The gate's fit is shipped by one command: `tests/bench/fit_gate.py --write` puts the fitted coefficients, floor and
second look into the ranking model (vault_cortex/index/data/ranking-model.json, with a new checksum) and the
threshold a person may change into its default (vault_cortex/config.py and the starter config), so a refit after a
ranking change is one step."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from tests.bench import fit_gate
from vault_cortex.config import PushSettings, parse_settings
from vault_cortex.recall.model import GATE_FEATURES, load_model


def shipped() -> tuple[dict[str, float], dict[str, float]]:
    gate = load_model().gate
    constants = {"threshold": PushSettings().threshold, "floor": gate.floor, "second_look": gate.second_look,
                 "intercept": gate.intercept}
    return constants, {k: gate.weights[k] for k in GATE_FEATURES}


def copies(tmp_path: Path) -> tuple[Path, Path, Path]:
    config_py, template, model = tmp_path / "config.py", tmp_path / "config.toml", tmp_path / "ranking-model.json"
    shutil.copy(fit_gate.CONFIG_PY, config_py)
    shutil.copy(fit_gate.TEMPLATE, template)
    shutil.copy(fit_gate.MODEL, model)
    return config_py, template, model


def test_writing_the_shipped_fit_changes_no_byte(tmp_path: Path) -> None:
    config_py, template, model = copies(tmp_path)
    fit_gate.write_defaults(*shipped(), config_py=config_py, template=template, model=model)
    assert config_py.read_text() == fit_gate.CONFIG_PY.read_text()
    assert template.read_text() == fit_gate.TEMPLATE.read_text()
    assert model.read_bytes() == fit_gate.MODEL.read_bytes()


def test_a_new_fit_is_written_to_the_model_and_its_threshold_to_the_defaults(tmp_path: Path) -> None:
    config_py, template, model = copies(tmp_path)
    constants, weights = shipped()
    constants = {**constants, "threshold": 0.41, "floor": 0.12, "second_look": 0.2, "intercept": -4.5}
    weights = {k: round(i / 7 - 1, 3) for i, k in enumerate(weights)}
    fit_gate.write_defaults(constants, weights, config_py=config_py, template=template, model=model)
    text = template.read_text()
    assert parse_settings(tomllib.loads(text), env={}).push.threshold == 0.41
    assert "default 0.41." in text
    gate = load_model(model).gate  # read and checked: its checksum is the new content's
    assert (gate.floor, gate.second_look, gate.intercept) == (0.12, 0.2, -4.5)
    assert gate.weights == weights
    assert load_model(model).provenance == load_model().provenance, "where the numbers came from is kept"
    source = config_py.read_text()
    assert "    threshold: float = 0.41  #" in source
    assert max(len(line) for line in source.splitlines()) <= 120


def test_the_setting_chosen_has_the_best_coverage_that_meets_the_targets_asked_for() -> None:
    def figures(t: float, floor: float) -> fit_gate.Figures:  # a lower threshold: more coverage, less precision
        return fit_gate.Figures(coverage=1 - t, precision=0.5 + t, memory_precision=0.5, fired=1 - t / 2,
                                off_topic=0.0, per_injection=2.0)

    assert fit_gate.best_setting(figures, fit_gate.meets_targets)[0] == 0.2  # precision 0.70 at 0.20
    assert fit_gate.best_setting(figures)[0] == 0.22  # the training room asks 0.72
