"""When a control step lets requests in: the host's lock, and the give-way scheduler.

The control step holds the host's lock while it steps every active command; with many commands
that is milliseconds, and a dispatch, cancel or query arriving meanwhile would wait for all of
it. Between two commands the step asks the :class:`GiveWayScheduler` whether to let requests
in, in one of three ways:

- **through a give-way** (:class:`GiveWay`): the thread that answers requests runs the step's
  bookkeeping itself (the runtime server's broker does, :mod:`runtime_bridge.zmq.inline`);
  every ``LOOK_S`` of work it answers the requests waiting, there and then, with no lock or
  interpreter changing hands, and every ``OFFER_S`` in which none came it offers the CPU to
  whatever else waits for it (``sched_yield``: a process woken on its core would otherwise
  wait for the whole step). A look costs about half a microsecond, a request that arrives in
  the middle of a step waits half a ``LOOK_S`` on average for it;
- **stepping aside**: a thread answering a request (``with scheduler.answering():``) makes the
  step journal what it has done, let go of the lock and sleep until the answer has left, so
  the answering thread has the interpreter to itself;
- **sharing the lock**: every ``SHARE_S``, when another thread waits for the lock
  (:attr:`HostLock.contended`), the step journals what it has done and lets it in.

A step gives way for at most ``YIELD_SHARE`` of a control period in all, so a flood of requests
delays the control loop by a bounded amount and never starves it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

__all__ = ["GiveWay", "GiveWayScheduler", "HostLock"]


class GiveWay(Protocol):
    """Handed to a control step's bookkeeping by the thread that answers requests when that
    thread runs it (the runtime server's broker): ``pending()`` says whether a request waits (a
    cheap look at the socket), ``answer()`` answers one there and then, on the same thread."""

    def pending(self) -> bool: ...

    def answer(self) -> None: ...


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

    def __enter__(self) -> HostLock:  # acquire(), inlined: every request takes the lock
        if not self._lock.acquire(False):
            me = threading.get_ident()
            self._waiters.add(me)
            try:
                self._lock.acquire()
            finally:
                self._waiters.discard(me)
        self._depth += 1
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._depth -= 1  # release(), inlined
        self._lock.release()


class GiveWayScheduler:
    """See the module docstring. ``journal`` journals what the step has done (called before any
    other thread is let in: an answer may only tell what is journaled); ``check_open`` raises
    once the host is closed (checked whenever the step takes the lock back)."""

    SHARE_S = 0.0005
    LOOK_S = 0.00003
    OFFER_S = 0.0001
    YIELD_SHARE = 0.25

    def __init__(self, *, journal: Callable[[], None], check_open: Callable[[], None]) -> None:
        self.lock = HostLock()
        self._journal = journal
        self._check_open = check_open
        self._answers = _Answering(self)
        self._answer_lock = threading.Lock()
        self._answering = 0  # requests being answered now
        self._parked = False  # the step is waiting for them to leave
        self._answered = threading.Event()
        self._offered = 0.0  # when the step last offered the CPU (perf_counter)
        #: how long the current step may still give way (seconds)
        self.yield_left = 0.0
        #: the give-way the current step's bookkeeping runs through, if any
        self.give_way: GiveWay | None = None

    def answering(self) -> _Answering:
        """``with scheduler.answering():`` around the handling of one request; cheap,
        re-entrant across threads."""
        return self._answers

    def begin(self, control_period_s: float, give_way: GiveWay | None) -> None:
        """A step begins: its yield budget, and the give-way it runs through (if any)."""
        self.yield_left = self.YIELD_SHARE * control_period_s
        self.give_way = give_way

    def end(self) -> None:
        self.give_way = None

    def share(self, since: float) -> float:
        """Between two commands of a step (``since``: when it last gave way). With a give-way,
        every ``LOOK_S``: answer the requests waiting, here and now, or else (once per
        ``OFFER_S``) offer the CPU.
        Otherwise, when an answer is being made, step aside; and every ``SHARE_S``, when
        another thread waits for the lock, journal what is done and let that request in.
        Returns the new ``since``."""
        give_way = self.give_way
        if give_way is not None:
            now = time.perf_counter()
            if now - since < self.LOOK_S:
                return since
            if self.yield_left <= 0 or not give_way.pending():
                if now - self._offered >= self.OFFER_S:
                    os.sched_yield()
                    self._offered = now = time.perf_counter()
                return now
            while True:
                give_way.answer()
                spent = time.perf_counter() - now
                if spent >= self.yield_left or not give_way.pending():
                    break
            self.yield_left -= spent
            self._check_open()
            return time.perf_counter()
        if self._answering and self.yield_left > 0:
            self._step_aside()
            return time.perf_counter()
        now = time.perf_counter()
        if now - since < self.SHARE_S or not self.lock.contended:
            return since
        self._journal()
        self.lock.share()
        self._check_open()
        return time.perf_counter()

    def _step_aside(self) -> None:
        """Journal what the step has done, and sleep without the lock until no answer is being
        made (or the step's yield budget is spent)."""
        self._journal()
        t0 = time.perf_counter()
        self._parked = True
        self._answered.clear()
        try:
            if self._answering:
                self.lock.park(self._answered, self.yield_left)
        finally:
            self._parked = False
        self.yield_left -= time.perf_counter() - t0
        self._check_open()

    def _answer_begins(self) -> None:
        with self._answer_lock:
            self._answering += 1

    def _answer_ends(self) -> None:
        with self._answer_lock:
            self._answering -= 1
            if not self._answering and self._parked:
                self._answered.set()


class _Answering:
    """The context manager :meth:`GiveWayScheduler.answering` returns."""

    __slots__ = ("_scheduler",)

    def __init__(self, scheduler: GiveWayScheduler) -> None:
        self._scheduler = scheduler

    def __enter__(self) -> None:
        self._scheduler._answer_begins()

    def __exit__(self, *exc: object) -> None:
        self._scheduler._answer_ends()
