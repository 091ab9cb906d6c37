"""The in-process runtime: the harness's bridge to a step-driven GenManip simulator.

It hosts the skills' executors in an :class:`~runtime_bridge.host.ExecutorHost` over a
:class:`~harness_bt.runtime.backend.Backend` (the built-in simulator in-process, or any GenManip
server through the GenManip client) and implements :class:`~harness_bt.RuntimeBridge`
plus the episode protocol of :mod:`harness_bt.runtime.episodes`:

- ``dispatch`` / ``cancel`` / ``query`` go to the host (idempotent per command id);
- ``poll`` advances the simulator by one control step (the simulator's ``/step`` is the
  clock: :attr:`clock` is a :class:`~harness_bt.clock.SimClock` the caller advances by
  ``control_period_s`` per tick) and returns the executors' lifecycle events (started,
  progress, control done, aborted, stopped) and the new observation. With a simulator that
  renders on demand (:mod:`runtime_bridge.inproc.frames`) and ``batch_steps`` > 1, a poll
  runs up to ``batch_steps`` steps while nobody looks (no frame, nothing but progress, only
  executors that read no frames), and the harness gets the last observation and every event
  in one tick; the clock (a :class:`~runtime_bridge.inproc.frames.BatchClock` unless the
  caller gives a clock, which turns batching off) stands still during the tick and catches up
  by one period per extra step at the caller's next ``sleep``;
- an episode the simulator ends inside a step (success, or out of steps) is noticed from the
  reset observation that step returns: the host ends the commands that were running in it
  (``EPISODE_ENDED``), the next episode's first observation is kept for
  :meth:`start_episode`, ``episode_over`` turns True and an ``episode_ended`` notice goes out;
- ``finish_episode`` holds the robot still until the simulator ends the episode, and infers
  the simulator's verdict: GenManip ends an episode early only on success, so an episode that
  ended before ``num_steps`` succeeded (checked against the final metric when it arrives);
  one that ran to ``num_steps`` failed, unless the simulator says how it recorded it (the
  built-in one's ``last_ended``: a success that held its scene's own hold at the last step). A
  simulator that can end an episode itself (the built-in one: ``end_episode``) is asked to
  after :data:`SETTLE_STEPS` steps of holding, and every step after: it ends the episode at
  once, judged failed (``task_ended``), unless its success condition holds, in which case the
  hold goes on until the condition has held long enough (success) or stops holding. So an
  episode ends promptly when its task ends, instead of running to ``num_steps``;
- the GenManip client's notices (rollover, final metric, unknown and settled steps) pass
  through ``poll``;
- the faults the simulator injected (a backend's ``faults()``: the built-in simulator, a
  harness-bt GenManip server) go out in ``poll``'s ``faults``, each with the commands executing
  in the step it fired in; those that fire while ``finish_episode`` holds the robot are in
  the episode end's ``faults_after_task``.

One thread drives it (the runner's).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness_bt.clock import SimClock
from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.ledger import Command, CommandEvent
from harness_bt.runtime.backend import Backend
from harness_bt.runtime.bridge import Ack, BridgeNotice, PollResult, RuntimeStatus
from harness_bt.runtime.episodes import EpisodeEnd, EpisodeStart
from harness_bt.runtime.executor import ExecutorFactory, executable_skills
from harness_bt.runtime.faults import FaultFired
from harness_bt.runtime.observation import Observation
from runtime_bridge.host import ExecutorHost, HostConfig
from runtime_bridge.inproc.frames import DEFAULT_MONITOR_HZ, BatchClock, FramePolicy

__all__ = ["MAX_STEP_FAILURES", "SETTLE_STEPS", "InProcRuntime"]

#: Holding an episode to its end gives up after this many failed steps in a row.
MAX_STEP_FAILURES = 30
#: Steps held after the task ends before the simulator may end the episode itself (what was
#: let go settles first).
SETTLE_STEPS = 10


@dataclass
class _Episode:
    index: int
    last_timestep: int
    over: bool = False
    ended_by: str = ""
    final: bool = False
    held: int = 0
    notes: list[str] = field(default_factory=list)


class InProcRuntime:
    """See the module docstring. ``num_steps`` (steps per episode) defaults to the backend's
    ``num_steps`` attribute; without it the simulator's verdict cannot be inferred."""

    def __init__(self, backend: Backend, executors: ExecutorFactory, *,
                 host_config: HostConfig | None = None, clock: SimClock | None = None,
                 num_steps: int | None = None, monitor_hz: float = DEFAULT_MONITOR_HZ,
                 batch_steps: int = 1) -> None:
        self.backend = backend
        # simulated time, anchored at the real time the runtime opened: the trace's wall
        # times (and an export's log times) are that start plus the simulated time
        self._clock = clock or BatchClock(dt=backend.control_period_s, wall_start=time.time())
        self.host = ExecutorHost(backend, executors, clock=self._clock,
                                 config=host_config or HostConfig(lease_s=None))
        self._num_steps = num_steps
        self._cursor = self.host.cursor
        self._pending: list[Observation] = []
        self._notices: list[BridgeNotice] = []
        self._episode: _Episode | None = None
        self._next_first: Observation | None = None
        self._index = -1
        self._done = False
        self._metric: dict[str, float] | None = None
        self.episodes: list[EpisodeEnd] = []
        self.steps = 0
        self._failures = 0
        if isinstance(batch_steps, bool) or not isinstance(batch_steps, int) or batch_steps < 1:
            raise DefinitionError("BAD_BATCH", f"batch_steps={batch_steps!r} must be an int >= 1",
                                  where="InProcRuntime", fix="use 1 (one step per poll) or e.g. 15")
        #: most simulator steps one poll runs while nobody looks (frames on demand only)
        self.batch_steps = batch_steps
        self._quiet = False
        faults = getattr(backend, "faults", None)
        #: the backend's injected faults since the last call (None: it reports none)
        self._fault_source = faults if callable(faults) else None
        self._faults: list[FaultFired] = []
        source = getattr(backend, "frames", None)
        #: frames on demand (a simulator that renders on demand), else None
        self.frames = None if source is None else FramePolicy(
            source, backend.observe_now,  # type: ignore[attr-defined]
            control_period_s=backend.control_period_s, monitor_hz=monitor_hz)

    # ------------------------------------------------------------------ properties

    @property
    def num_steps(self) -> int | None:
        """Steps per episode: as given, else as the backend knows it (None: unknown)."""
        if self._num_steps is not None:
            return self._num_steps
        steps = getattr(self.backend, "num_steps", None)
        return steps if isinstance(steps, int) else None

    @property
    def clock(self) -> SimClock:
        return self._clock

    @property
    def control_period_s(self) -> float:
        return float(self.backend.control_period_s)

    @property
    def episode_over(self) -> bool:
        return self._episode is None or self._episode.over

    def executable_skills(self) -> frozenset[str] | None:
        """The skills its executors run (None: its executor factory does not say)."""
        return executable_skills(self.host.executors)

    # ------------------------------------------------------------------ RuntimeBridge

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        return self.host.submit(command, start_budget_ms=start_budget_ms)

    def cancel(self, command_id: str) -> Ack:
        return self.host.cancel(command_id)

    def query(self, command_id: str) -> RuntimeStatus:
        return self.host.query(command_id)

    def poll(self) -> PollResult:
        observations: list[Observation] = []
        if self._pending:
            observations, self._pending = self._pending, []
        elif self._episode is not None and not self._episode.over:
            obs = self._advance()
            for _ in range(self.batch_steps - 1):  # steps nobody looks at: one tick for all
                if obs is None or not self._quiet or not isinstance(self._clock, BatchClock):
                    break
                self._clock.owed += self.control_period_s  # paid by the runner's next sleep
                obs = self._advance()
            if obs is not None:
                observations.append(obs)
        faults, self._faults = self._faults, []
        return PollResult(tuple(self._events()), tuple(observations), tuple(self._take_notices()),
                          tuple(faults))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.host.close()
        self.backend.close()

    # ------------------------------------------------------------------ episodes

    def start_episode(self) -> EpisodeStart | None:
        if self._episode is not None and not self._episode.over:
            raise BridgeError("EPISODE_OPEN", f"episode {self._episode.index} is still running",
                              fix="call finish_episode() first")
        if self._done:
            return None
        obs = self._next_first
        self._next_first = None
        if obs is None:
            try:
                obs = self.host.reset()
            except BridgeError as exc:
                if getattr(self.backend, "done", False):
                    self._finish_all()
                    return None
                raise exc
        self._index += 1
        self._episode = _Episode(self._index, obs.timestep)
        self._events()  # what happened before this episode is nobody's news
        self._pending = [obs]
        return EpisodeStart(self._index, obs.instruction, obs.worker_id,
                            {"timestep": obs.timestep, "num_steps": self.num_steps})

    def finish_episode(self, *, max_hold_steps: int | None = None) -> EpisodeEnd:
        ep = self._episode
        if ep is None:
            raise BridgeError("NO_EPISODE", "no episode was started",
                              fix="call start_episode() first")
        if not getattr(self.backend, "judged", True) and not ep.over:
            max_hold_steps = 0  # nothing to wait for: the simulator judges nothing
            ep.notes.append("the simulator does not judge this scene (no success condition)")
        if self.frames is not None:
            self.frames.holding = True  # nobody reads the steps that hold an episode
        try:
            while not ep.over and (max_hold_steps is None or ep.held < max_hold_steps):
                if ep.held >= SETTLE_STEPS and self._end_now(ep):
                    break
                ep.held += 1
                self._advance()
                if self._failures >= MAX_STEP_FAILURES:
                    ep.over = True
                    ep.ended_by = "error"
                    ep.notes.append(f"{self._failures} simulator steps in a row failed; the "
                                    "episode cannot be held to its end")
        finally:
            if self.frames is not None:
                self.frames.holding = False
        self._events()
        notices = [{"kind": n.kind, "worker_id": n.worker_id, **n.data}
                   for n in self._take_notices()]
        late, self._faults = self._faults, []  # fired while the robot was held still
        if not ep.over and not getattr(self.backend, "judged", True):
            ep.over = True
            ep.ended_by = "not_judged"
        elif not ep.over:
            ep.over = True
            ep.ended_by = "not_ended"
            ep.notes.append(f"the simulator had not ended the episode after {ep.held} hold "
                            "steps; the next reset skips it")
        end = EpisodeEnd(ep.index, ep.ended_by, self._verdict(ep), ep.last_timestep + 1, ep.held,
                         self._metric if ep.final else None,
                         {"last_timestep": ep.last_timestep, "num_steps": self.num_steps,
                          "notes": list(ep.notes), "notices": notices,
                          "faults_after_task": [f.to_dict() for f in late]})
        self.episodes.append(end)
        return end

    def want_frames(self, reader: str, rate_hz: float) -> None:
        """``reader`` (a recording, a console) reads each camera's frames at ``rate_hz`` while
        commands run. Only a simulator rendering on demand needs telling; with another one it
        changes nothing (its observations carry frames every step)."""
        if self.frames is not None:
            every_step = 1.0 / self.control_period_s  # a rate <= 0: every frame there is
            rate = every_step if isinstance(rate_hz, (int, float)) and rate_hz <= 0 else rate_hz
            self.frames.want(reader, rate * max(1, len(self.frames.source.names)))

    def request_frames(self, cameras: Iterable[str] | None = None) -> None:
        """The next observation carries frames of ``cameras`` (None: the next camera in turn),
        with a simulator rendering on demand; with another one it changes nothing."""
        if self.frames is not None:
            self.frames.request(cameras)

    def final_metric(self) -> Mapping[str, float] | None:
        return self._metric

    # ------------------------------------------------------------------ internals

    def _advance(self) -> Observation | None:
        """One simulator step; the observation to deliver (None at an episode's end)."""
        ep = self._episode
        assert ep is not None
        self._quiet = False
        if self.frames is not None:
            executors = self.host.active_executors()
            if self.frames.reads(executors) and not self.frames.holding:
                latest = self.frames.render_latest(self.host.observation)
                if latest is not None:  # what a frame-reading executor steps from
                    self.host.observe(latest)
            self.frames.before_step(executors)
        running = tuple(self.host.active()) if self._fault_source is not None else ()
        try:
            result = self.host.step()
        except BridgeError as exc:
            if getattr(self.backend, "done", False):
                self._end(ep, "", final=True)
                self._finish_all()
                return None
            self._failures += 1
            self._notices.append(BridgeNotice("step_failed", data={
                "error": exc.to_dict(), "failures_in_a_row": self._failures}))
            return None
        self._failures = 0
        self.steps += 1
        if self._fault_source is not None:  # the commands whose actions the step carried
            self._faults.extend(dataclasses.replace(f, command_ids=running)
                                for f in self._fault_source())
        obs = result.observation
        if self.frames is not None and not obs.reset:
            rendered = self.frames.after_step(obs, result.events, self.host.active())
            if rendered is not obs:
                self.host.observe(rendered)  # the executors' next step sees the frame too
            obs = rendered
            self._quiet = self.frames.quiet(obs, result.events, self.host.active_executors())
        if obs.reset:
            self._next_first = obs
            self._end(ep, "")
            return None
        ep.last_timestep = obs.timestep
        return obs

    def _end_now(self, ep: _Episode) -> bool:
        """Ask the simulator to end the episode now (see the module docstring); whether it
        did."""
        try:
            obs = self.host.end_episode()
        except BridgeError:
            if not getattr(self.backend, "done", False):
                raise
            self._end(ep, "task_ended", final=True)  # it was the last one
            self._finish_all()
            return True
        if obs is None:
            return False
        self._next_first = obs
        self._end(ep, "task_ended")
        return True

    def _end(self, ep: _Episode, ended_by: str, *, final: bool = False) -> None:
        ep.over = True
        ep.final = final
        steps = ep.last_timestep + 1
        if ended_by:
            ep.ended_by = ended_by
        elif self.num_steps is None:
            ep.ended_by = "ended"
        elif steps < self.num_steps:
            ep.ended_by = "success"
        else:  # out of steps, unless the simulator recorded a success in the last one
            recorded = getattr(self.backend, "last_ended", None)
            ep.ended_by = "success" if callable(recorded) and recorded() == "success" \
                else "timeout"
        self._notices.append(BridgeNotice("episode_ended", data={
            "episode": ep.index, "ended_by": ep.ended_by, "steps": steps,
            "num_steps": self.num_steps, "sim_success": self._verdict(ep)}))

    def _verdict(self, ep: _Episode) -> bool | None:
        if ep.ended_by == "success":
            return True
        if ep.ended_by in ("timeout", "task_ended"):
            return False
        return None

    def _finish_all(self) -> None:
        self._done = True
        metric = getattr(self.backend, "metric", None)
        self._metric = dict(metric) if isinstance(metric, Mapping) else self._metric

    def _events(self) -> list[CommandEvent]:
        out: list[CommandEvent] = []
        while True:
            batch = self.host.events_since(self._cursor)
            out.extend(batch.events)
            if batch.next_cursor == self._cursor or not batch.events:
                self._cursor = batch.next_cursor
                return out
            self._cursor = batch.next_cursor

    def _take_notices(self) -> list[BridgeNotice]:
        out, self._notices = self._notices, []
        take = getattr(self.backend, "notices", None)
        if callable(take):
            backend_notices: Any = take()
            out = list(backend_notices) + out
        return out
