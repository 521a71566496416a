"""Recent activity (index/recent.py): created, changed, recalled and opened notes, grouped by day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from vault_cortex.errors import InvalidRequest
from vault_cortex.files.activity import EditEvent, OpenEvent, RecallEvent
from vault_cortex.index.recent import recent
from vault_cortex.index.rows import NoteRow

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _note(path: str, created: str | None, modified: datetime) -> NoteRow:
    return NoteRow(id=1, path=path, title=path, region="short_term", importance=None, created=created, project=None,
                   layer=None, pinned=False, mtime_ns=int(modified.timestamp() * 1e9))


def test_grouped_by_day_newest_first_with_counts_and_details() -> None:
    notes = [_note("a.md", "2026-11-29T09:00+00:00", datetime(2026, 11, 29, 9, 0, 30, tzinfo=UTC)),  # made, not changed
             _note("b.md", "2026-01-01", datetime(2026, 11, 30, 8, 0, tzinfo=UTC)),
             _note("old.md", None, datetime(2026, 1, 1, tzinfo=UTC))]
    events = [RecallEvent(ts=NOW - timedelta(hours=1), client="mcp", query="battery", mode="balanced",
                          paths=("a.md", "b.md", "a.md")),
              RecallEvent(ts=NOW - timedelta(hours=2), client="mcp", query="earlier", mode="balanced", paths=("a.md",)),
              OpenEvent(ts=NOW - timedelta(days=1, hours=1), client="http", path="b.md"),
              EditEvent(ts=NOW - timedelta(hours=4), client="mcp", path="b.md", op="append"),
              EditEvent(ts=NOW - timedelta(hours=3), client="mcp", path="b.md", op="set_property"),
              OpenEvent(ts=NOW - timedelta(days=9), client="http", path="old.md")]
    r = recent(notes, events, now=NOW, days=7, tz=UTC)
    assert [g.date for g in r.groups] == ["2026-11-30", "2026-11-29"]
    today = {(i.path, i.kind): i for i in r.groups[0].items}
    assert today[("a.md", "recalled")].count == 2 and today[("a.md", "recalled")].detail == "battery"
    assert today[("b.md", "changed")].count == 2  # the two logged edits; the file's time only marks the change
    assert today[("b.md", "changed")].detail == "append, set_property"
    yesterday = {(i.path, i.kind) for i in r.groups[1].items}
    assert yesterday == {("a.md", "created"), ("b.md", "opened")}
    assert r.total == len(today) + len(yesterday)
    only = recent(notes, events, now=NOW, days=7, kinds=["opened"], tz=UTC)
    assert [(g.date, [i.path for i in g.items]) for g in only.groups] == [("2026-11-29", ["b.md"])]


def test_bad_arguments() -> None:
    with pytest.raises(InvalidRequest, match="unknown kind 'deleted'"):
        recent([], [], now=NOW, days=7, kinds=["deleted"])
    with pytest.raises(InvalidRequest, match="days must be between"):
        recent([], [], now=NOW, days=0)


@pytest.mark.parametrize("created", ["0001-01-01", "0001-01-01T00:00+05:00", "9999-12-31T23:59-05:00"])
def test_a_note_dated_at_the_edge_of_the_calendar_is_left_out_not_an_error(created: str) -> None:
    """`created: 0001-01-01` made every `recent` fail ("year 0 is out of range") over CLI, HTTP and MCP."""
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    notes = [_note("ancient.md", created, now - timedelta(hours=1)), _note("new.md", "2026-11-30T09:00+00:00", now)]
    got = recent(notes, [], now=now, days=7, tz=UTC)
    paths = {i.path for g in got.groups for i in g.items if i.kind == "created"}
    assert paths == {"new.md"}
