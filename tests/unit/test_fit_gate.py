"""The gate's fit is shipped by one command: `tests/bench/fit_gate.py --write` puts the fitted constants where the
defaults live (vault_cortex/config.py and the starter config), so a refit after a ranking change is one step."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

from tests.bench import fit_gate
from vault_cortex.config import GATE_FEATURES, PushSettings, parse_settings
from vault_cortex.recall.gate import logistic


def shipped() -> tuple[dict[str, float], dict[str, float]]:
    push = PushSettings()
    constants = {"threshold": push.threshold, "floor": push.floor, "second_look": push.second_look,
                 "intercept": push.intercept}
    return constants, {k: push.weights[k] for k in GATE_FEATURES}


def copies(tmp_path: Path) -> tuple[Path, Path]:
    config_py, template = tmp_path / "config.py", tmp_path / "config.toml"
    shutil.copy(fit_gate.CONFIG_PY, config_py)
    shutil.copy(fit_gate.TEMPLATE, template)
    return config_py, template


def test_writing_the_shipped_fit_changes_no_byte(tmp_path: Path) -> None:
    config_py, template = copies(tmp_path)
    fit_gate.write_defaults(*shipped(), config_py=config_py, template=template)
    assert config_py.read_text() == fit_gate.CONFIG_PY.read_text()
    assert template.read_text() == fit_gate.TEMPLATE.read_text()


def test_a_new_fit_is_written_to_the_defaults_and_the_starter_config_with_its_comments(tmp_path: Path) -> None:
    config_py, template = copies(tmp_path)
    constants, weights = shipped()
    constants = {**constants, "threshold": 0.41, "floor": 0.12, "second_look": 0.2, "intercept": -4.5}
    weights = {k: round(i / 7 - 1, 3) for i, k in enumerate(weights)}
    fit_gate.write_defaults(constants, weights, config_py=config_py, template=template)
    text = template.read_text()
    push = parse_settings(tomllib.loads(text), env={}).push
    assert (push.threshold, push.floor, push.second_look, push.intercept) == (0.41, 0.12, 0.2, -4.5)
    assert push.weights == weights
    assert "default 0.41." in text and "Default -4.5." in text
    source = config_py.read_text()
    namespace: dict[str, object] = {}
    exec(compile(re.search(r"def _default_gate.*?\}\n", source, re.S).group(0), "config", "exec"), namespace)
    assert namespace["_default_gate"]() == weights  # type: ignore[operator]
    assert "    threshold: float = 0.41  #" in source and "    intercept: float = -4.5\n" in source
    assert max(len(line) for line in source.splitlines()) <= 120


def test_a_vault_made_with_an_older_fit_keeps_it_whole_after_an_upgrade() -> None:
    """A config made from an older starter vault lists a [push.weights] table without the features added since:
    it loads, and its gate is the older fit whole (a feature the table does not name weighs 0), not a mix of
    its weights with the new defaults."""
    older = {"relevance": -0.401, "cosine": 2.812, "coverage": 2.495, "rank": -1.057, "gap": -2.498}
    push = parse_settings({"push": {"threshold": 0.43, "intercept": -4.838, "weights": older}}, env={}).push
    assert push.weights == older and (push.threshold, push.intercept) == (0.43, -4.838)
    x = {k: 0.5 for k in GATE_FEATURES}
    assert logistic(x, push.weights, push.intercept) == logistic({k: 0.5 for k in older}, older, -4.838)


def test_the_setting_chosen_has_the_best_coverage_that_meets_the_targets_asked_for() -> None:
    def figures(t: float, floor: float) -> fit_gate.Figures:  # a lower threshold: more coverage, less precision
        return fit_gate.Figures(coverage=1 - t, precision=0.5 + t, memory_precision=0.5, fired=1 - t / 2,
                                off_topic=0.0, per_injection=2.0)

    assert fit_gate.best_setting(figures, fit_gate.meets_targets)[0] == 0.2  # precision 0.70 at 0.20
    assert fit_gate.best_setting(figures)[0] == 0.22  # the training room asks 0.72
