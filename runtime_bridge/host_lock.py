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

    __slots__ = ("_lock", "_waiters")

    #: how long :meth:`share` sleeps, lock released, so that a waiting thread (woken by the
    #: release) takes the GIL and the lock before the sharer takes them back
    HANDOFF_S = 0.00005

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._waiters: set[int] = set()  # set.add / discard are atomic under the GIL

    @property
    def contended(self) -> bool:
        return bool(self._waiters)

    def acquire(self) -> None:
        if self._lock.acquire(blocking=False):
            return
        me = threading.get_ident()
        self._waiters.add(me)
        try:
            self._lock.acquire()
        finally:
            self._waiters.discard(me)

    def release(self) -> None:
        self._lock.release()

    def share(self) -> None:
        """Release the lock (held once), give a waiting thread the chance to take it, and take
        it back (after that thread is done with it)."""
        self._lock.release()
        try:
            time.sleep(self.HANDOFF_S)
        finally:
            self.acquire()

    def __enter__(self) -> HostLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._lock.release()
