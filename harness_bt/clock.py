"""Injected time. Everything that measures intervals takes a :class:`Clock`; tests never sleep."""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

from harness_bt.errors import DefinitionError

__all__ = ["Clock", "FakeClock", "SimClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """A monotonic clock (for intervals and deadlines) plus a wall clock (for logs)."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The process's real clocks."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that moves only when told to; ``sleep`` advances it instantly."""

    def __init__(self, start: float = 0.0, *, wall_start: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self._wall_offset = wall_start - start

    def monotonic(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._now + self._wall_offset

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise DefinitionError("INVALID_CLOCK", f"a monotonic clock cannot go back "
                                  f"({seconds} s)", fix="advance by zero or more seconds")
        self._now += seconds
        return self._now

    def set(self, now: float) -> None:
        if now < self._now:
            raise DefinitionError("INVALID_CLOCK", f"a monotonic clock cannot go back from "
                                  f"{self._now} to {now}", fix="set a time at or after now")
        self._now = float(now)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._now += seconds


class SimClock(FakeClock):
    """Simulation time: ``dt`` seconds per simulator step (1/30 s as GenManip); ``wall()`` is
    ``wall_start`` plus the simulated time (a runtime passes the real time it started at)."""

    def __init__(self, dt: float = 1.0 / 30.0, *, start: float = 0.0,
                 wall_start: float = 1_700_000_000.0) -> None:
        super().__init__(start, wall_start=wall_start)
        if dt <= 0:
            raise DefinitionError("INVALID_CLOCK", f"dt must be positive, got {dt}",
                                  fix="give the seconds one step stands for")
        self.dt = dt
        self.steps = 0

    def step(self, n: int = 1) -> float:
        self.steps += n
        return self.advance(n * self.dt)
