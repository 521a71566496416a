"""Activity log: line format, tolerant decoding and the replay maths."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_cortex.files.activity import (
    Activity,
    Event,
    FeedbackEvent,
    OpenEvent,
    RecallEvent,
    TouchEvent,
    decode_lines,
    encode,
    replay,
    stamp,
)

T0 = datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def recall(minutes: int, *paths: str, query: str = "q") -> RecallEvent:
    return RecallEvent(ts=at(minutes), client="cli", query=query, mode="balanced", paths=paths)


def test_line_format_is_one_self_contained_json_object() -> None:
    line = encode(recall(0, "a.md", "b.md"))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert msgspec.json.decode(line) == {
        "ts": "2026-11-30T01:02:03Z", "event": "recall", "client": "cli", "query": "q", "mode": "balanced",
        "paths": ["a.md", "b.md"],
    }
    touch = encode(TouchEvent(ts=T0, client="hook", concept="rain"))
    assert b"path" not in touch  # optional fields left out when unset


def test_timestamps_are_utc_whole_seconds() -> None:
    plus_one = datetime(2026, 12, 1, 0, 30, 0, 999_999, tzinfo=timezone(timedelta(hours=1)))
    assert stamp(plus_one) == datetime(2026, 11, 30, 23, 30, 0, tzinfo=UTC)
    assert b'"ts":"2026-11-30T23:30:00Z"' in encode(OpenEvent(ts=plus_one, client="http", path="a.md"))
    with pytest.raises(ValueError):
        stamp(datetime(2026, 11, 30))


def test_round_trip_of_every_kind() -> None:
    events: list[Event] = [
        recall(0, "a.md"),
        OpenEvent(ts=at(1), client="plugin", path="a.md"),
        TouchEvent(ts=at(2), client="mcp", concept="rain", path="b.md"),
        FeedbackEvent(ts=at(3), client="hook", path="a.md", useful=False, query="why"),
    ]
    decoded, bad = decode_lines(b"".join(encode(e) for e in events))
    assert (decoded, bad) == (events, 0)


def test_malformed_lines_are_skipped_and_counted() -> None:
    good = encode(OpenEvent(ts=T0, client="cli", path="a.md"))
    data = b"".join([
        good,
        b"{not json\n",
        b'{"event":"open","ts":"2026-11-30T01:02:03Z","client":"cli"}\n',  # no path
        b'{"event":"open","ts":"2026-11-30T01:02:03","client":"cli","path":"a.md"}\n',  # naive time
        b'{"event":"recall","ts":"2026-11-30T01:02:03Z","client":"cli","query":"q","mode":"m","paths":"a"}\n',
        b"[1, 2]\n",
        b"\n   \n",  # blank lines are not errors
        good.rstrip(b"\n") + b"\r\n",  # a CRLF checkout still reads
        b'{"event":"open","ts":"2026-11-30T01:0',  # a torn last line
    ])
    events, bad = decode_lines(data)
    assert len(events) == 2
    assert bad == 6


def test_unknown_fields_and_kinds_are_tolerated() -> None:
    data = (
        b'{"event":"open","ts":"2026-11-30T01:02:03Z","client":"cli","path":"a.md","session":"s1","v":2}\n'
        b'{"event":"rename","ts":"2026-11-30T01:02:03Z","client":"cli","old":"a.md","new":"b.md"}\n'
    )
    events, bad = decode_lines(data)
    assert events == [OpenEvent(ts=T0, client="cli", path="a.md")]
    assert bad == 0  # a kind a newer version writes is ignored, not reported as damage


def test_access_counts_and_last_access() -> None:
    activity = replay([
        recall(0, "a.md", "b.md", "a.md"),  # a path listed twice counts once
        OpenEvent(ts=at(5), client="plugin", path="a.md"),
        FeedbackEvent(ts=at(9), client="hook", path="b.md", useful=True),
        FeedbackEvent(ts=at(20), client="hook", path="c.md", useful=False),
        recall(3, "b.md"),
    ])
    a, b, c = activity.paths["a.md"], activity.paths["b.md"], activity.paths["c.md"]
    assert (a.access_count, a.recalled, a.opened, a.last_access) == (2, 1, 1, at(5))
    assert (b.access_count, b.recalled, b.useful, b.last_access) == (3, 2, 1, at(9))
    assert (c.access_count, c.not_useful, c.last_access) == (0, 1, None)
    assert activity.events == 5


def test_co_retrieval_pairs_among_top_results_only() -> None:
    activity = replay([
        recall(0, "a", "b", "c", "d", "e", "f", "g"),
        recall(1, "c", "a"),
        recall(2, "a", "a"),
    ])
    assert len(activity.pairs()) == 10  # C(5, 2): f and g are past the top 5
    assert activity.co_count("a", "c") == activity.co_count("c", "a") == 2
    assert activity.co_count("a", "b") == 1
    assert activity.co_count("a", "f") == 0 and activity.co_count("a", "a") == 0
    assert all(x < y for x, y, _ in activity.pairs())
    assert activity.pairs()[0] == ("a", "b", 1)
    assert activity.paths["f"].access_count == 1  # still an access, just not paired
    assert len(replay([recall(0, *"abcdefg")], top=7).pairs()) == 21


def test_concept_touches() -> None:
    plus_two = timezone(timedelta(hours=2))
    activity = replay([
        TouchEvent(ts=at(4), client="mcp", concept="rain"),
        TouchEvent(ts=at(1).astimezone(plus_two), client="mcp", concept="rain", path="a.md"),
        TouchEvent(ts=at(2), client="mcp", concept="sea"),
    ])
    assert activity.concepts["rain"].touches == 2
    assert activity.concepts["rain"].last_touch == at(4)
    assert activity.concepts["sea"].last_touch.tzinfo == UTC
    assert "a.md" not in activity.paths  # a touch is not an access of the note


def test_empty_log() -> None:
    assert replay([]) == Activity()


_paths = st.sampled_from(["a.md", "b.md", "c.md", "d.md", "e.md", "f.md", "g.md"])
_ts = st.integers(min_value=0, max_value=5).map(at)  # few distinct times: many ties
_event = st.one_of(
    st.builds(RecallEvent, ts=_ts, client=st.just("cli"), query=st.just("q"), mode=st.just("m"),
              paths=st.lists(_paths, max_size=8).map(tuple)),
    st.builds(OpenEvent, ts=_ts, client=st.just("http"), path=_paths),
    st.builds(FeedbackEvent, ts=_ts, client=st.just("hook"), path=_paths, useful=st.booleans()),
    st.builds(TouchEvent, ts=_ts, client=st.just("mcp"), concept=st.sampled_from(["rain", "sea"])),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_event, max_size=40), st.randoms(use_true_random=False))
def test_replay_is_independent_of_order(events: list[Event], rnd: random.Random) -> None:
    shuffled = list(events)
    rnd.shuffle(shuffled)
    first, second = replay(events), replay(shuffled)
    assert first == second
    assert msgspec.json.encode(first) == msgspec.json.encode(second)  # same key order too


@settings(max_examples=100, deadline=None)
@given(st.lists(_event, max_size=30), st.lists(_event, max_size=30))
def test_union_of_two_logs_replays_to_the_sum(left: list[Event], right: list[Event]) -> None:
    merged = replay(left + right)
    a, b = replay(left), replay(right)
    for path, stats in merged.paths.items():
        parts = [x.paths[path] for x in (a, b) if path in x.paths]
        assert stats.access_count == sum(p.access_count for p in parts)
        times = [p.last_access for p in parts if p.last_access is not None]
        assert stats.last_access == (max(times) if times else None)
    for x, y, count in merged.pairs():
        assert count == a.co_count(x, y) + b.co_count(x, y)
    assert merged.events == a.events + b.events
