"""A full sleep on a real vault: plan, apply, git diff, idempotence, conflicts, rollback, CLI, tiers, triage.

The vault is the starter template plus a few notes built to trigger each phase: two near-duplicates (merge),
a used measurement (promote, with comments in its frontmatter), a forgotten note (prune), a pinned one (kept),
two close long-term notes (related_to) and recalls in the activity log (co_retrieved).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest
from fakes import SetClock
from versioned import committed, git

from server.cli import main
from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.importers import capture
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest
from vault_cortex.sleep.operations import Plan

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]
TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"

EXTRA = {
    "short_term/Pi SD card died.md": """---
cortex: short_term
importance: 0.5
created: 2026-11-26T20:10
tags: [homelab, backup]
---
# Pi SD card died

The SD card in the greenhouse Pi died this evening after eighteen months of constant writes. The last
backup had failed silently, so two days of readings are gone.

Boot the Pi from an SSD instead of an SD card, and check every month that a backup really restores.
""",
    "short_term/SD card in the Pi failed.md": """---
cortex: short_term
importance: 0.4
created: 2026-11-26T21:30
tags: [homelab]
---
# SD card in the Pi failed

The SD card in the greenhouse Pi died this evening after eighteen months of constant writes. The last
backup had failed silently, so two days of readings are gone.

Boot the Pi from an SSD instead of an SD card, and check every month that a backup really restores.
An alert when the newest backup is older than a day would have caught it.
""",
    "short_term/Wake current of node 2.md": """---
# measured on the bench with the current probe, not in the greenhouse
tags: [power, esp32]
importance: 0.65  # a guess until the greenhouse numbers are in
cortex: short_term
created: 2026-11-27T10:00
---
# Wake current of node 2

Measured a full wake cycle of node 2 with the current probe: 48 mA while the sensors warm up, peaks of
310 mA during Wi-Fi association, and 3.9 s awake in total on the bench. Integrating the trace gives
0.14 mAh per wake; the sleep current stays at 11 µA. The radio is the whole story.
""",
    "long_term/Two copies of every backup.md": """---
importance: 0.7
created: 2026-11-25T19:00
---
# Two copies of every backup

Decided that the greenhouse database is backed up nightly to the USB disk in the shed, and once a week
a copy goes to the disk at my parents' house. Two copies in two places, one of them offline most of the time.
""",
    "long_term/Offsite copy of the greenhouse data.md": """---
importance: 0.7
created: 2026-11-25T19:30
---
# Offsite copy of the greenhouse data

Once a week I carry a copy of the greenhouse database backup to the disk at my parents' house, in addition
to the nightly backup to the USB disk in the shed. If the shed burns down, at most a week of readings is lost.
""",
    "short_term/Bought more zip ties.md": """---
importance: 0.1
created: 2026-11-20T12:00
---
# Bought more zip ties

Picked up a bag of zip ties and some heat-shrink at the hardware shop.
""",
    "short_term/Parking at the allotment.md": """---
importance: 0.1
pinned: true
created: 2026-11-21T12:00
---
# Parking at the allotment

The allotment gate code changed to 4711; park by the water tap, never in front of the shed.
""",
}


def build_vault(root: Path) -> Path:
    """The starter vault, the extra notes and four recalls in the activity log, committed to git."""
    init_vault(root)
    for path, text in EXTRA.items():
        (root / path).write_text(text, encoding="utf-8")
    # the two backup notes say nearly the same and would merge at the default bar (0.8): kept two, to be related
    config = root / ".cortex" / "config.toml"
    config.write_text(re.sub(r"(?m)^merge_threshold = .*$", "merge_threshold = 0.9", config.read_text("utf-8")),
                      encoding="utf-8")
    recall = {"event": "recall", "client": "cli", "query": "wal", "mode": "balanced",
              "paths": ["long_term/Prefer boring technology.md", "scientific/SQLite WAL mode.md",
                        "short_term/Wake current of node 2.md"]}
    # four distinct queries: one query recalled four times would count once (no runaway self-reinforcement)
    queries = ["wal", "checkpoint starvation", "node 2 wake current", "boring technology for the collector"]
    lines = [json.dumps({**recall, "query": q, "ts": f"2026-11-28T0{i}:00:00Z"}) + "\n" for i, q in enumerate(queries)]
    (root / ".cortex/activity/2026-11.jsonl").write_text("".join(lines), encoding="utf-8")
    return committed(root, "start")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the vault except the derived index, git's own files and sleep's journal and plans."""
    out = {}
    for f in root.rglob("*"):
        rel = f.relative_to(root).as_posix()
        if f.is_file() and not rel.startswith((".git/", ".cortex/index/")) and (
                not rel.startswith(".cortex/sleep/") or rel == ".cortex/sleep/state.json"):
            out[rel] = f.read_bytes()
    return out


def notes(snap: dict[str, bytes]) -> dict[str, bytes]:
    return {p: b for p, b in snap.items() if p.endswith(".md")}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    root = build_vault(tmp_path_factory.mktemp("sleep") / "vault")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
    return root


@pytest.fixture
def vault(base: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "vault"
    shutil.copytree(base, dest, symlinks=True)
    return dest


@pytest.fixture
def clock() -> SetClock:
    return SetClock(NOW)


@pytest.fixture
def cx(vault: Path, embedder: Embedder, clock: SetClock) -> Iterator[Cortex]:
    with Cortex.open(vault, embedder=embedder, clock=clock) as c:
        yield c


def test_a_folder_kept_out_of_git_never_stops_the_sleep_commit(cx: Cortex, vault: Path) -> None:
    """A user who keeps captures out of git (`raw/` in .gitignore, as docs/claude-code.md says) still gets the
    sleep's commit of everything else; before, `git add` refused the ignored path and nothing was committed."""
    from vault_cortex.sleep.commit import commit_vault
    from vault_cortex.sleep.operations import Op

    with (vault / ".gitignore").open("a", encoding="utf-8") as fh:
        fh.write("raw/\n")
    git(vault, "commit", "-q", "-am", "keep captures out of git")
    captured = vault / "raw" / "2026-11-30 greenhouse 5e2b7a10 01.md"
    captured.parent.mkdir(exist_ok=True)
    captured.write_text("---\nlayer: raw\n---\n## Prompt\n\nWhy?\n", encoding="utf-8")
    plan = cx.sleep_plan("full")
    report = cx.sleep_apply(plan, commit=False)
    touch_raw = Op(step=len(plan.ops) + 1, phase="tier", action="set_property", path=str(captured.relative_to(vault)),
                   reason="a step on a capture", hashes={}, result="")
    made = commit_vault(vault, msgspec.structs.replace(plan, ops=[*plan.ops, touch_raw]),
                        [*report.applied, touch_raw.step])
    assert made and git(vault, "status", "--porcelain") == "", git(vault, "status", "--porcelain")
    assert "raw/" not in git(vault, "show", "--name-only", "--format=", "HEAD")


def test_full_sleep_under_git(cx: Cortex, vault: Path, clock: SetClock) -> None:
    before = snapshot(vault)
    plan = cx.sleep_plan("full")
    saved = vault / ".cortex" / "sleep" / f"plan-{plan.id}.json"
    assert msgspec.json.decode(saved.read_bytes(), type=Plan) == plan
    phases = {op.phase for op in plan.ops}
    assert phases == {"merge", "decay", "wire", "promote", "prune", "tier", "dream", "handoff", "state"}

    report = cx.sleep_apply(plan, commit=True)
    assert report.skipped == [] and report.applied == [op.step for op in plan.ops] and report.commit
    after = snapshot(vault)

    # Nothing is lost: vault + archive hold at least as many notes, and every original body is still there.
    assert len(notes(after)) > len(notes(before))
    bodies = [b.split(b"\n---\n", 1)[-1] for b in notes(after).values()]
    assert all(b.split(b"\n---\n", 1)[-1] in bodies for p, b in notes(before).items() if p != "HANDOFF.md")
    assert after["HANDOFF.md"].startswith(before["HANDOFF.md"])  # the handoff only gains its managed section
    # No file outside the plan changed.
    touched = {x for op in plan.ops for x in (op.path, op.dest) if x}
    assert {p for p in set(before) | set(after) if before.get(p) != after.get(p)} <= touched

    # Git: moves are renames, the commit holds exactly the plan's files, the work tree is clean.
    status = git(vault, "show", "--name-status", "-M", "--format=", "HEAD").splitlines()
    renames = {tuple(line.split("\t")[1:]) for line in status if line.startswith("R")}
    assert renames == {("short_term/Pi SD card died.md", "archive/short_term/Pi SD card died.md"),
                       ("short_term/SD card in the Pi failed.md", "archive/short_term/SD card in the Pi failed.md"),
                       ("short_term/Bought more zip ties.md", "archive/short_term/Bought more zip ties.md"),
                       ("short_term/Wake current of node 2.md", "scientific/Wake current of node 2.md")}
    assert git(vault, "status", "--porcelain") == ""
    subject = git(vault, "log", "-1", "--format=%s")
    assert subject.startswith("sleep (full): ") and "pruned" in subject

    # Only intended lines change; key order, comments and quoting survive.
    def changed(path: str, new_path: str | None = None) -> list[str]:
        a = before[path].decode().splitlines()
        b = after[new_path or path].decode().splitlines()
        return [x for x in difflib.unified_diff(a, b, lineterm="", n=0) if x[:1] in "+-" and x[:3] not in "+++---"]

    assert changed("scientific/ESP32 deep sleep current.md") == ["-importance: 0.7", "+importance: 0.65"]
    assert changed("short_term/Wake current of node 2.md", "scientific/Wake current of node 2.md") == [
        "-importance: 0.65  # a guess until the greenhouse numbers are in",
        "-cortex: short_term",
        "+importance: 0.64  # a guess until the greenhouse numbers are in",  # decays as a scientific note
        "+cortex: scientific"]
    assert changed("scientific/SQLite WAL mode.md") == [
        "-importance: 0.8", "+importance: 0.79", "+co_retrieved:", '+  - "[[Wake current of node 2]]"']
    assert changed("long_term/Offsite copy of the greenhouse data.md") == [
        "-importance: 0.7", "+importance: 0.69",
        "+relations:", "+  related_to:", '+    - "[[Two copies of every backup]]"']
    assert changed("HANDOFF.md")[0] == "+<!-- vault-cortex:sleep:start -->"

    # The dream log says what happened, with a link to each note that moved.
    dream = after["dreams/2026-11-30.md"].decode()
    for link in ("[[archive/short_term/Bought more zip ties]]", "[[Pi SD card died (merged)]]",
                 "[[archive/short_term/Pi SD card died]]", "[[Wake current of node 2]] → scientific",
                 "[[Parking at the allotment]]", "`co_retrieved` [[SQLite WAL mode]]", "| daily | 1 |"):
        assert link in dream, link
    merged = after["short_term/Pi SD card died (merged).md"].decode()
    assert "importance: 0.42\n" in merged and "created: 2026-11-26T20:10\n" in merged  # earliest member's
    assert "An alert when the newest backup" in merged
    assert merged.count("The SD card in the greenhouse Pi died") == 1

    # The archived note is still found when asked for.
    cx.sync()
    recalled = [h.path for h in cx.recall(RecallRequest(query="zip ties")).hits]
    assert "archive/short_term/Bought more zip ties.md" not in recalled
    found = cx.recall(RecallRequest(query="zip ties heat-shrink", include_archive=True), log_activity=False).hits
    assert found[0].path == "archive/short_term/Bought more zip ties.md"

    # A second sleep right after plans nothing new.
    clock.now = NOW + timedelta(minutes=1)
    assert cx.sleep_plan("full").ops == []


def test_a_file_changed_after_planning_is_skipped_reported_and_kept_on_rollback(cx: Cortex, vault: Path) -> None:
    before = snapshot(vault)
    plan = cx.sleep_plan("full")
    note = vault / "short_term" / "Wake current of node 2.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nAdded by hand after the plan.\n", encoding="utf-8")
    report = cx.sleep_apply(plan)
    skipped = {s.path: s.reason for s in report.skipped}
    assert set(skipped) == {"short_term/Wake current of node 2.md"}  # its decay, cortex edit and move
    assert len(report.skipped) == 3 and all("changed on disk" in r for r in skipped.values())
    assert note.exists() and "Added by hand" in note.read_text(encoding="utf-8")
    handoff = (vault / "HANDOFF.md").read_text(encoding="utf-8")
    assert "### Skipped at the last sleep" in handoff and "`short_term/Wake current of node 2.md`" in handoff
    assert json.loads((vault / ".cortex/sleep/state.json").read_text())["conflicts"]
    # The co_retrieved edits on other notes went ahead; the dream log lists what was skipped.
    assert "## Skipped when applied" in (vault / "dreams/2026-11-30.md").read_text(encoding="utf-8")

    undo = cx.sleep_rollback()
    assert undo.rolled_back
    restored = snapshot(vault)
    hand = "short_term/Wake current of node 2.md"
    assert {p for p in set(before) | set(restored) if before.get(p) != restored.get(p)} == {hand}


def test_rollback_restores_every_byte(cx: Cortex, vault: Path) -> None:
    before = snapshot(vault)
    cx.sleep_apply(cx.sleep_plan("full"))
    assert snapshot(vault) != before
    cx.sleep_rollback()
    assert snapshot(vault) == before
    assert not [f for f in vault.rglob(".*.tmp")]


def test_apply_and_rollback_index_just_the_notes_the_plan_touched(cx: Cortex, vault: Path, embedder: Embedder,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13: a sleep writes some notes; re-indexing afterwards re-reads those, not the vault (no walk),
    and leaves the index a rebuild from the files makes."""
    import vault_cortex.index.sync as sync_module

    plan = cx.sleep_plan("full")  # planning reads the whole index: it syncs in full first

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the vault was walked after a sleep")

    for step in ("apply", "rollback"):
        with monkeypatch.context() as m:
            m.setattr(sync_module, "walk", forbidden)
            if step == "apply":
                cx.sleep_apply(plan)
            else:
                cx.sleep_rollback()
        with Cortex(vault, cx.settings, embedder, index_dir=vault.parent / f"rebuilt-{step}") as fresh:
            fresh.sync()
            for table in ("notes", "links", "tags", "aliases"):
                assert cx.db.snapshot()[table] == fresh.db.snapshot()[table], (step, table)


def test_light_and_save_modes(cx: Cortex, vault: Path) -> None:
    light = cx.sleep_plan("light")
    assert {op.phase for op in light.ops} == {"wire", "promote", "dream", "handoff", "state"}
    save = cx.sleep_plan("save")
    assert [op.phase for op in save.ops] == ["handoff"]
    report = cx.sleep_apply(save)
    assert report.applied == [1] and not (vault / "dreams" / "2026-11-30.md").exists()


def test_a_bare_sleep_shows_the_plan_and_changes_no_file(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`vault-cortex sleep` with no subcommand prints and saves a plan; every note, the activity log and git's
    view of the vault stay as they were (applying is `sleep apply`)."""
    before = snapshot(vault)
    assert main(["sleep", "--vault", str(vault)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# Sleep plan ") and "## Operations" in out.out
    plan_id = next((vault / ".cortex" / "sleep").glob("plan-*.json")).stem.removeprefix("plan-")
    assert f"nothing was changed. To apply it: vault-cortex sleep apply {plan_id}" in out.err
    assert snapshot(vault) == before
    assert git(vault, "status", "--porcelain") == ""


def test_cli_plans_applies_and_refuses_a_second_apply_of_a_stale_plan(vault: Path, embedder: Embedder,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sleep", "--vault", str(vault), "--mode", "light"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# Sleep plan ") and "## Operations" in out.out and "plan saved to" in out.err
    plan_path = next((vault / ".cortex" / "sleep").glob("plan-*.json"))
    plan_id = plan_path.stem.removeprefix("plan-")
    assert main(["sleep", "--vault", str(vault), "apply", plan_id, "--commit"]) == 0
    assert "0 skipped" in capsys.readouterr().out
    assert git(vault, "log", "-1", "--format=%s").startswith("sleep (light): ")
    assert main(["sleep", "--vault", str(vault), "apply", str(plan_path)]) == 0  # by its file, too
    assert "skipped step 1" in capsys.readouterr().out  # every file changed since: all skipped, nothing written
    assert main(["sleep", "--vault", str(vault), "resume"]) == 1
    assert "nothing to resume" in capsys.readouterr().err
    assert main(["sleep", "--vault", str(vault), "apply", "20000101T000000Z"]) == 1
    assert "no saved sleep plan '20000101T000000Z'" in capsys.readouterr().err


def test_a_sleep_commits_where_git_has_no_identity(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A machine where nobody ran `git config` (CI, a fresh laptop): the commit is made as vault-cortex, and the
    command says so; before, git refused ("Author identity unknown") and the sleep's changes stayed uncommitted."""
    (tmp_path / "empty.gitconfig").write_text("", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "empty.gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    git(vault, "config", "--unset", "user.name")
    git(vault, "config", "--unset", "user.email")
    git(vault, "config", "user.useConfigOnly", "true")  # no identity guessed from the host name either
    assert main(["sleep", "--vault", str(vault), "apply", "--commit"]) == 0
    out = capsys.readouterr().out
    assert "as vault-cortex <vault-cortex@localhost> (git has no identity for this vault" in out, out
    assert git(vault, "log", "-1", "--format=%an <%ae>|%s").startswith("vault-cortex <vault-cortex@localhost>|sleep")
    assert git(vault, "status", "--porcelain", "--", ".cortex/activity") == ""

    git(vault, "config", "user.name", "Ada")  # the user's own identity, once set, is the one used
    git(vault, "config", "user.email", "ada@example.com")
    (vault / "short_term" / "new thought.md").write_text("# new thought\n\nA new note for the next sleep.\n",
                                                          encoding="utf-8")
    assert main(["sleep", "--vault", str(vault), "apply", "--commit"]) == 0
    assert "as vault-cortex" not in capsys.readouterr().out
    assert git(vault, "log", "-1", "--format=%an <%ae>") == "Ada <ada@example.com>\n"


def test_cli_rollback_undoes_the_last_sleep(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(vault)
    assert main(["sleep", "--vault", str(vault), "apply"]) == 0  # plan and apply at once, asked for by name
    assert "applied plan" in capsys.readouterr().out and snapshot(vault) != before
    assert main(["sleep", "--vault", str(vault), "rollback"]) == 0
    assert "rolled back plan" in capsys.readouterr().out
    assert notes(snapshot(vault)) == notes(before)


def test_transcripts_become_compressed_tiers_with_lineage(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    init_vault(root)
    clock = SetClock(NOW)
    with Cortex.open(root, embedder=embedder, clock=clock) as cx:
        for f in sorted(TRANSCRIPTS.iterdir()):
            copy = tmp_path / f.name
            shutil.copy(f, copy)
            day = int(f.name[8:10])
            os.utime(copy, (datetime(2026, 10, day, 21, tzinfo=UTC).timestamp(),) * 2)
            done = capture.import_transcript(cx.vault, copy, None)
            assert done.created and not done.unchanged
        first = tmp_path / sorted(p.name for p in TRANSCRIPTS.iterdir())[0]
        assert capture.import_transcript(cx.vault, first, None).unchanged
        raw = (root / "raw" / "2026-10-05 collector refactor 01.md").read_text(encoding="utf-8")
        assert "layer: raw" in raw and "session: 2026-10-05 collector refactor" in raw
        assert "*(tool: Read `/srv/greenhouse/collector.py` → 140 lines of output)*" in raw and "139:" not in raw
        plan = cx.sleep_plan("full")
        ratios = {t.tier: t for t in plan.findings.tiers}
        print("\ncompression (source tokens / summary tokens):")
        for t in plan.findings.tiers:
            print(f"  {t.tier:<8} {len(t.summaries)} summaries, {t.source_tokens} → {t.summary_tokens} tokens, "
                  f"{t.ratio:.2f}×")
        assert set(ratios) == {"session", "daily", "weekly", "fact"}
        assert len(ratios["session"].summaries) == 5 and all(t.ratio > 1.5 for t in ratios.values())
        cx.sleep_apply(plan)
        cx.sync()
        links = cx.db.links()
        for tier in ratios.values():
            for path in tier.summaries:
                sources = [ln for ln in links if ln.src == path and ln.rel == "derived_from"]
                assert sources and all(ln.dst for ln in sources), path  # lineage resolves to real notes
                fm = cx.db.frontmatter(path) or {}
                assert fm["layer"] == tier.tier and fm["tokens"] > 0 and fm["source_tokens"] > fm["tokens"]
        fact = next(iter(ratios["fact"].summaries))
        chain, frontier = set(), {fact}
        while frontier:  # lineage reaches the raw transcript notes
            frontier = {ln.dst for ln in links if ln.src in frontier and ln.rel == "derived_from" and ln.dst}
            chain |= frontier
        assert any(p.startswith("raw/2026-10-") for p in chain)
        clock.now = NOW + timedelta(minutes=1)
        assert cx.sleep_plan("full").ops == []


def test_triage_accuracy_on_the_labelled_fixture(tmp_path: Path, embedder: Embedder) -> None:
    sys.path.insert(0, str(REPO / "tests" / "bench"))
    try:
        from triage import FIXTURE, measure
    finally:
        sys.path.pop(0)
    vault = tmp_path / "triage"
    shutil.copytree(FIXTURE, vault)
    with Cortex.open(vault, embedder=embedder) as cx:
        result = measure(vault, cx)
    print(f"\ntriage accuracy {result['accuracy']:.1%} on {result['notes']} notes "
          f"(centroid only {result['centroid_only']:.1%}, keywords only {result['keywords_only']:.1%})")
    assert result["notes"] >= 40 and result["accuracy"] >= 0.8  # type: ignore[operator]
