"""Session capture: the SessionEnd and PreCompact hooks import the session's transcript into raw/, idempotently."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from server import hooks
from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.importers.transcript import Imported
from vault_cortex.index.embed import Embedder
from vault_cortex.recall.request import RecallRequest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "bench"))
from capture import make_transcript  # noqa: E402

SID = "7c1d9e0b-5a2f-4e61-9d1c-0f3b2a6e8d47"


def rec(kind: str, content: object, ts: str = "2026-11-30T10:00:00Z", **extra: object) -> str:
    return json.dumps({"type": kind, "sessionId": SID, "timestamp": ts,
                       "message": {"role": kind, "content": content}, **extra}) + "\n"


FIRST = [
    rec("user", "<command-name>/clear</command-name>", isMeta=True),
    rec("user", "Why does the dashboard hang when the report runs?"),
    rec("assistant", [{"type": "text", "text": "Let me look at the WAL."},
                      {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -l data/"}}]),
    rec("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "SECRET-TOOL-OUTPUT\n" * 40}]),
    rec("assistant", [{"type": "text", "text": "A long read transaction starves the checkpoint."}], isSidechain=True),
    rec("assistant", [{"type": "text", "text": "The report's read transaction never ends, so the WAL grows."}]),
    rec("user", [{"type": "text", "text": "<system-reminder>todo list is empty</system-reminder>\nHow do we fix it?"}],
        ts="2026-11-30T10:05:00Z"),
    rec("assistant", [{"type": "text", "text": "Close the cursor after each page."}]),
]
GROWN = [
    rec("assistant", [{"type": "text", "text": "And set a busy timeout."}]),  # the last exchange's answer grows
    rec("user", "Write it down as a habit.", ts="2026-11-30T10:09:00Z"),
    rec("assistant", [{"type": "text", "text": "Done: habits/Close cursors.md."}]),
]


def hook(event: str, vault: Path, transcript: Path | str, *, sub: bool = False) -> tuple[str, str]:
    """Run the hook as Claude Code does (in a process with sub=True); its stdout and stderr."""
    payload = json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": "/home/me/greenhouse",
                          "hook_event_name": hooks.EVENT_NAMES[event], "reason": "exit", "trigger": "auto"})
    if sub:
        done = subprocess.run([sys.executable, "-m", "server.cli", "hook", event, "--vault", str(vault)],
                              input=payload, capture_output=True, text=True, cwd=REPO, timeout=60)
        assert done.returncode == 0
        return done.stdout, done.stderr
    out, err = io.StringIO(), io.StringIO()
    real = sys.stderr
    sys.stderr = err
    try:
        assert hooks.main(event, str(vault), "http://127.0.0.1:9", stdin=io.StringIO(payload), stdout=out,
                          env={}) == 0
    finally:
        sys.stderr = real
    return out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def transcripts_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' transcripts are in tmp_path: the hooks may read them there (`[hooks] transcript_dirs`)."""
    monkeypatch.setenv("VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS", str(tmp_path))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    return root


def raw(vault: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((vault / "raw").glob("2026-11-30 *.md"))}


def test_session_end_captures_the_transcript_without_noise(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(FIRST), encoding="utf-8")
    out, err = hook("session-end", vault, transcript, sub=True)
    assert out == "" and "2 new" in err  # SessionEnd output reaches no model: nothing on stdout
    notes = raw(vault)
    assert list(notes) == ["2026-11-30 greenhouse 7c1d9e0b 01.md", "2026-11-30 greenhouse 7c1d9e0b 02.md"]
    one, two = (n.decode() for n in notes.values())
    assert "## Prompt\n\nWhy does the dashboard hang when the report runs?\n\n## Answer\nanswer_to:: [[#Prompt]]" in one
    assert "Let me look at the WAL.\n\nThe report's read transaction never ends, so the WAL grows." in one
    assert "*(tool: Bash `ls -l data/` → 40 lines of output)*" in one
    for noise in ("SECRET-TOOL-OUTPUT", "/clear", "starves the checkpoint", "system-reminder", "todo list"):
        assert noise not in one + two, noise
    assert "## Prompt\n\nHow do we fix it?\n" in two and "follows:: [[2026-11-30 greenhouse 7c1d9e0b 01]]" in two
    assert "layer: raw\n" in two and "session: 2026-11-30 greenhouse 7c1d9e0b\n" in two
    assert (vault / ".cortex/imports/.gitignore").read_text().strip().endswith("*")


def test_capturing_twice_adds_nothing_and_a_grown_transcript_adds_only_its_new_part(
        vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(FIRST), encoding="utf-8")
    hook("pre-compact", vault, transcript)
    before = raw(vault)
    mtimes = {p.name: p.stat().st_mtime_ns for p in (vault / "raw").glob("*.md")}
    _, err = hook("session-end", vault, transcript)
    assert "0 new, 0 updated" in err and raw(vault) == before
    assert {p.name: p.stat().st_mtime_ns for p in (vault / "raw").glob("*.md")} == mtimes
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write("".join(GROWN))
    _, err = hook("session-end", vault, transcript)
    assert "1 new, 1 updated, 0 unchanged" in err  # read from where the last exchange began
    after = raw(vault)
    first, second, third = after
    assert after[first] == before[first]  # untouched, byte for byte
    assert "Close the cursor after each page.\n\nAnd set a busy timeout." in after[second].decode()
    assert "Write it down as a habit." in after[third].decode()
    assert "follows:: [[2026-11-30 greenhouse 7c1d9e0b 02]]" in after[third].decode()


def test_an_edited_note_is_kept_and_a_rewritten_transcript_is_read_again(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(FIRST), encoding="utf-8")
    hook("session-end", vault, transcript)
    second = vault / "raw" / "2026-11-30 greenhouse 7c1d9e0b 02.md"
    edited = second.read_text(encoding="utf-8") + "\nMy own remark.\n"
    second.write_text(edited, encoding="utf-8")
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write("".join(GROWN))
    _, err = hook("session-end", vault, transcript)
    assert "1 new, 0 updated, 0 unchanged, 1 kept" in err
    assert second.read_text(encoding="utf-8") == edited  # never overwritten
    transcript.write_text("".join(FIRST[:2]) + rec("assistant", [{"type": "text", "text": "Rewritten."}]))
    _, err = hook("session-end", vault, transcript)  # not the file it was: read from the start again
    assert "0 new, 1 updated, 0 unchanged, 0 kept" in err
    assert "Rewritten." in (vault / "raw" / "2026-11-30 greenhouse 7c1d9e0b 01.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("path", "why"), [
    ("", "names no transcript_path"), ("/nonexistent/x.jsonl", "is not in the agent's transcript folder"),
    ("/etc/passwd", "must name the session's .jsonl"), ("{tmp}/missing.jsonl", "cannot read the transcript")])
def test_no_transcript_is_a_quiet_no_op(vault: Path, tmp_path: Path, path: str, why: str) -> None:
    out, err = hook("session-end", vault, path.format(tmp=tmp_path))
    assert out == "" and why in err and not raw(vault), err


def test_captured_sessions_are_indexed_with_their_prompt_answer_edges(
        vault: Path, tmp_path: Path, embedder: Embedder) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(FIRST + GROWN), encoding="utf-8")
    hook("session-end", vault, transcript)
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        links = {(ln.src, ln.rel, ln.dst) for ln in cx.db.links() if ln.src.startswith("raw/2026-11-30")}
        hit = cx.recall(RecallRequest(query="dashboard hangs while the report runs", k=3, captures="only")).hits[0]
        tiers = {t.tier: t.summaries for t in cx.sleep_plan("full").findings.tiers}
    assert "2026-11-30 greenhouse 7c1d9e0b (session).md" in " ".join(tiers["session"])  # sleep summarises it
    name = "raw/2026-11-30 greenhouse 7c1d9e0b"
    assert (f"{name} 02.md", "follows", f"{name} 01.md") in links
    assert any(rel == "answer_to" for _, rel, _ in links)
    assert hit.path == f"{name} 01.md"


def capture_transcript(vault: Path, file: Path, session: str | None = None, **kw: Any) -> Imported:
    """Capture through the one write path, files only, as the session-end hook does beside a server."""
    from vault_cortex.importers.capture import capture_transcript as capture

    with Cortex.open(vault) as cx, cx.vault.change("test", index=False) as tx:
        return capture(tx, file, session, **kw)


def test_a_10_mb_transcript_streams(vault: Path, tmp_path: Path) -> None:
    """Memory stays far below the file's size (a generous bound: the file is 10 MB, one exchange is ~30 kB)."""
    transcript = tmp_path / "big.jsonl"
    last = make_transcript(transcript, 10_000_000)
    tracemalloc.start()
    done = capture_transcript(vault, transcript)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(done.created) == last and done.tool_calls > last
    # half the file: streaming holds one exchange (~30 kB) and the redaction's detectors; reading the file whole
    # would take more than the file. tracemalloc counts every thread of the process, and under xdist a worker's
    # earlier tests leave threads (the model's idle release) that allocate now and then: 3 MB was crossed once
    assert peak < 5_000_000, peak




def test_an_explicit_session_name_wins_over_the_recorded_one(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(FIRST), encoding="utf-8")
    hook("session-end", vault, transcript)
    again = capture_transcript(vault, transcript, default_session="ignored: the record's name wins")
    assert again.session == "2026-11-30 greenhouse 7c1d9e0b" and not again.created
    named = capture_transcript(vault, transcript, "wal talk")
    assert named.created == ["raw/wal talk 01.md", "raw/wal talk 02.md"]


def test_harness_text_is_not_a_prompt() -> None:
    from vault_cortex.importers.transcript import parse_transcript

    lines = [
        rec("user", "Summarise the WAL findings."),
        rec("assistant", [{"type": "text", "text": "Readers starve the checkpoint."}]),
        rec("user", "<command-name>/compact</command-name>\n<command-message>compact</command-message>"),
        rec("user", "<local-command-stdout>Compacted.</local-command-stdout>"),
        rec("user", "This session is being continued from a previous conversation…", isCompactSummary=True),
        rec("user", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
        rec("assistant", [{"type": "text", "text": "Stopped."}]),
        rec("user", "Now the fix?"),
        rec("assistant", "Close the cursor."),
    ]
    t = parse_transcript("".join(lines), "s")
    assert [(x.prompt, x.answer) for x in t.exchanges] == [
        ("Summarise the WAL findings.", "Readers starve the checkpoint.\n\nStopped."),
        ("Now the fix?", "Close the cursor.")]
