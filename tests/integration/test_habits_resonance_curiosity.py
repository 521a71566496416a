"""Habits, resonance and curiosity on real files with the real model: matching, minimal writes, warm ranking,
the claimed-vs-actual report, open questions closing, conflicts refused, and rebuilding from files and log."""

from __future__ import annotations

import difflib
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from server.cli import main
from vault_cortex import Cortex, InvalidRequest, NoteNotFound, WriteConflict
from vault_cortex.config import HabitsSettings, load_settings, parse_settings
from vault_cortex.files.activity import TouchEvent, acting_as, append
from vault_cortex.files.vault import init_vault
from vault_cortex.identity import habits
from vault_cortex.identity.habits import Habits
from vault_cortex.recall.request import RecallRequest
from vault_cortex.store.change import Vault

TEST_FIRST = "habits/Write the test first.md"
SHA = "habits/Check the sha256 of downloads.md"
CRAFT = "resonance/Craftsmanship.md"
CURIOSITY = "resonance/Curiosity.md"
WAL_Q = "curiosities/Why does the WAL file grow during long reads.md"
CELL_Q = "curiosities/How long can a node run on one 18650 cell.md"
WAL_NOTE = "scientific/SQLite WAL mode.md"


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    init_vault(root)
    return root


def _diff(before: str, after: str) -> list[str]:
    """The changed lines, as ndiff shows them ('- old', '+ new'); an empty list when nothing changed."""
    return [d for d in difflib.ndiff(before.splitlines(), after.splitlines()) if d[:2] in ("- ", "+ ")]


def _age(root: Path, rel: str, days: float, now: datetime) -> None:
    stamp = (now - timedelta(days=days)).timestamp()
    os.utime(root / rel, (stamp, stamp))


def _log_lines(root: Path) -> list[dict[str, object]]:
    return [json.loads(line) for f in sorted((root / ".cortex/activity").glob("*.jsonl"))
            for line in f.read_text().splitlines()]


class RacingVault(Vault):
    """A vault where someone else edits `race` on disk right after we read it (a concurrent writer)."""

    race: str | None = None

    def read_bytes(self, path: str) -> bytes:
        data = super().read_bytes(path)
        if path == self.race:
            self.race = None
            (self.root / path).write_bytes(data + b"\nEdited elsewhere meanwhile.\n")
        return data


class Racing(Cortex):
    """A Cortex whose vault is a RacingVault: set `race` to the path someone edits right after it is read."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.vault = RacingVault(self.root, self.settings, self.index, self.vault.clock)

    @property
    def race(self) -> str | None:
        assert isinstance(self.vault, RacingVault)
        return self.vault.race

    @race.setter
    def race(self, path: str | None) -> None:
        assert isinstance(self.vault, RacingVault)
        self.vault.race = path


# -- habits ---------------------------------------------------------------------------------------------
def test_a_habit_surfaces_for_its_trigger_and_a_paraphrase_not_for_an_unrelated_context(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(_vault(tmp_path), embedder=embedder) as cx:
        cx.sync()
        by_trigger = cx.habits_for_context("fix the regression in the collector's timestamp rounding")
        assert [h.path for h in by_trigger.habits] == [TEST_FIRST]
        hit = by_trigger.habits[0]
        assert hit.trigger in ("fix", "regression") and hit.why.startswith("trigger")
        assert hit.text.startswith("**When:** a bug report") and "## " not in hit.text
        assert by_trigger.markdown.startswith("- **Write the test first**\n  **When:**")
        assert hit.tokens == by_trigger.tokens <= 300
        paraphrase = cx.habits_for_context("the collector stopped behaving correctly after yesterday's refactor")
        assert [h.path for h in paraphrase.habits] == [TEST_FIRST]
        assert paraphrase.habits[0].trigger is None and paraphrase.habits[0].similarity >= 0.45
        assert paraphrase.habits[0].score < hit.score, "a trigger counts more than a likeness"
        assert cx.habits_for_context("plan the vegetable garden for spring").habits == []
        both = cx.habits_for_context("fix the broken firmware download before flashing")
        assert {h.path for h in both.habits} == {TEST_FIRST, SHA}
        assert [h.score for h in both.habits] == sorted((h.score for h in both.habits), reverse=True)
        with pytest.raises(InvalidRequest):
            cx.habits_for_context("  ")


def test_habits_are_capped_by_count_and_tokens(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    text = "fix the broken firmware download before flashing"
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        base = cx.settings

    def habits_with(settings: HabitsSettings) -> Habits:
        with Cortex.open(root, embedder=embedder, settings=msgspec.structs.replace(base, habits=settings)) as cx:
            return cx.habits_for_context(text)

    one = parse_settings({}, env={"VAULT_CORTEX_HABITS_MAX": "1"}).habits  # env: strings
    assert len(habits_with(one).habits) == 1
    tight = habits_with(HabitsSettings(token_cap=40))
    assert tight.habits and tight.tokens <= 40 and all(h.text.startswith("**When:**") for h in tight.habits)
    assert habits_with(HabitsSettings(token_cap=3)).habits == []


def test_tool_patterns_bring_up_habits_for_agent_tool_calls(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(_vault(tmp_path), embedder=embedder) as cx:
        cx.sync()

        def paths(tool: str, tool_input: dict[str, str] | None = None) -> list[str]:
            return [h.path for h in cx.habits_for_context("", tool=tool, tool_input=tool_input).habits]

        assert paths("Bash", {"command": "cd repo && pytest -q"}) == [TEST_FIRST]
        assert paths("Bash(pytest -k midnight)") == [TEST_FIRST]
        assert paths("Bash", {"command": "curl -LO https://example.org/fw.bin"}) == [SHA]
        assert paths("Edit", {"file_path": "/repo/collector.py"}) == [TEST_FIRST]
        assert paths("Bash", {"command": "ls -la"}) == []
        assert paths("Read", {"file_path": "/repo/collector.py"}) == []
        result = cx.habits_for_context("", tool="Bash", tool_input={"command": "pip install onnx"})
        assert result.habits[0].tool_pattern == "Bash(pip install*)" and result.tool == "Bash"


def test_the_habits_of_a_tool_call_are_found_without_loading_the_model(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    """`hook tool` runs on every tool call, in its own process when no server runs: it packs the habits by the
    model's tokenizer and never loads the model itself (0.4 s a call before)."""
    root = _vault(tmp_path)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        loaded = cx.habits_for_context("", tool="Bash", tool_input={"command": "pytest -q"})
    with Cortex.open(root) as cx:  # as a hook opens the vault: no model given
        found = cx.habits_for_context("", tool="Bash", tool_input={"command": "pytest -q"})
        assert [h.path for h in found.habits] == [TEST_FIRST] and not cx.index.model_loaded
        assert found.habits == loaded.habits  # the same text and token counts as with the model
        cx.habits_for_context("fix the broken firmware download")  # by meaning: the model loads then
        assert cx.index.model_loaded


def test_reinforce_raises_the_weight_by_one_line_and_logs_it(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        before = (root / TEST_FIRST).read_text()
        with acting_as("test"):
            change = cx.reinforce(TEST_FIRST, context="fixed the rounding bug test-first")
        assert (change.before, change.after, change.written) == (0.7, 0.8, True)
        assert _diff(before, (root / TEST_FIRST).read_text()) == ["- weight: 0.7", "+ weight: 0.8"]
        assert cx.db.frontmatter(TEST_FIRST)["weight"] == 0.8, "the index follows the write at once"
        assert _log_lines(root)[-1] == {"event": "feedback", "ts": _log_lines(root)[-1]["ts"], "client": "test",
                                        "path": TEST_FIRST, "useful": True,
                                        "query": "fixed the rounding bug test-first"}
        for _ in range(3):
            cx.reinforce(TEST_FIRST)
        assert cx.reinforce(TEST_FIRST).written is False, "capped at 1: no write"
        assert "weight: 1.0\n" in (root / TEST_FIRST).read_text()
        with pytest.raises(InvalidRequest):
            cx.reinforce(WAL_NOTE)
        with pytest.raises(NoteNotFound):
            cx.reinforce("habits/Nope.md")


def test_habit_decay_previews_then_applies_toward_the_baseline_once(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    now = datetime.now(UTC)
    _age(root, TEST_FIRST, 30, now)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        before = (root / TEST_FIRST).read_text()
        plan = habits.decay_habits(cx.vault)
        assert not plan.applied and plan.half_life_days == 30 and plan.unchanged == 1  # the sha256 habit: at baseline
        [change] = plan.changes
        assert (change.path, change.before, change.after, change.baseline) == (TEST_FIRST, 0.7, 0.65, 0.6)
        assert (root / TEST_FIRST).read_text() == before, "a preview writes nothing"
        applied = habits.decay_habits(cx.vault, dry_run=False)
        assert applied.applied and applied.changes[0].written
        assert _diff(before, (root / TEST_FIRST).read_text()) == ["- weight: 0.7", "+ weight: 0.65"]
        assert habits.decay_habits(cx.vault).changes == [], "applying twice does not decay twice"


# -- resonance ------------------------------------------------------------------------------------------
def test_touch_raises_the_weight_by_one_line_and_logs_a_touch(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        before = (root / CRAFT).read_text()
        change = cx.touch("care in making", by="artistic/Enclosure sketches.md")  # an alias
        assert (change.path, change.before, change.after) == (CRAFT, 0.8, 0.9)
        assert _diff(before, (root / CRAFT).read_text()) == ["- weight: 0.8", "+ weight: 0.9"]
        last = _log_lines(root)[-1]
        assert (last["event"], last["concept"]) == ("touch", "Craftsmanship")
        assert last["path"] == "artistic/Enclosure sketches.md"
        assert cx.touch("craftsmanship").after == 1.0 and cx.touch(CRAFT).written is False
        assert "weight: 1.0\n" in (root / CRAFT).read_text()
        cx.sync()
        assert cx.db.snapshot()["touches"][0][:2] == ("Craftsmanship", 3), "three touches replayed from the log"
        with pytest.raises(NoteNotFound, match="Craftsmanship, Curiosity"):
            cx.touch("rain")


def _stools(tmp_path: Path, config: str = "") -> Path:
    root = tmp_path / "stools"
    files = {
        ".cortex/config.toml": config,
        "resonance/Patina.md": "---\ncategory: aesthetic\nweight: 0.0\nbaseline: 0.0\naliases: [weathered finish]\n"
                               "---\nThe beauty of surfaces that show their age and use.\n",
        "artistic/Oak stool.md": "Building an oak stool with mortise and tenon joints and three legs.\n",
        "artistic/Walnut stool.md": "A walnut stool, three legs, a weathered finish; the joints are mortise and "
                                    "tenon.\n",
        "scientific/Ash stool.md": "An ash stool, three legs, patina on the seat; the joints are mortise and tenon.\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


STOOL_QUERY = "building a stool with mortise and tenon joints"


def test_a_touched_concept_lifts_a_memory_in_warm_mode_and_not_in_cold(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _stools(tmp_path)

    def hits(cx: Cortex, mode: str) -> dict[str, tuple[int, float, float]]:
        result = cx.recall(RecallRequest(query=STOOL_QUERY, k=10, mode=mode), log_activity=False)
        return {h.path: (n, h.score, h.signals["resonance"]) for n, h in enumerate(result.hits)}

    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        warm0, cold0 = hits(cx, "identity"), hits(cx, "balanced")
        assert warm0["scientific/Ash stool.md"][0] < warm0["artistic/Walnut stool.md"][0]
        cx.touch("Patina")
        cx.touch("patina")
        warm, cold = hits(cx, "identity"), hits(cx, "balanced")
    walnut, ash, oak = "artistic/Walnut stool.md", "scientific/Ash stool.md", "artistic/Oak stool.md"
    assert warm[walnut][2] == 0.2, "the alias `weathered finish` names the concept; its live weight is the signal"
    assert warm[walnut][1] == pytest.approx(warm0[walnut][1] + 0.25 * 0.2, abs=1e-3)
    assert warm[walnut][0] < warm[ash][0], "lifted above the note it trailed"
    assert warm[ash][2] == 0.0 and warm[ash][1] == warm0[ash][1], "scientific is a cold region: no boost"
    assert warm[oak][1] == warm0[oak][1]
    assert cold == cold0, "a mode without resonance ranks exactly as before"

    cold_artistic = ("[regions.artistic]\nweight = 0.6\nhalf_life_days = 180\nidentity = false\n"
                     'resonance = "cold"\ncap = 6\n')
    (root / ".cortex/config.toml").write_text(cold_artistic)
    with Cortex.open(root, embedder=embedder) as cx:
        per_region = hits(cx, "identity")
    assert per_region[walnut][2] == 0.0 and per_region[ash][0] < per_region[walnut][0], "per-region config"


def test_a_concept_weight_written_as_a_string_ranks_as_the_number_decay_starts_from(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    """`weight: "0.8"` (a YAML string) is the weight 0.8 for ranking as for decay, not the default 0.5."""
    root = _stools(tmp_path)
    patina = "resonance/Patina.md"
    (root / patina).write_text('---\ncategory: aesthetic\nweight: "0.8"\nbaseline: 0.5\naliases: [weathered finish]\n'
                               "---\nThe beauty of surfaces that show their age and use.\n")
    _age(root, patina, 30, datetime.now(UTC))
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        hits = {h.path: h for h in cx.recall(RecallRequest(query=STOOL_QUERY, k=10, mode="identity"),
                                             log_activity=False).hits}
        decay = {c.path: c.before for c in cx.decay_resonance().changes}
    assert decay[patina] == 0.8
    assert hits["artistic/Walnut stool.md"].signals["resonance"] == 0.8, "the alias names it; its weight is 0.8"


def test_warm_mode_never_removes_a_result_cold_mode_returns(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    base = load_settings(root, env={})
    warm = base.modes["identity"]
    settings = msgspec.structs.replace(base, modes={**base.modes, "identity_cold": {**warm, "resonance": 0.0}})
    with Cortex.open(root, embedder=embedder, settings=settings) as cx:
        cx.sync()
        for _ in range(2):
            cx.touch("Curiosity")
            cx.touch("Craftsmanship")
        every = len(cx.db.note_paths())
        boosted = 0
        for query in ("sketching an enclosure before soldering", "what I do when I am stuck",
                      "wondering why a measurement surprised me", "sqlite wal checkpoint", "battery life"):
            hot = cx.recall(RecallRequest(query=query, k=every, mode="identity"), log_activity=False).hits
            cold = cx.recall(RecallRequest(query=query, k=every, mode="identity_cold"), log_activity=False).hits
            assert {h.path for h in hot} == {h.path for h in cold}, query
            assert all(h.signals["resonance"] == 0.0 for h in cold)
            boosted += sum(h.signals["resonance"] > 0 for h in hot)
        assert boosted, "warm mode did boost something: the sets agree though the scores differ"


def test_resonance_decay_counts_from_the_last_touch_and_applies_once(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    now = datetime.now(UTC)
    _age(root, CRAFT, 30, now)
    _age(root, CURIOSITY, 60, now)
    append(root, TouchEvent(ts=now - timedelta(days=15), client="test", concept="wonder"))  # Curiosity, by alias
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        before = {p: (root / p).read_text() for p in (CRAFT, CURIOSITY)}
        plan = cx.decay_resonance()
        got = {c.path: (c.before, c.after) for c in plan.changes}
        assert got[CRAFT] == (0.8, 0.775), "0.75 + 0.05 · ½ after one half-life"
        assert got[CURIOSITY] == (0.75, 0.735), "0.7 + 0.05 · ½^(15/30): 15 days since the touch, not 60"
        assert all((root / p).read_text() == t for p, t in before.items())
        cx.decay_resonance(dry_run=False)
        assert _diff(before[CRAFT], (root / CRAFT).read_text()) == ["- weight: 0.8", "+ weight: 0.775"]
        assert len(_diff(before[CURIOSITY], (root / CURIOSITY).read_text())) == 2
        assert cx.decay_resonance().changes == []


def test_resonance_report_compares_claimed_with_actual(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    now = datetime.now(UTC) + timedelta(days=400)  # every starter note is old by then
    for f in root.rglob("*.md"):
        if ".cortex" not in f.parts:
            _age(root, str(f.relative_to(root)), 200, now)
    append(root, TouchEvent(ts=now - timedelta(days=20), client="test", concept="Craftsmanship"))
    with Cortex.open(root, embedder=embedder, clock=lambda: now) as cx:
        cx.sync()
        for _ in range(3):
            cx.touch("Curiosity")
        doc = cx.remember("Rebuilt the drawer runners with care in making: waxed, square, silent.", region="artistic")
        report = {r.name: r for r in cx.resonance_report(days=7).concepts}
        assert (report["Curiosity"].touches, report["Curiosity"].mentions, report["Curiosity"].actual) == (3, 0, 1.0)
        assert report["Curiosity"].gap == 0.3 and report["Curiosity"].verdict == "lived more than claimed"
        craft = report["Craftsmanship"]
        assert (craft.touches, craft.mentions, craft.mentioned_in) == (0, 1, [doc.path])
        assert craft.actual == 0.33 and craft.gap == -0.42 and craft.verdict == "claimed more than lived"
        assert cx.resonance_report(days=30).concepts[-1].name == "Curiosity"
        assert {r.name: r.touches for r in cx.resonance_report(days=30).concepts}["Craftsmanship"] == 1
        assert cx.resonance_report().days == 30
        with pytest.raises(InvalidRequest):
            cx.resonance_report(days=0)


# -- curiosity ------------------------------------------------------------------------------------------
def test_wonder_list_and_explore_close_the_question_and_link_both_ways(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        q = cx.wonder("Does the soil probe drift in cold weather?", context="Readings sank on the two frosty nights.")
        assert q.path == "curiosities/Does the soil probe drift in cold weather.md" and q.status == "open"
        assert q.question == "Does the soil probe drift in cold weather?" and q.answered_by is None
        text = (root / q.path).read_text()
        assert text.startswith("---\nstatus: open\nanswered_by:\ncreated: ") and "tags: [question]" in text
        assert cx.wonder("Does the soil probe drift in cold weather?").path == q.path, "asking twice: one note"
        assert (root / q.path).read_text() == text
        listed = cx.list_curiosities()
        assert listed.open == 3 and {c.path for c in listed.items} == {q.path, WAL_Q, CELL_Q}
        matching = cx.list_curiosities("the WAL kept growing while a long report query ran")
        assert [c.path for c in matching.items] == [WAL_Q] and matching.items[0].similarity >= 0.4
        assert matching.open == 3

        task = "why does the WAL file keep growing during long reads"
        assert WAL_Q in cx.context(task=task).matching_questions
        q_before, a_before = (root / WAL_Q).read_text(), (root / WAL_NOTE).read_text()
        done = cx.explore(WAL_Q, WAL_NOTE)
        assert done.question.status == "explored" and done.question.answered_by == "[[SQLite WAL mode]]"
        assert _diff(q_before, (root / WAL_Q).read_text()) == [
            "- status: open", "- answered_by:", "+ status: explored", '+ answered_by: "[[SQLite WAL mode]]"']
        assert _diff(a_before, (root / WAL_NOTE).read_text()) == [
            '+   answers: ["[[Why does the WAL file grow during long reads]]"]']
        links = {(ln.src, ln.rel, ln.dst) for ln in cx.db.links()}
        assert (WAL_Q, "answered_by", WAL_NOTE) in links and (WAL_NOTE, "answers", WAL_Q) in links

        after = cx.context(task=task)
        assert WAL_Q not in after.matching_questions and after.open_questions == 2
        assert after.nudge.startswith("> 2 open questions") and "WAL file grow" not in after.nudge
        assert WAL_Q not in {c.path for c in cx.list_curiosities().items}
        with pytest.raises(InvalidRequest):
            cx.explore(WAL_NOTE, CELL_Q)
        with pytest.raises(NoteNotFound):
            cx.explore(CELL_Q, "scientific/Nope.md")
        with pytest.raises(InvalidRequest):
            cx.wonder("   ")


# -- conflicts and rebuilds -----------------------------------------------------------------------------
def test_a_concurrent_change_refuses_every_write_and_leaves_the_files_alone(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    with Racing.open(root, embedder=embedder) as cx:
        assert isinstance(cx, Racing)
        cx.sync()
        for path, write in ((CRAFT, lambda: cx.touch("Craftsmanship")),
                            (TEST_FIRST, lambda: cx.reinforce(TEST_FIRST))):
            before = (root / path).read_text()
            cx.race = path
            with pytest.raises(WriteConflict):
                write()
            assert (root / path).read_text() == before + "\nEdited elsewhere meanwhile.\n", "only their edit"
        assert not any(e["event"] == "touch" for e in _log_lines(root)), "a refused touch is not logged"

        q_before, a_before = (root / CELL_Q).read_text(), (root / WAL_NOTE).read_text()
        cx.race = WAL_NOTE  # the answer changes after both were read: the question is put back as it was
        with pytest.raises(WriteConflict):
            cx.explore(CELL_Q, WAL_NOTE)
        assert (root / CELL_Q).read_text() == q_before
        assert (root / WAL_NOTE).read_text() == a_before + "\nEdited elsewhere meanwhile.\n"
        cx.race = CELL_Q
        with pytest.raises(WriteConflict):
            cx.explore(CELL_Q, WAL_NOTE)
        assert (root / CELL_Q).read_text() == q_before + "\nEdited elsewhere meanwhile.\n"


def test_weights_and_touches_rebuild_from_the_files_and_the_log(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    now = datetime.now(UTC)
    with Cortex.open(root, embedder=embedder, clock=lambda: now) as cx:
        cx.sync()
        cx.touch("Curiosity")
        cx.reinforce(TEST_FIRST)
        cx.explore(CELL_Q, "short_term/2026-11-29 node 3 battery ran flat.md")
        cx.sync()
        live, report = cx.db.snapshot(), cx.resonance_report()
        assert cx.verify().ok
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (root / ".cortex/index" / name).unlink(missing_ok=True)
    with Cortex.open(root, embedder=embedder, clock=lambda: now) as cx:
        cx.sync()
        assert cx.db.snapshot() == live
        assert cx.resonance_report() == report
        assert cx.db.frontmatter(CURIOSITY)["weight"] == 0.85
        assert [c.path for c in cx.list_curiosities().items] == [WAL_Q]


# -- CLI ------------------------------------------------------------------------------------------------
def test_cli_commands(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = _vault(tmp_path)
    vault = ["--vault", str(root)]

    def run(*argv: str) -> str:
        assert main([*argv, *vault]) == 0
        return str(capsys.readouterr().out)

    assert run("habits", "fix the flaky test").startswith(f"{TEST_FIRST} — trigger “fix”")
    assert SHA in run("habits", "", "--tool", "Bash(curl -LO https://x/fw.bin)")
    assert "Craftsmanship" in run("resonance") and "claimed (baseline) vs actual use" in run("resonance", "report")
    assert run("resonance", "touch", "craft") == (
        f"{CRAFT}: weight 0.8 → 0.9 (baseline 0.75; touched)\n")
    assert "run with --apply" in run("resonance", "decay")
    assert "decayed 0 of 2" in run("resonance", "decay", "--apply")
    assert run("wonder", "Is the hinge too stiff?") == "open question: curiosities/Is the hinge too stiff.md\n"
    assert "(3 open questions)" in run("curiosities")
    assert run("explore", CELL_Q, "short_term/2026-11-29 node 3 battery ran flat.md").startswith(
        f"explored {CELL_Q}: answered_by [[2026-11-29 node 3 battery ran flat]]")
    assert "(2 open questions)" in run("curiosities")
    assert json.loads(run("curiosities", "--match", "how long does the battery last", "--json"))["open"] == 2
    assert main(["resonance", "touch", *vault]) == 1
    assert "name the concept" in capsys.readouterr().err
