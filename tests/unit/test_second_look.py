"""The second look before the answer, pure (recall/second_look.py), and the transcript tail it reads the prompt from."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from vault_cortex.errors import InvalidRequest
from vault_cortex.importers.transcript import last_prompt, parse_transcript
from vault_cortex.recall import second_look
from vault_cortex.recall.gate import PushGate
from vault_cortex.recall.model import load_model
from vault_cortex.recall.scored import Hit

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "2026-10-14 wal investigation.jsonl"


def hit(path: str, p: float | None, snippet: str, why: str = "meaning 0.61; 80% of the words",
        reason: str = "matches the query by meaning (0.41); recent (1.00)") -> Hit:
    return Hit(path=path, title=Path(path).stem, region="scientific", score=0.5, signals={}, reason=reason, dense=0.5,
               lexical=0.5, heading="", snippet=snippet, line=1, push_probability=p, push_why=why)


def test_the_query_is_the_prompt_then_the_start_of_what_the_answer_adds() -> None:
    assert second_look.query("The WAL grows  because\na reader holds it.", "Why does the WAL grow?", 2000) == (
        "Why does the WAL grow?\ngrows because a reader holds it.")
    restated = "When did Caroline go to the LGBTQ support group: 7 May 2023."
    assert second_look.query(restated, "When did Caroline go to the LGBTQ support group?", 2000) == (
        "When did Caroline go to the LGBTQ support group?\n7 May 2023.")
    assert second_look.query("An answer without its prompt.", "", 2000) == "An answer without its prompt."
    long_answer = "word " * 1000
    q = second_look.query(long_answer, "p " * 1000, 2000)
    prompt, answer = q.split("\n")
    assert len(prompt) <= second_look.PROMPT_CHARS and len(answer) <= second_look.ANSWER_CHARS
    assert len(second_look.query(long_answer, "", 100)) == 100  # never past the recall query limit


def test_the_reason_names_at_most_two_memories_with_path_why_in_words_and_passage() -> None:
    hits = [hit("scientific/SQLite WAL mode.md", 0.81, "A long read transaction keeps the WAL from resetting. " * 8),
            hit("short_term/2026-11-28 dashboard froze.md", 0.66, "The dashboard froze while the collector wrote."),
            hit("long_term/third.md", 0.6, "never shown")]
    text = second_look.reason(hits)
    lines = text.splitlines()
    assert lines[0] == second_look.HEADER and "Check them" in lines[0]
    assert lines[1] == "## scientific/SQLite WAL mode.md — matches the query by meaning; recent"
    assert lines[2].startswith("A long read transaction") and lines[2].endswith("…")
    assert len(lines[2]) <= second_look.GIST_CHARS
    assert lines[3].startswith("## short_term/2026-11-28 dashboard froze.md — matches the query by meaning")
    assert "third.md" not in text and len(lines) == 5
    assert second_look.reason(hits, root="/home/me/my-vault").splitlines()[-1] == (
        "The notes are in /home/me/my-vault (or use the vault-cortex MCP tool note with the path).")


def test_the_second_look_looks_at_its_threshold_passes_each_memory_on_its_own_and_reads_no_thread() -> None:
    model = load_model().gate
    push = PushGate(threshold=0.3, floor=0.1, most=3, intercept=model.intercept, weights=dict(model.weights))
    look = second_look.gate_settings(push, 0.7)
    assert (look.threshold, look.floor) == (0.7, 0.1), "it looks at 0.7; then what reaches the floor goes along"
    higher = msgspec.structs.replace(push, floor=0.2)
    assert second_look.gate_settings(higher, 0.15).floor == 0.15, "never above it"
    assert look.intercept == push.intercept and look.weights["thread"] == 0 < push.weights["thread"]
    assert {k: v for k, v in look.weights.items() if k not in second_look.UNREAD} == {
        k: v for k, v in push.weights.items() if k not in second_look.UNREAD}, "the rest as the push reads them"


def test_the_last_prompt_comes_from_the_transcript_tail(tmp_path: Path) -> None:
    whole = parse_transcript(FIXTURE.read_text(encoding="utf-8"), "s")  # the whole file, parsed as capture does
    assert last_prompt(FIXTURE) == whole.exchanges[-1].prompt == "Make the dashboard stop doing that."
    # a long session: the prompt sits past megabytes of earlier turns and is followed by tool calls and results
    big = tmp_path / "session.jsonl"
    earlier = [{"type": "user", "message": {"role": "user", "content": f"old prompt {i} " + "x" * 500}}
               for i in range(4000)]
    last = [{"type": "user", "message": {"role": "user", "content": "Why did node 3 run flat?"}},
            {"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat log"}}]}},
            {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "y" * 10_000}]}},
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "It ran."}]}}]
    big.write_text("".join(json.dumps(r) + "\n" for r in [*earlier, *last]) + '{"type": "user", "mess',
                   encoding="utf-8")  # the client may still be writing its last line
    assert big.stat().st_size > 2_000_000
    assert last_prompt(big) == "Why did node 3 run flat?"
    assert last_prompt(big, tail=200) == ""  # no prompt in the window: the answer alone is judged
    # a turn whose tool output spans several of the blocks read backwards, and a prompt line cut by one of them
    for output in (300_000, 65_536 - 40, 65_536 + 17):
        turn = tmp_path / f"turn-{output}.jsonl"
        records = [*earlier[:50], last[0], last[1], {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "z" * output}]}}, last[3]]
        turn.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        assert last_prompt(turn) == "Why did node 3 run flat?", output


def test_a_broken_transcript_gives_no_prompt_and_no_file_is_refused(tmp_path: Path) -> None:
    for missing in (tmp_path / "missing.jsonl", tmp_path):  # nothing there, a folder: the hook's 400
        with pytest.raises(InvalidRequest, match="transcript"):
            last_prompt(missing)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json at all\n{also not\n", encoding="utf-8")
    assert last_prompt(broken) == ""


def test_a_memory_whose_figures_differ_from_the_answer_says_so() -> None:
    note = "| Probe | Dry mix | Wet mix | | P1 | 2870 | 1410 | | P2 | 2795 | 1330 | | P3 | 2920 | 1465 |"
    answer = "Use 3000 for dry and 1000 for wet on every probe."
    assert second_look.differs(answer, note) == "its figures (2870, 1410, 2795, 1330) are not the answer's (3000, 1000)"
    assert second_look.differs("P1 reads 2870 dry, 1410 wet.", note) is None  # the answer states the note's figures
    assert second_look.differs("Use the dry and wet values from the table.", note) is None  # the answer states none
    assert second_look.differs(answer, "Calibrate each probe in dry and wet soil.") is None
    text = second_look.reason([hit("scientific/Capacitive soil moisture calibration.md", 0.4, note)], answer)
    assert ("— matches the query by meaning; recent; its figures (2870, 1410, 2795, 1330) are not the answer's"
            in text)


def test_a_shown_memory_the_answer_contradicts_gets_one_line_pointing_back() -> None:
    shown = [hit("short_term/2026-11-29 node 3 battery ran flat.md", 0.5, "Node 3 died after 42 days."),
             hit("soul/Build things that last.md", 0.4, "Five years, not one week.")]
    text = second_look.reason([], "Node 3 runs for 300 days.", shown=shown[:1])
    assert text.splitlines()[1] == ("This answer may contradict [[short_term/2026-11-29 node 3 battery ran flat]], "
                                    "shown earlier in this session.")
    assert "node 3 battery" not in second_look.reason([], "It lasts about 42 days.", shown=shown[:1])
    fresh, again = second_look.fresh_and_shown(shown, frozenset({shown[0].path}), 0.45)
    assert (fresh, again) == ([], shown[:1])  # the one not shown reaches no threshold: nothing fresh
    assert second_look.fresh_and_shown(shown, frozenset(), 0.45) == (shown, [])


def test_a_contradicted_shown_memory_makes_the_second_look_and_the_others_go_along() -> None:
    question = hit("curiosities/How long can a node run on one 18650 cell.md", 0.85, "Node 3 lasted 43 days.")
    flat = hit("short_term/2026-11-29 node 3 battery ran flat.md", 0.2, "Node 3 stopped after 43 days.")
    fresh, again = second_look.chosen([question, flat], frozenset({question.path}), "About 300 days.", 0.22)
    assert (fresh, again) == ([flat], [question])  # the shown one looks; the one at the floor goes along
    assert second_look.chosen([question, flat], frozenset({question.path}), "About 43 days.", 0.22) == ([], [])
