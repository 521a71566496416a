"""A full sleep plans habit and resonance weights decaying toward their baselines: reviewable, one line each."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec

from vault_cortex.config import parse_settings
from vault_cortex.files.vault import content_hash
from vault_cortex.identity.resonance import decay_step
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.health import health
from vault_cortex.sleep.consolidate import make_plan
from vault_cortex.sleep.dream import WeightDecay
from vault_cortex.sleep.operations import Memo, Plan, World, apply_edit, plan_markdown

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SETTINGS = parse_settings({})


def weighted(path: str, weight: float | None, baseline: float | None, *, idle_days: float) -> Memo:
    props = "".join(f"{k}: {v}\n" for k, v in (("weight", weight), ("baseline", baseline)) if v is not None)
    text = f"---\ntriggers: [x]\n{props}tags: [habit]\n---\n# {path[:-3]}\n\nDo the thing.\n"
    return Memo(path=path, title=path.rsplit("/", 1)[-1][:-3], region="short_term", hash=content_hash(text.encode()),
                mtime=NOW - timedelta(days=idle_days), text=text, created=NOW - timedelta(days=400),
                weight=weight, baseline=baseline if weight is not None else None)


def world(notes: list[Memo], **kw: object) -> World:
    graph = Graph([m.path for m in notes], [])
    return World(now=kw.pop("now", NOW), notes=tuple(notes), taken=frozenset(m.path for m in notes),  # type: ignore[arg-type]
                 health=health(graph, []), **kw)  # type: ignore[arg-type]


def plan(w: World, mode: str = "full") -> Plan:
    return make_plan(w, {}, settings=SETTINGS, mode=mode, embed=lambda texts: None,  # type: ignore[arg-type,return-value]
                     count_tokens=len)


NOTES = [
    weighted("habits/Test first.md", 0.9, 0.5, idle_days=30),  # one half-life: 0.9 → 0.7
    weighted("resonance/Calm.md", 0.3, 0.7, idle_days=60),  # below its baseline: rises 0.3 → 0.6
    weighted("resonance/Craft.md", 0.8, 0.75, idle_days=90),  # 0.05 above: 0.8 → 0.756
    weighted("habits/Fresh.md", 0.9, 0.5, idle_days=0.2),  # too little time for a hundredth
    weighted("habits/No weight.md", None, 0.5, idle_days=400),  # nothing to decay
    weighted("long_term/Not a habit.md", 0.9, 0.1, idle_days=400),  # weight outside habits/ and resonance/
]


def test_full_sleep_plans_weight_decay_with_the_resonance_maths() -> None:
    p = plan(world(NOTES))
    assert p.findings.weights == [
        WeightDecay(path="habits/Test first.md", kind="habit", before=0.9, after=0.7, baseline=0.5, days=30.0,
                    half_life=30.0),
        WeightDecay(path="resonance/Calm.md", kind="resonance", before=0.3, after=0.6, baseline=0.7, days=60.0,
                    half_life=30.0),
        WeightDecay(path="resonance/Craft.md", kind="resonance", before=0.8, after=0.756, baseline=0.75, days=90.0,
                    half_life=30.0),
    ]
    for w in p.findings.weights:  # the same numbers as `resonance decay` computes
        m = next(n for n in NOTES if n.path == w.path)
        assert decay_step(w.path, {"weight": m.weight, "baseline": m.baseline}, m.mtime, NOW, 30.0).after == w.after
    ops = [op for op in p.ops if op.key == "weight"]
    assert [(op.phase, op.action, op.path, op.before, op.after, op.value) for op in ops] == [
        ("decay", "set_property", "habits/Test first.md", "0.9", "0.7", 0.7),
        ("decay", "set_property", "resonance/Calm.md", "0.3", "0.6", 0.6),
        ("decay", "set_property", "resonance/Craft.md", "0.8", "0.756", 0.756),
    ]
    assert "toward its baseline 0.5: 30 days since last used, half-life 30 days" in ops[0].reason
    first = NOTES[0].text or ""
    assert apply_edit(first, "set_property", "weight", 0.7) == first.replace("weight: 0.9\n", "weight: 0.7\n")
    assert ops[0].hashes == {"habits/Test first.md": NOTES[0].hash}

    md = plan_markdown(p)
    assert "**decay** `habits/Test first.md`: weight: 0.9 → 0.7 — habit weight toward its baseline" in md
    dream = next(op.content for op in p.ops if op.phase == "dream") or ""
    assert "- [[Test first]]: habit weight 0.9 → 0.7, toward its baseline 0.5 (30.0 days since last used" in dream
    assert "- [[Calm]]: resonance weight 0.3 → 0.6" in dream
    assert p.state is not None
    assert p.state.weight_anchors == {w.path: NOW for w in p.findings.weights}
    assert p.state.anchors == {}  # importance anchors are kept apart


def test_a_touch_or_reinforcement_counts_as_use() -> None:
    p = plan(world(NOTES, weight_use={"habits/Test first.md": NOW - timedelta(hours=2)}))
    assert "habits/Test first.md" not in [w.path for w in p.findings.weights]


def test_light_and_save_sleeps_leave_weights_alone() -> None:
    for mode in ("light", "save"):
        p = plan(world(NOTES), mode)
        assert p.findings.weights == [] and not [op for op in p.ops if op.key == "weight"]


def test_planning_again_after_applying_decays_nothing_twice() -> None:
    p = plan(world(NOTES))
    after = {w.path: w.after for w in p.findings.weights}
    applied = []
    for m in NOTES:
        if m.path in after and m.text is not None:
            text = apply_edit(m.text, "set_property", "weight", after[m.path])
            m = msgspec.structs.replace(m, text=text, hash=content_hash(text.encode()), weight=after[m.path])
        applied.append(m)
    assert p.state is not None
    again = plan(world(applied, state=p.state, now=NOW + timedelta(minutes=1)))
    assert again.findings.weights == []
    month = plan(world(applied, state=p.state, now=NOW + timedelta(days=30)))
    assert [(w.path, w.before, w.after) for w in month.findings.weights] == [  # Craft: 0.756 → 0.753 waits
        ("habits/Fresh.md", 0.9, 0.699), ("habits/Test first.md", 0.7, 0.6), ("resonance/Calm.md", 0.6, 0.65)]
