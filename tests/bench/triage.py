"""Triage accuracy: how often sleep promotes a short-term note to the region a person would choose.

Runs a light sleep plan on `tests/fixtures/vaults/triage/` (42 hand-labelled short-term notes, three
reference notes per long-term region) with the real model and compares each promotion with expected.json.
Also prints what the centroids alone and the keyword rules alone would get, to show what each contributes.

    python tests/bench/triage.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from vault_cortex.cortex import Cortex  # noqa: E402
from vault_cortex.sleep import consolidate, phases  # noqa: E402
from vault_cortex.sleep.cycle import gather  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "vaults" / "triage"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def measure(vault: Path, cx: Cortex | None = None) -> dict[str, object]:
    """Accuracy of the promotions in a light sleep plan of a copy of the triage fixture."""
    expected: dict[str, str] = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
    own = cx is None
    cx = cx or Cortex.open(vault, clock=lambda: NOW)
    try:
        world, vectors = gather(cx.index, cx.recaller, NOW)
        plan = consolidate.make_plan(world, vectors, settings=cx.settings, mode="light",
                                     embed=cx.embedder.embed, count_tokens=cx.embedder.count_tokens)
        chosen = {t.path: t.region for t in plan.findings.triage}
        cfg = cx.settings.sleep
        notes = {m.path: m for m in world.notes}
        refs = [p for p, m in notes.items() if m.region != "short_term" and p in vectors]
        centroids = {}
        for region in {notes[p].region for p in refs}:
            mean = np.mean([vectors[p] for p in refs if notes[p].region == region], axis=0)
            centroids[region] = mean / np.linalg.norm(mean)
        order = cx.settings.regions.order
        only_centroid = {p: phases.natural_region(notes[p], vectors.get(p), centroids, {}, order)[0]
                         for p in expected}
        only_keywords = {p: phases.natural_region(notes[p], None, {}, cfg.keywords, order)[0] for p in expected}
    finally:
        if own:
            cx.close()
    def score(got: dict[str, str | None]) -> float:
        return sum(got.get(p) == r for p, r in expected.items()) / len(expected)
    return {
        "notes": len(expected),
        "accuracy": score(chosen),
        "centroid_only": score(only_centroid),
        "keywords_only": score(only_keywords),
        "misses": sorted((p, r, chosen.get(p)) for p, r in expected.items() if chosen.get(p) != r),
        "per_region": {r: (sum(chosen.get(p) == r for p, e in expected.items() if e == r), n)
                       for r, n in sorted(Counter(expected.values()).items())},
    }


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "triage"
        shutil.copytree(FIXTURE, vault)
        result = measure(vault)
    print(f"triage accuracy: {result['accuracy']:.1%} of {result['notes']} hand-labelled short-term notes "
          f"(target ≥ 80%)")
    print(f"  centroid only: {result['centroid_only']:.1%}; keyword rules only: {result['keywords_only']:.1%}")
    for region, (right, total) in result["per_region"].items():  # type: ignore[attr-defined]
        print(f"  {region:<12} {right}/{total}")
    for path, want, got in result["misses"]:  # type: ignore[attr-defined]
        print(f"  miss: {path}: expected {want}, chose {got}")
    print(f"({time.perf_counter() - started:.1f}s, model and index included)")


if __name__ == "__main__":
    main()
