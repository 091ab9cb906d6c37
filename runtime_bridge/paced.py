"""What the runtimes on wall-clock time share (the ZeroMQ runtime, the ROS 2 runtime over DDS
or Zenoh): a clock paced to the harness's ticks and the three
:class:`~harness_bt.runtime.episodes.EpisodeRuntime` properties that follow from it."""

from __future__ import annotations

import time

from harness_bt.clock import SystemClock

__all__ = ["PacedClock", "PacedRuntime"]


class PacedClock(SystemClock):
    """The system clock, whose ``sleep`` sleeps until the next tick of a fixed grid (the time a
    tick took is not added on top); a tick that overran starts the grid again."""

    def __init__(self) -> None:
        self._next: float | None = None

    def sleep(self, seconds: float) -> None:
        now = time.monotonic()
        target = (now if self._next is None else self._next) + seconds
        if target < now:
            target = now
        self._next = target
        time.sleep(max(0.0, target - now))


class PacedRuntime:
    """``clock``, ``control_period_s`` and ``episode_over`` of a runtime whose robot owns its
    control loop: the harness ticks every ``_tick_s`` on a :class:`PacedClock`; ``_over``
    turns True when the runtime's one episode is finished. Subclasses set the three."""

    _clock: PacedClock
    _tick_s: float
    _over: bool = False

    @property
    def clock(self) -> PacedClock:
        return self._clock

    @property
    def control_period_s(self) -> float:
        return self._tick_s

    @property
    def episode_over(self) -> bool:
        return self._over
