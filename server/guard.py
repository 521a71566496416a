"""What keeps `serve` answering when connections pile up: a bound on open connections below the file-descriptor
limit, a deadline for a request's headers, and repeated log lines said once.

1,030 half-sent requests, drip-fed a header line every 5 s, used to exhaust a 1,024 descriptor limit (the usual
desktop default; macOS's is 256): health, recall and remember timed out, and asyncio logged "socket.accept()
out of system resource" ~880,000 times in 25 s. Now the soft limit is raised to the hard one at start, a
connection past the bound is closed as it is accepted, one whose headers are not complete within
HEADER_SECONDS is closed, and a log line repeated within REPEAT_SECONDS is counted, not written.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("server")

HEADER_SECONDS = 10.0  # a request's line and headers must arrive within this (a slow client still gets 10 s)
RESERVED_FDS = 128  # descriptors kept for the index, the watcher, per-thread connections, logs and the model
REPEAT_SECONDS = 10.0


def raise_fd_limit(wanted: int = 65_536) -> int:
    """Raise the soft open-file limit toward the hard one (the default soft limit is often 1,024 or 256);
    returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d: %s", soft, exc)
    return int(soft)


def max_connections(soft_limit: int) -> int:
    """How many connections may be open at once: at most half the descriptors (a burst of new connections is
    accepted, up to the listen backlog, before they can be turned away), and RESERVED_FDS left for the index,
    the watcher, the per-thread database connections, the model and logs."""
    return max(16, min(soft_limit - RESERVED_FDS, soft_limit // 2))


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a bound on open connections and a deadline for each request's headers
    (set by `guarded`)."""

    limit = 1_000
    header_seconds = HEADER_SECONDS

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limit:
            transport.close()  # past the bound: closed as accepted, so the descriptors never run out
            self.transport = transport
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.flow is not None:  # None: turned away in connection_made
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.flow is not None:
            super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # the request's headers are in

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets its own deadline

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def guarded(limit: int, header_seconds: float = HEADER_SECONDS) -> type[GuardedH11]:
    """The protocol class for uvicorn's `http=`, with these bounds."""
    return type("Guarded", (GuardedH11,), {"limit": limit, "header_seconds": header_seconds})


class OncePerWhile(logging.Filter):
    """Lets a log record through once per REPEAT_SECONDS for each distinct message; the rest are counted and
    the count said with the next one let through."""

    def __init__(self, seconds: float = REPEAT_SECONDS) -> None:
        super().__init__()
        self.seconds = seconds
        self._last: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{record.levelno}:{record.msg}"
        now = time.monotonic()
        last, dropped = self._last.get(key, (0.0, 0))
        if now - last < self.seconds:
            self._last[key] = (last, dropped + 1)
            return False
        if dropped:
            record.msg = f"{record.msg} (and {dropped} more like it in the last {now - last:.0f} s)"
        self._last[key] = (now, 0)
        if len(self._last) > 1_000:
            self._last.clear()
        return True
