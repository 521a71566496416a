"""Capture that is memory, not echo: exchanges with nothing to keep are left out (and counted), `<private>` spans
and secrets are never written, a session's own captures are never pushed back to it, and a raw capture ranks
below the curated note that answers the same question."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server import hooks
from vault_cortex.cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.importers.substance import has_substance
from vault_cortex.importers.transcript import parse_transcript
from vault_cortex.index.embed import Embedder
from vault_cortex.privacy import PRIVATE_MARK, redact
from vault_cortex.recall.request import RecallRequest

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
SID = "5e2b7a10-9c4d-4f3e-8a61-2d7f0c9b1e38"
DEAD_URL = "http://127.0.0.1:9"
QUESTION = "How do I calibrate the capacitive soil moisture probes?"
CALIBRATION = "scientific/Capacitive soil moisture calibration.md"


def rec(kind: str, content: object, ts: str = "2026-11-30T10:00:00Z") -> str:
    """One record as Claude Code writes it to the session's JSONL."""
    return json.dumps({"type": kind, "sessionId": SID, "timestamp": ts, "uuid": f"u{ts}{kind}",
                       "message": {"role": kind, "content": content}}) + "\n"


def tool(tid: str, name: str, args: dict[str, str], output: str) -> list[str]:
    return [rec("assistant", [{"type": "tool_use", "id": tid, "name": name, "input": args}]),
            rec("user", [{"type": "tool_result", "tool_use_id": tid, "content": output}])]


def say(text: str) -> str:
    return rec("assistant", [{"type": "text", "text": text}])


PYTEST_OUT = "........................................................ [100%]\n119 passed in 3.21s"
ECHO_SESSION = [
    rec("user", "Why does the collector drop messages when the broker restarts?"),
    *tool("t1", "Read", {"file_path": "/srv/greenhouse/collector.py"}, "def connect():\n    client.connect()\n"),
    say("The client connects once and never reconnects: when the broker restarts, messages published meanwhile are "
        "lost. I added reconnect_delay_set(1, 30) and a persistent session (clean_session=False)."),
    rec("user", "ok"),
    say("Noted."),
    rec("user", "Look at the output of the last test run"),
    *tool("t2", "Bash", {"command": "pytest -q"}, PYTEST_OUT),
    say("Done: I looked at the tool output."),
    rec("user", "run the tests"),
    *tool("t3", "Bash", {"command": "pytest -q"}, PYTEST_OUT),
    say("119 passed in 3.21s."),
    rec("user", "thanks!"),
    say("You're welcome!"),
    rec("user", "From now on call me Sam."),
    say("Noted."),
    rec("user", "yes"),
    say("Done: renamed flush_interval to flush_interval_s in config.toml."),
]


def capture(vault: Path, transcript: Path, session: str = SID) -> str:
    """Run the session-end hook as Claude Code does (in-process); what it said on stderr."""
    payload = json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": "/home/me/greenhouse",
                          "hook_event_name": "SessionEnd", "reason": "exit"})
    err, real = io.StringIO(), sys.stderr
    sys.stderr = err
    try:
        assert hooks.main("session-end", str(vault), DEAD_URL, stdin=io.StringIO(payload), stdout=io.StringIO(),
                          env={}) == 0
    finally:
        sys.stderr = real
    return err.getvalue()


@pytest.fixture(autouse=True)
def transcripts_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' transcripts are in tmp_path: the hooks may read them there (`[hooks] transcript_dirs`)."""
    monkeypatch.setenv("VAULT_CORTEX_HOOKS_TRANSCRIPT_DIRS", str(tmp_path))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    return root


def raw_notes(vault: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((vault / "raw").glob("2026-11-30 *.md"))}


# -- substance ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(p.name for p in TRANSCRIPTS.iterdir()))
def test_every_exchange_of_the_real_transcripts_holds_something_and_is_kept(name: str) -> None:
    text = (TRANSCRIPTS / name).read_text(encoding="utf-8")
    for x in parse_transcript(text, "s").exchanges:
        assert has_substance(x.prompt, x.answer, x.output), x.prompt


def test_echo_is_left_out_and_counted_and_decisions_and_fixes_are_kept(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(ECHO_SESSION), encoding="utf-8")
    err = capture(vault, transcript)
    assert "3 new" in err and "4 left out (nothing to keep)" in err, err
    notes = list(raw_notes(vault).values())
    assert len(notes) == 3
    assert "reconnect_delay_set" in notes[0]  # a question and a fix
    assert "From now on call me Sam." in notes[1]  # a preference, answered by an acknowledgement
    assert "flush_interval_s" in notes[2]  # "yes" answered by a fix
    assert "follows:: [[2026-11-30 greenhouse 5e2b7a10 02]]" in notes[2]  # numbered without gaps
    body = "".join(notes)
    for echo in ("Done: I looked at the tool output.", "119 passed", "You're welcome", "## Prompt\n\nok\n"):
        assert echo not in body, echo
    assert capture(vault, transcript).count("0 new") == 1 and len(raw_notes(vault)) == 3  # idempotent


def test_an_echo_that_grows_into_an_answer_is_captured_then(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(ECHO_SESSION[:5]), encoding="utf-8")  # ends with "ok" → "Noted."
    assert "1 left out" in capture(vault, transcript)
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write(say("I also set the MQTT keepalive to 15 s so a dead broker is noticed within half a minute."))
    err = capture(vault, transcript)
    assert "1 new" in err and "left out" not in err, err
    assert "keepalive to 15 s" in raw_notes(vault)["2026-11-30 greenhouse 5e2b7a10 02.md"]


# -- private spans and secrets -----------------------------------------------------------------------------
AWS = "AKIA" + "QX7PZ2LMN4RT8KWB"
GITHUB = "ghp_" + "R8fK2mQ9xLp4Zt7Wv1Nc6Hy3Bd5Gj0Ae8Ks2"
STRIPE = "sk_live_" + "51HqLyjWDarjtT1zdp7dcXyZ"
SLACK = "xoxb-" + "2048193756-4096381725-Qm8ZkT3nWv7LpR2xYc9FbH1d"
OPENAI = "sk-proj-" + "Xa9Bc8De7Fg6Hi5Jk4LmT3BlbkFJ" + "Zn1Op2Qr3St4Uv5Wx6Yz"
ANTHROPIC = "sk-ant-api03-" + "q7Vb2XnL9kPz4RtW8mYc1HdJ6sFa3GeK0uNi5ToB-Qw7Er2Ty9Ui4OpAsDfGhJk"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiJzYW0iLCJpYXQiOjE3MzI5MDAwMDB9."
       + "Qm3vX8kP2nR7tW1yZ5bC9dF4gH6jK0lM3nO8pQ2rS7u")
DB_PASSWORD = "Gr33nh0use-Pi!"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACBx"
SECRET_SESSION = [
    rec("user", f"The deploy fails with 403. The key is {AWS} and my token {GITHUB}; the database is at "
                f"postgres://collector:{DB_PASSWORD}@10.0.0.5:5432/greenhouse. Why is it refused?"),
    *tool("t1", "Bash", {"command": f"curl -H 'Authorization: Bearer {OPENAI}' https://api.example.com/v1/models"},
          "403 Forbidden"),
    say(f"The Stripe key {STRIPE} is a live key, and the Slack bot token {SLACK} is fine. Put "
        f"ANTHROPIC_API_KEY={ANTHROPIC} in .env, not in the repo. The session cookie was {JWT}.\n"
        f"The deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n{KEY_BODY[::-1]}\n"
        "-----END OPENSSH PRIVATE KEY-----\nRotate all of them: the 403 came from the revoked AWS key."),
    rec("user", "<private>My salary is 81,000 and I am interviewing at Acme.</private> Anyway: which port does the "
                "collector's health check use? <private>and this one never closes"),
    say("Port 8081, set by health_port in config.toml.<private>internal note: ask Sam</private>"),
]


def test_private_spans_and_secrets_are_never_written(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(SECRET_SESSION), encoding="utf-8")
    err = capture(vault, transcript)
    assert "2 new" in err and "3 private spans left out" in err, err
    body = "".join(raw_notes(vault).values())
    for secret in (AWS, GITHUB, STRIPE, SLACK, OPENAI, ANTHROPIC, JWT, DB_PASSWORD, KEY_BODY, KEY_BODY[::-1],
                   OPENAI[:30], JWT.split(".")[2], "81,000", "Acme", "never closes", "ask Sam"):
        assert secret not in body, secret
    for marker in ("[redacted: AWS Access Key]", "[redacted: GitHub Token]", "[redacted: Stripe Access Key]",
                   "[redacted: Slack Token]", "[redacted: JSON Web Token]", "[redacted: Private Key]",
                   "postgres://collector:[redacted: Basic Auth Credentials]@10.0.0.5:5432/greenhouse",
                   "ANTHROPIC_API_KEY=[redacted: "):
        assert marker in body, marker
    # what is not secret stays: the question, the fix, the numbers a memory needs
    for kept in ("Why is it refused?", "the 403 came from the revoked AWS key", "which port does the collector's "
                 "health check use?", "Port 8081, set by health_port in config.toml."):
        assert kept in body, kept
    assert "secrets redacted" in err


_PROSE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=60).map(
    lambda s: s.replace("<", " ").replace(">", " "))


@given(before=_PROSE, inside=st.text(min_size=1, max_size=80).filter(lambda s: "</private>" not in s.lower()
                                                                    and s.strip()), after=_PROSE,
       closed=st.booleans(), upper=st.booleans())
def test_a_private_span_anywhere_is_never_kept(before: str, inside: str, after: str, closed: bool,
                                               upper: bool) -> None:
    tag = "<PRIVATE>" if upper else "<private>"
    text = before + tag + inside + ("</private>" + after if closed else "")
    out = redact(text).text.replace(PRIVATE_MARK, "")  # the marker's own letters are not the span's
    assert inside not in out or inside in before + (after if closed else "")
    assert redact(text).private == 1
    if closed:
        assert out.endswith(after) or not after


_WORDS = st.lists(st.sampled_from("the probe reads 2870 counts dry and 1410 wet so map them linearly between "
                                  "calibrate each board on its own".split()), max_size=12).map(" ".join)
_SECRETS = st.one_of(
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16).map(lambda s: "AKIA" + s),
    st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=36, max_size=36).map(
        lambda s: "ghp_" + s),
    st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=24, max_size=24).map(
        lambda s: "sk_live_" + s),
    st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=40).filter(
        lambda s: len(set(s)) > 6).map(lambda s: f"https://deploy:{s}@git.example.com/repo.git"),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(before=_WORDS, secret=_SECRETS, after=_WORDS)
def test_a_real_shaped_secret_in_prose_is_always_redacted(before: str, secret: str, after: str) -> None:
    value = secret.split(":")[2].split("@")[0] if secret.startswith("https://") else secret
    out = redact(f"{before} {secret} {after}".strip())
    assert value not in out.text and "[redacted: " in out.text and sum(out.secrets.values()) >= 1


# -- the session's own captures, and ranking ----------------------------------------------------------------
CALIBRATION_SESSION = [  # a session spent on the question the starter vault's calibration note answers
    rec("user", QUESTION),
    *tool("t1", "Read", {"file_path": "/home/me/vault/scientific/Capacitive soil moisture calibration.md"},
          "# Capacitive soil moisture calibration\n…"),
    say("Calibrate every probe on its own: take the mean of 20 readings in oven-dried mix for the dry point and "
        "in saturated, drained mix for the wet point, then map linearly between the two."),
    rec("user", "What dry and wet readings did probe P1 give when we calibrated the soil moisture probes?"),
    say("P1 read 2870 counts in dry mix and 1410 in wet mix (12-bit ADC, 3.3 V reference)."),
    rec("user", "Why do two soil moisture probes from the same bag need separate calibration?"),
    say("Their raw ADC readings differ by about 11 % in the same soil, so one calibration does not fit both."),
    rec("user", "Are capacitive soil probe readings above 3000 counts reliable after calibration?"),
    say("No: the ESP32 ADC is not linear near its ends, so readings above about 3000 counts are unreliable."),
]


@pytest.mark.parametrize("mode", ["balanced", "focus"])
def test_after_a_captured_session_the_curated_note_answers_its_question_first(
        vault: Path, tmp_path: Path, embedder: Embedder, mode: str) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(CALIBRATION_SESSION), encoding="utf-8")
    assert "4 new" in capture(vault, transcript)
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        for question in (QUESTION, "soil probe calibration", "how do I calibrate the soil probes?"):
            hits = cx.recall(RecallRequest(query=question, k=5, mode=mode, captures="include")).hits
            assert hits[0].path == CALIBRATION, (question, [(h.path, h.score) for h in hits])
            assert "raw" not in hits[0].signals  # a curated note keeps its score
            captured = [h for h in hits if h.path.startswith("raw/")]
            assert captured and all(h.signals["raw"] < 1.0 and "a raw capture" in h.reason for h in captured)


def push(vault: Path, session: str, prompt: str) -> str:
    out = io.StringIO()
    payload = {"session_id": session, "cwd": "/home/me/greenhouse", "hook_event_name": "UserPromptSubmit",
               "prompt": prompt, "transcript_path": "/tmp/t.jsonl"}
    assert hooks.main("prompt", str(vault), DEAD_URL, stdin=io.StringIO(json.dumps(payload)), stdout=out,
                      env={}) == 0
    return out.getvalue()


def test_a_sessions_own_captures_are_never_pushed_back_to_it(vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(CALIBRATION_SESSION), encoding="utf-8")
    capture(vault, transcript)
    with Cortex.open(vault) as cx:
        cx.sync()
    own = "raw/2026-11-30 greenhouse 5e2b7a10 01.md"
    reminded = push(vault, "another-session", QUESTION)  # another session is reminded of the curated note, and
    assert CALIBRATION in reminded and own not in reminded  # of no capture: what was said is not a memory
    start = {"session_id": SID, "cwd": "/home/me/greenhouse", "hook_event_name": "SessionStart", "source": "compact"}
    started = io.StringIO()
    hooks.main("session-start", str(vault), DEAD_URL, stdin=io.StringIO(json.dumps(start)), stdout=started,
               env={})  # after a compaction the session has seen nothing, but its captures stay its own
    assert "raw/2026-11-30 greenhouse 5e2b7a10" not in started.getvalue() and started.getvalue()
    assert own not in push(vault, SID, QUESTION)
    state: dict[str, Any] = json.loads((vault / hooks.STATE_DIR / f"{SID}.json").read_text(encoding="utf-8"))
    assert own in state["captured"]


def test_a_chatgpt_export_keeps_every_exchange_and_writes_no_private_span_or_secret(vault: Path,
                                                                                    tmp_path: Path) -> None:
    from vault_cortex.importers import imports

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "conversations.json"
    prompt = "Why does my WAL file keep growing while a report runs?"
    text = fixture.read_text(encoding="utf-8")
    assert prompt in text
    export = tmp_path / "conversations.json"
    export.write_text(text.replace(prompt, f"{prompt} <private>Ann reviews me on Friday.</private> My token is "
                                           f"{GITHUB}."), encoding="utf-8")
    with Cortex.open(vault) as cx:
        done = imports.import_file(cx.vault, export, index=False)
    assert done.counts == {"conversations": 2, "exchanges": 3, "private spans left out": 1, "secrets redacted": 1}
    body = "".join(p.read_text(encoding="utf-8") for p in (vault / "raw").glob("2025-*.md"))
    assert prompt in body and "[private] My token is [redacted: GitHub Token]." in body
    assert "Ann reviews" not in body and GITHUB not in body
