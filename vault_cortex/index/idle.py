"""Something done once a resource has gone unused for a while: uses are counted, the last one to end sets a
deadline, and one thread, started at the first idle and kept for the life of the resource, acts when it passes
with no use under way (a timer thread started at the end of every use cost ~1 ms of each query)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


class WhenIdle:
    """Call `action` once nothing has used the resource (`using`) for `delay` seconds, again after each new use."""

    def __init__(self, delay: float, action: Callable[[], None], name: str) -> None:
        self._delay, self._action, self._name = delay, action, name
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._watch: threading.Thread | None = None
        self._at: float | None = None  # when the action is due, once the last use has ended
        self._using = 0  # uses under way: the action waits for none
        self._stopped = False
        self.fired = 0  # times the action was taken

    @contextmanager
    def using(self) -> Iterator[None]:
        """One use: the deadline is counted from the end of the last use under way, not from each one's."""
        with self._lock:
            self._using += 1
        try:
            yield
        finally:
            with self._lock:
                self._using -= 1
                if not self._using and not self._stopped:
                    self._at = time.monotonic() + self._delay
                    if self._watch is None:
                        self._watch = threading.Thread(target=self._wait, name=self._name, daemon=True)
                        self._watch.start()
                    else:
                        self._wake.notify()

    def stop(self) -> None:
        """No action any more (the process is ending); one under way finishes first."""
        with self._lock:
            self._stopped = True
            self._wake.notify()
            watch = self._watch
        if watch is not None and watch is not threading.current_thread():
            watch.join()

    def _wait(self) -> None:
        with self._lock:
            while not self._stopped:
                left = None if self._at is None else self._at - time.monotonic()
                if left is None or left > 0:
                    self._wake.wait(left)
                    continue
                self._at = None
                if self._using:  # in use again: the use that ends it sets a new deadline
                    continue
                self.fired += 1
                self._lock.release()
                try:
                    self._action()
                except Exception:  # noqa: BLE001 - the watch goes on; the next idle tries again
                    log.exception("%s failed", self._name)
                finally:
                    self._lock.acquire()
