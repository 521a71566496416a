"""The privacy gate: secrets of every class a probe found leaking, generated inside realistic text, never survive
`redact`; ordinary text (commit hashes, UUIDs, paths) is left alone; a hook's query is logged as a keyed
fingerprint, and co-retrieval still counts distinct queries from it."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_cortex.files.activity import FeedbackEvent, RecallEvent, gated, replay
from vault_cortex.privacy import PRIVATE_MARK, fingerprint, redact

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_PUNCT = "!#%&*+,./;?@^_~-"
_HEX = "0123456789abcdef"
_pw = st.text(_ALNUM + _PUNCT, min_size=8, max_size=24).filter(
    lambda s: sum(c.isalnum() for c in s) >= 6 and not s.startswith(("-", "@")) and "@" not in s[-1:])
_word_pw = st.text(_ALNUM, min_size=8, max_size=24).filter(lambda s: len(set(s)) > 4)
_hex32 = st.text(_HEX, min_size=32, max_size=32).filter(lambda s: len(set(s)) > 6)
_hex40 = st.text(_HEX, min_size=40, max_size=40).filter(lambda s: len(set(s)) > 6)
_token = st.text(_ALNUM + "-._~+/", min_size=16, max_size=48).filter(
    lambda s: sum(c.isalnum() for c in s) >= 12 and s[0].isalnum() and s[-1].isalnum())

# (class, strategy of (text holding the secret, the secret))
CLASSES = {
    "url password with / or #": _pw.map(lambda p: (f"postgres://app:{p}/x#{p[:3]}@db.local:5432/greenhouse",
                                                   f"{p}/x#{p[:3]}")),
    "Authorization: Bearer": _token.map(lambda t: (f"curl -H 'Authorization: Bearer {t}' https://api.local", t)),
    "Authorization: Basic": _token.map(lambda t: (f"Authorization: Basic {t}", t)),
    "curl -u user:pw": _pw.map(lambda p: (f"curl -u admin:{p} https://api.local/v1", p)),
    "mysql -pPW": _word_pw.map(lambda p: (f"mysql -u root -p{p} greenhouse < dump.sql", p)),
    "sshpass -p PW": _word_pw.map(lambda p: (f"sshpass -p {p} ssh pi@probe.local", p)),
    "PGPASSWORD=": _pw.map(lambda p: (f"PGPASSWORD={p} psql -h db.local -U app", p)),
    "--password=": _word_pw.map(lambda p: (f"mongo --username app --password={p} db", p)),
    "32-hex key": _hex32.map(lambda h: (f"the api key {h} was rejected", h)),
    "40-hex token": _hex40.map(lambda h: (f"token: {h}", h)),
    "hex secret=": _hex32.map(lambda h: (f"client_secret={h}", h)),
}
_PROSE = st.lists(st.sampled_from("the collector failed again so I ran this and it said locked while a report ran "
                                  "please check the probe board on the bench".split()), max_size=10).map(" ".join)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(case=st.sampled_from(sorted(CLASSES)), data=st.data(), before=_PROSE, after=_PROSE)
def test_no_secret_of_any_class_survives(case: str, data: st.DataObject, before: str, after: str) -> None:
    text, secret = data.draw(CLASSES[case])
    for line in (f"{before} {text} {after}", f"{before}\n{text}\n{after}", f"`{text}`", f'"{text}"'):
        out = redact(line)
        assert secret not in out.text, (case, line, out.text)
        assert "[redacted: " in out.text


_inner = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="<>"),
                 min_size=3, max_size=40).filter(lambda s: s.strip())


@given(outer=_inner, inner=_inner, tail=_inner, closed=st.booleans())
def test_nested_and_unclosed_private_spans_keep_nothing_of_the_outer_span(outer: str, inner: str, tail: str,
                                                                           closed: bool) -> None:
    marked = f"zq{outer}qz"
    text = f"before <private>{marked} <PRIVATE>{inner}</private> {marked}{'</private>' if closed else ''} after"
    out = redact(text)
    assert marked not in out.text and out.private == 1
    assert out.text.startswith("before " + PRIVATE_MARK)
    assert out.text.endswith(" after") == closed


# Ordinary text a session is full of: none of it is a secret.
ORDINARY_LINES = [
    "commit {h40}\nAuthor: Ann <ann@example.com>\nDate:   Mon Nov 30 10:00:00 2026 +0000",
    "{h7} Fix the busy timeout of the collector",
    "Merge: {h7} {h7b}",
    "request id {uuid} failed after 3 retries",
    "open /home/me/greenhouse/collector/{h7}/config.toml and src/key_store.py:42",
    "sha256 of the dump: {h64}",
    "docker pull ghcr.io/acme/collector@sha256:{h64}",
    "the key insight is that the token bucket refills at 5 per second",
    "git checkout -b fix/busy-timeout && git push -u origin fix/busy-timeout",
    "see https://github.com/acme/collector/blob/{h40}/src/main.py#L42",
    "ssh -p 2222 pi@probe.local 'journalctl -u collector'",
    "mysql -u root greenhouse -e 'select count(*) from readings'",
    "Bearer tokens expire after an hour; the Basic scheme is off.",
    "export PGPASSWORD=$DB_PASSWORD",
    "curl -u \"$USER:$PASS\" https://api.local",
]
MANGLE_RATE = 0.02  # at most this share of ordinary lines may be changed at all


def test_ordinary_text_is_not_mangled_beyond_the_stated_rate() -> None:
    rng = random.Random(7)

    def hexes(n: int) -> str:
        return "".join(rng.choice(_HEX) for _ in range(n))

    lines = []
    for _ in range(40):
        for template in ORDINARY_LINES:
            u = hexes(32)
            lines.append(template.format(h40=hexes(40), h7=hexes(7), h7b=hexes(7), h64=hexes(64),
                                         uuid=f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"))
    changed = [line for line in lines if redact(line).text != line]
    assert len(changed) <= MANGLE_RATE * len(lines), changed[:5]


TS = datetime(2026, 11, 30, 10, tzinfo=UTC)


def test_a_hooks_query_is_logged_as_a_keyed_fingerprint_and_its_length() -> None:
    query = "Why is it locked? <private>PIN 4921</private> password=Hunter2Secret!"
    event = gated(RecallEvent(ts=TS, client="hook", query=query, mode="balanced", paths=("a.md",)),
                  lambda: b"k" * 32)
    assert isinstance(event, RecallEvent)
    assert event.query == "" and event.query_chars == len(query)
    assert event.query_hash == fingerprint(query, b"k" * 32) != fingerprint(query, b"j" * 32)
    kept = gated(RecallEvent(ts=TS, client="hook", query=query, mode="balanced", paths=()), lambda: b"k" * 32,
                 keep_hook_queries=True)
    assert isinstance(kept, RecallEvent) and "4921" not in kept.query and "Hunter2" not in kept.query
    typed = gated(RecallEvent(ts=TS, client="cli", query="password=Hunter2Secret! why", mode="balanced", paths=()),
                  None)
    assert isinstance(typed, RecallEvent) and "Hunter2" not in typed.query and typed.query.endswith(" why")
    feedback = gated(FeedbackEvent(ts=TS, client="mcp", path="a.md", useful=True, query="token=Hunter2Secret!"), None)
    assert isinstance(feedback, FeedbackEvent) and "Hunter2" not in (feedback.query or "")


def test_co_retrieval_counts_distinct_hook_queries_by_their_fingerprints() -> None:
    def hook(query: str) -> RecallEvent:
        event = gated(RecallEvent(ts=TS, client="hook", query=query, mode="balanced", paths=("a.md", "b.md")),
                      lambda: b"k" * 32)
        assert isinstance(event, RecallEvent)
        return event

    activity = replay([hook("Why is it locked?"), hook("why  is it LOCKED?"), hook("How do I calibrate?")])
    assert activity.co_count("a.md", "b.md") == 3
    assert len(activity.co_queries["a.md"]["b.md"]) == 2  # one query typed twice counts once


def test_every_writer_of_session_text_goes_through_the_gate() -> None:
    """The activity log has one writer of lines (`append_line`), called only by `activity.append`, which passes
    each event through `gated`; the importers write an exchange only after `scrub`, which calls `redact`."""
    import ast
    from pathlib import Path

    import vault_cortex

    package = Path(vault_cortex.__file__).parent

    def calls(path: Path) -> dict[str, set[str]]:
        """Function name → the names it calls."""
        out: dict[str, set[str]] = {}
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, ast.FunctionDef):
                out[fn.name] = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
                                for n in ast.walk(fn) if isinstance(n, ast.Call)}
        return out

    callers = {(p.relative_to(package).as_posix(), fn) for p in package.rglob("*.py")
               for fn, called in calls(p).items() if "append_line" in called}
    assert callers == {("files/activity.py", "append")}
    assert "gated" in calls(package / "files/activity.py")["append"]
    assert "redact" in calls(package / "importers/transcript.py")["scrub"]
    for importer in ("importers/capture.py", "importers/chatgpt.py"):
        writers = {fn for fn, called in calls(package / importer).items() if {"render_exchange", "write"} <= called}
        assert writers and all("scrub" in calls(package / importer)[fn] for fn in writers), importer
    store = calls(package / "store/change.py")
    assert {fn for fn, called in store.items() if "append_event" in called} == {"log"}
