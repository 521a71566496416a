"""One ISO date parser (files/properties.parse_datetime) serves every caller: recall filters and ranking, sleep,
transcripts and recent activity; each form any of them accepted is accepted by all."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

import vault_cortex
from vault_cortex.files.properties import parse_datetime
from vault_cortex.recall.pipeline import parse_time

PACKAGE = Path(vault_cortex.__file__).parent
PLUS2 = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),  # a date: midnight
        ("2026-11-30T10:15", datetime(2026, 11, 30, 10, 15, tzinfo=UTC)),  # as `remember` writes `created:`
        ("2026-11-30 10:15:30", datetime(2026, 11, 30, 10, 15, 30, tzinfo=UTC)),  # a space, seconds
        ("2026-11-30T10:15:30.250Z", datetime(2026, 11, 30, 10, 15, 30, 250000, tzinfo=UTC)),  # a log's timestamp
        ("2026-11-30T10:15+02:00", datetime(2026, 11, 30, 10, 15, tzinfo=PLUS2)),  # an offset is kept
        ("  2026-11-30T10:15Z \n", datetime(2026, 11, 30, 10, 15, tzinfo=UTC)),  # as typed, with spaces
        (date(2026, 11, 30), datetime(2026, 11, 30, tzinfo=UTC)),  # YAML reads `created: 2026-11-30` as a date
        (datetime(2026, 11, 30, 10, 15), datetime(2026, 11, 30, 10, 15, tzinfo=UTC)),  # ... and a naive datetime
        (datetime(2026, 11, 30, 10, 15, tzinfo=PLUS2), datetime(2026, 11, 30, 10, 15, tzinfo=PLUS2)),
    ],
)
def test_each_accepted_form(value: object, expected: datetime) -> None:
    when = parse_datetime(value)
    assert when == expected and when is not None and when.utcoffset() == expected.utcoffset()
    assert parse_time(value if isinstance(value, str) else str(value)) == expected.timestamp()


@pytest.mark.parametrize("value", [None, "", "  ", "yesterday", "7d", "2026-13-01", "30/11/2026", 5, 1.5, True,
                                   ["2026-11-30"]])
def test_what_is_not_a_date(value: object) -> None:
    assert parse_datetime(value) is None


def test_a_naive_value_in_the_zone_asked_for() -> None:
    assert parse_datetime("2026-11-30T10:15", naive=PLUS2) == datetime(2026, 11, 30, 10, 15, tzinfo=PLUS2)
    local = parse_datetime("2026-11-30T10:15", naive=None)  # recent activity: local time, as `remember` writes it
    assert local is not None and local == datetime(2026, 11, 30, 10, 15).astimezone()
    assert parse_datetime("2026-11-30T10:15Z", naive=None) == datetime(2026, 11, 30, 10, 15, tzinfo=UTC)


ALLOWED = ("properties.py", "yamltext.py", "clock.py")  # clock.py reads VAULT_CORTEX_NOW, not a note's date


def test_iso_dates_are_parsed_in_one_place() -> None:
    found = [f"{p.relative_to(PACKAGE)}:{n}" for p in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"datetime\.fromisoformat\(", line) and p.name not in ALLOWED]
    assert not found, f"use files.properties.parse_datetime instead of: {found}"
