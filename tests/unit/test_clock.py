"""The project's clock: every read of the calendar goes through vault_cortex/clock.py, and VAULT_CORTEX_NOW pins it."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vault_cortex import clock
from vault_cortex.errors import InvalidRequest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "vault_cortex").rglob("*.py")), *sorted((ROOT / "server").rglob("*.py"))]
# what reads the calendar: `now`-like constructors, and the time module's local/UTC/formatted "now" when called
# without the time to convert (time.time() stays allowed: it is compared with file times, which are not pinned)
CALENDAR = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today")}
TIME_NOW = {"localtime", "gmtime", "ctime", "strftime", "asctime"}


def calendar_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        attr = node.func.attr
        reads_now = (name, attr) in CALENDAR or (
            name == "time" and attr in TIME_NOW and len(node.args) <= (1 if attr == "strftime" else 0))
        if reads_now:
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            found.append(f"{where}:{node.lineno} {name}.{attr}()")
    return found


def test_nothing_reads_the_calendar_but_the_clock() -> None:
    """A module that reads "now" itself escapes VAULT_CORTEX_NOW: the doc examples would move with the calendar."""
    reads = [r for p in SOURCES if p.name != "clock.py" or p.parent.name != "vault_cortex" for r in calendar_reads(p)]
    assert not reads, "read the time through vault_cortex.clock:\n" + "\n".join(reads)


def test_the_check_sees_a_calendar_read(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("import time, datetime as dt\nfrom datetime import date, datetime\n"
                   "a = datetime.now()\nb = dt.datetime.now(dt.UTC)\nc = date.today()\nd = time.strftime('%Y')\n"
                   "e = time.strftime('%Y', time.gmtime(0))\nf = time.time()\n", encoding="utf-8")
    found = calendar_reads(src)
    assert [f.split(" ")[1] for f in found] == ["datetime.now()", "datetime.now()", "date.today()",
                                                "time.strftime()"], found


def test_vault_cortex_now_pins_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(clock.NOW_ENV, "2026-11-30T10:00:00+00:00")
    assert clock.now() == datetime(2026, 11, 30, 10, tzinfo=UTC)
    assert clock.now() == clock.now()  # pinned, not started: every process reads the same instant
    assert clock.local_now() == clock.now()
    monkeypatch.setenv(clock.NOW_ENV, "2026-11-30T10:00")  # no offset: the machine's local time
    assert clock.now() == datetime(2026, 11, 30, 10).astimezone().astimezone(UTC)


def test_unset_it_is_the_machines_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(clock.NOW_ENV, raising=False)
    before = datetime.now(UTC)
    assert before <= clock.now() <= datetime.now(UTC)


def test_a_bad_pin_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(clock.NOW_ENV, "last tuesday")
    with pytest.raises(InvalidRequest, match="VAULT_CORTEX_NOW must be an ISO 8601 date-time"):
        clock.now()
