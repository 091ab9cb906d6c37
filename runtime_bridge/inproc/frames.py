"""When the in-process runtime has the simulator render: frames for the steps someone reads.

With a simulator that renders on demand (``SimConfig(render="on_demand")``, the default of
``harness run`` in-process), :class:`FramePolicy` decides per control step whether the
observation carries a frame. Who reads frames, and when:

- **the harness's perception, when the harness looks**: every step in which no command runs
  on the runtime (the harness is observing, judging a result or deciding), and the step that
  ends a command (control done, aborted, stopped, rejected: an evaluation follows at once).
  These frames are rendered after the step (the world has not moved since), of the camera
  ``round_robin`` renders at that timestep;
- **executors that read frames** (a learned policy): every step while one is active, before
  the step, so the executor's next step sees it. An executor says it reads none with a class
  attribute ``reads_frames = False``; one that does not say is assumed to read them. One that
  reads frames at some steps only (a policy asked for a chunk of rows every few steps) says so
  step by step: ``reads_frames`` (a property) whether its next step reads the frames of the
  observation it is given (rendered then, after the step that made it, if it has none), and
  ``reads_next_frame`` whether the step after that will (rendered with that step's
  observation);
- **watchers of a running command** (the harness's perception keeping the world model fresh,
  a recording, a console): at ``monitor_hz`` (the highest rate asked through :meth:`want`);
- **a client** asking for the next observation's frames once: :meth:`request`.

Nobody reads the steps that hold an episode to its end (``finish_episode``): they render
nothing. The episode's first observation renders every camera.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from harness_bt.clock import SimClock
from harness_bt.errors import DefinitionError
from harness_bt.ledger import CommandEvent, EventKind
from harness_bt.runtime.observation import Observation

__all__ = ["DEFAULT_MONITOR_HZ", "LOOK_EVENTS", "BatchClock", "FramePolicy", "FrameSource"]

#: Frames per second while commands run and nobody else asks for more.
DEFAULT_MONITOR_HZ = 2.0

#: Events after which the harness looks at once (an evaluation, or a recovery decision).
LOOK_EVENTS = frozenset({EventKind.CONTROL_DONE, EventKind.ABORTED, EventKind.STOPPED,
                         EventKind.REJECTED})


class BatchClock(SimClock):
    """The in-process runtime's simulation clock when it batches steps: the steps a poll
    runs beyond the first are owed to the clock and paid by the caller's next :meth:`sleep`
    (the runner sleeps one period after each tick). So time stands still within a harness tick,
    whatever the trace, the ledger and the nodes read during it, and the next tick starts where
    the simulator is."""

    def __init__(self, dt: float = 1.0 / 30.0, *, start: float = 0.0,
                 wall_start: float = 1_700_000_000.0) -> None:
        super().__init__(dt, start=start, wall_start=wall_start)
        self.owed = 0.0

    def sleep(self, seconds: float) -> None:
        owed, self.owed = self.owed, 0.0
        super().sleep(seconds + owed)


class FrameSource(Protocol):
    """What the policy needs from the simulator (``SimBackend.frames`` and ``observe_now``)."""

    names: tuple[str, ...]

    def request(self, cameras: Iterable[str] | None = None) -> None: ...

    def next_in_turn(self, timestep: int) -> str | None: ...


def _rate(value: Any, what: str) -> float:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = math.nan
    if not (math.isfinite(rate) and rate > 0):
        raise DefinitionError("BAD_FRAME_RATE", f"{what}={value!r} is not a positive number of "
                              "frames per second", where="frame policy",
                              fix="use e.g. 6 (frames per second)")
    return rate


class FramePolicy:
    """See the module docstring. ``source`` is the simulator's frame requests, ``observe_now``
    renders the latest observation's frames after the step; one thread drives it."""

    def __init__(self, source: FrameSource, observe_now: Callable[[set[str]], Observation], *,
                 control_period_s: float, monitor_hz: float = DEFAULT_MONITOR_HZ) -> None:
        self.source = source
        self._observe_now = observe_now
        self.control_period_s = float(control_period_s)
        self._rates: dict[str, float] = {"monitor": _rate(monitor_hz, "monitor_hz")}
        self._since = 0  # steps since the last frame
        #: True while an episode is held to its end: nobody reads those steps
        self.holding = False
        #: frames rendered before the step, after it, and steps that rendered nothing
        self.counts = {"before": 0, "after": 0, "none": 0}

    @property
    def monitor_hz(self) -> float:
        return max(self._rates.values())

    @property
    def period_steps(self) -> int:
        """Steps between two frames while commands run."""
        return max(1, round(1.0 / (self.monitor_hz * self.control_period_s)))

    def want(self, reader: str, rate_hz: float) -> None:
        """``reader`` (a recording, a console) reads frames at ``rate_hz`` while commands run;
        the monitor rate is the highest asked."""
        self._rates[str(reader)] = _rate(rate_hz, f"{reader} rate_hz")

    def request(self, cameras: Iterable[str] | None = None) -> None:
        """The next observation carries frames (of ``cameras``, or the next camera in turn)."""
        self.source.request(cameras)

    @staticmethod
    def reads(executors: Iterable[object]) -> bool:
        """Whether any of ``executors`` reads frames (one that does not say is assumed to)."""
        return any(getattr(e, "reads_frames", True) for e in executors)

    @staticmethod
    def reads_next(executors: Iterable[object]) -> bool:
        """Whether any of ``executors`` reads the frames of the observation this step makes
        (``reads_next_frame`` when it says, else ``reads_frames``)."""
        return any(getattr(e, "reads_next_frame", getattr(e, "reads_frames", True))
                   for e in executors)

    def before_step(self, executors: Iterable[object]) -> None:
        """Ask for this step's frame when an active executor will read it or a watcher is
        due."""
        if self.holding:
            return
        if self.reads_next(executors) or self._since + 1 >= self.period_steps:
            self.source.request(None)

    def render_latest(self, latest: Observation | None) -> Observation | None:
        """The latest observation with a frame (the camera in turn) rendered now, for an
        executor that reads frames and starts on an observation that has none; None when it
        has one already, or is an episode's first."""
        if latest is None or latest.cameras or latest.reset:
            return None
        name = self.source.next_in_turn(latest.timestep)
        if name is None:
            return None
        self.counts["after"] += 1
        return self._observe_now({name})

    def quiet(self, obs: Observation, events: Iterable[CommandEvent],
              executors: Iterable[object]) -> bool:
        """Whether the harness has nothing to look at after this step: no frame, nothing but
        progress reported, and only executors running that read no frames (the in-process
        runtime then steps again within the same harness tick)."""
        executors = list(executors)
        return (not self.holding and not obs.cameras and not obs.reset and bool(executors)
                and all(e.kind == EventKind.PROGRESS for e in events)
                and not self.reads(executors))

    def after_step(self, obs: Observation, events: Iterable[CommandEvent],
                   active: Mapping[str, object]) -> Observation:
        """The observation to hand on: with a frame rendered now when the harness will look
        (no command running, or one just ended) and the step rendered none."""
        if obs.cameras or obs.reset:
            self._since = 0
            self.counts["before"] += 1
            return obs
        if not self.holding and (not active or any(e.kind in LOOK_EVENTS for e in events)):
            name = self.source.next_in_turn(obs.timestep)
            if name is not None:
                self._since = 0
                self.counts["after"] += 1
                return self._observe_now({name})
        self._since += 1
        self.counts["none"] += 1
        return obs
