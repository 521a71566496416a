"""The project's clock: what vault-cortex takes "now" to be.

Every read of the calendar in the library and the server goes through `now()` (`tests/unit/test_clock.py` fails
when a module reads it any other way). `VAULT_CORTEX_NOW` pins the clock to one instant, an ISO 8601 date-time
(`2026-11-30T10:00:00+00:00`; without an offset it is the machine's local time): recency, relative filters
(`created_after=7d`), decay, the dates written into new notes and the activity log then read that instant, so what a
command prints does not move with the calendar. The doc examples run with it pinned to the starter vault's present;
a user can replay a day the same way. Unset, it is the machine's clock.

`wall()` is always the machine's clock, in epoch seconds: for comparing with the times the file system records
(the mtimes of state files), which a pinned clock does not move. Durations use `time.monotonic`, not this.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

from vault_cortex.errors import InvalidRequest

NOW_ENV = "VAULT_CORTEX_NOW"


def pinned(value: str | None = None) -> datetime | None:
    """The instant `VAULT_CORTEX_NOW` (or `value`) pins the clock to, as an aware date-time; None when unset."""
    text = (os.environ.get(NOW_ENV, "") if value is None else value).strip()
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRequest(f"{NOW_ENV} must be an ISO 8601 date-time like 2026-11-30T10:00:00+00:00, "
                             f"not {text!r}") from None
    return when if when.tzinfo else when.astimezone()


def now() -> datetime:
    """The current instant (UTC), or the pinned one."""
    fixed = pinned()
    return fixed.astimezone(UTC) if fixed else datetime.now(UTC)


def local_now() -> datetime:
    """`now()` in the machine's time zone (a schedule's "02:00" is local)."""
    return now().astimezone()


def wall() -> float:
    """The machine's clock in epoch seconds, never pinned: for comparing with file times."""
    return time.time()
