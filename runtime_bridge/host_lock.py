"""The executor host's lock: a re-entrant lock that knows whether another thread waits for it.

The control step holds the host's lock while it steps every active command; with many commands
that is milliseconds, and a dispatch arriving meanwhile would wait for all of it. The step asks
:attr:`HostLock.contended` between commands and, only when an answer is waiting, journals what
it has done and lets the waiting thread in (:meth:`HostLock.share`).
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

__all__ = ["HostLock"]


class HostLock:
    """A :class:`threading.RLock` (``with lock:``) that counts the threads blocked on it."""

    __slots__ = ("_depth", "_lock", "_waiters")

    #: how often :meth:`share` looks whether the waiting threads have taken the lock
    HANDOFF_S = 0.00005

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._waiters: set[int] = set()  # set.add / discard are atomic under the GIL
        self._depth = 0  # how many times the owner holds it (changed by the owner only)

    @property
    def contended(self) -> bool:
        return bool(self._waiters)

    def acquire(self) -> None:
        if not self._lock.acquire(blocking=False):
            me = threading.get_ident()
            self._waiters.add(me)
            try:
                self._lock.acquire()
            finally:
                self._waiters.discard(me)
        self._depth += 1

    def release(self) -> None:
        self._depth -= 1
        self._lock.release()

    def share(self) -> None:
        """Release the lock (when held once), wait until each thread that was waiting for it
        has taken it, and take it back (after they are done with it)."""
        waiting = set(self._waiters)
        if not waiting or self._depth != 1:
            return
        self.release()
        try:
            while waiting & self._waiters:
                time.sleep(self.HANDOFF_S)
        finally:
            self.acquire()

    def park(self, until: threading.Event, timeout_s: float) -> None:
        """Release the lock (when held once) until ``until`` is set or ``timeout_s`` passes,
        and until each thread that was waiting for it has taken it; then take it back."""
        if self._depth != 1:
            return
        waiting = set(self._waiters)
        self.release()
        try:
            until.wait(timeout_s)
            while waiting & self._waiters:
                time.sleep(self.HANDOFF_S)
        finally:
            self.acquire()

    def __enter__(self) -> HostLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
