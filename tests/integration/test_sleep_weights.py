"""A full sleep on the starter vault decays habit and resonance weights toward their baselines, one line each."""

from __future__ import annotations

import difflib
import os
import time
from pathlib import Path

from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.identity import habits
from vault_cortex.index.embed import Embedder

DAY = 86400
HABIT = "habits/Write the test first.md"  # weight 0.7, baseline 0.6
CONCEPT = "resonance/Curiosity.md"  # weight 0.75, baseline 0.7
TOUCHED = "resonance/Craftsmanship.md"  # weight 0.8, baseline 0.75; touched just now


def changed(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [x for x in diff if x[:1] in "+-" and x[:3] not in ("+++", "---")]


def test_weights_decay_in_a_full_sleep_and_not_twice(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    old = time.time() - 45 * DAY
    for folder in ("habits", "resonance"):
        for note in (root / folder).glob("*.md"):
            os.utime(note, (old, old))
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        cx.touch("craft")  # a touch is a use: Craftsmanship's weight rises and does not decay tonight
        texts = {p: (root / p).read_text(encoding="utf-8") for p in (HABIT, CONCEPT, TOUCHED)}

        plan = cx.sleep_plan("full")
        weights = {w.path: w for w in plan.findings.weights}
        assert set(weights) == {HABIT, CONCEPT}
        assert (weights[HABIT].before, weights[HABIT].after, weights[HABIT].kind) == (0.7, 0.635, "habit")
        assert (weights[CONCEPT].before, weights[CONCEPT].after, weights[CONCEPT].kind) == (0.75, 0.718, "resonance")
        preview = {c.path: c.after for c in habits.decay_habits(cx.vault).changes} | {
            c.path: c.after for c in cx.decay_resonance().changes}
        assert preview[HABIT] == 0.635 and preview[CONCEPT] == 0.718  # what the standalone preview says too
        assert TOUCHED not in preview

        report = cx.sleep_apply(plan)
        assert report.skipped == []
        assert changed(texts[HABIT], (root / HABIT).read_text(encoding="utf-8")) == ["-weight: 0.7", "+weight: 0.635"]
        assert changed(texts[CONCEPT], (root / CONCEPT).read_text(encoding="utf-8")) == [
            "-weight: 0.75", "+weight: 0.718"]
        assert (root / TOUCHED).read_text(encoding="utf-8") == texts[TOUCHED]
        dream = next(root.glob("dreams/*.md")).read_text(encoding="utf-8")
        assert "- [[Write the test first]]: habit weight 0.7 → 0.635, toward its baseline 0.6" in dream

        again = cx.sleep_plan("full")
        assert again.findings.weights == []
        assert habits.decay_habits(cx.vault).changes == [] and cx.decay_resonance().changes == []
