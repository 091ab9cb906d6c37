"""The control step: protect, step every active executor, merge, settle, journal, then step the
backend.

Each step the host first protects locally: a command whose lease runs out before the next step
is stopped at this one (its parts are held in that same step) with reason ``LEASE_EXPIRED``,
without waiting for the harness (an action holds for a whole control period, so the last one a
lease allows is the one sent before it ends); a command past its start budget, its execution
timeout or its stop deadline ends as well. Then every active executor is stepped with the
latest observation, their shares are merged into one action (holding what nobody drives), the
results are settled into events (started, progress, control done, aborted, stopped, each with a
per-command increasing ``seq``) and journaled, and the backend is stepped. A simulator that
ends the episode inside its step ends the active commands (``EPISODE_ENDED``).

Between two commands the step may let requests in (:mod:`runtime_bridge.host.giveway`); with
``plan_on`` its bookkeeping runs on the thread that answers them.
"""

from __future__ import annotations

import contextlib
import time

from harness_bt.errors import BridgeError, CommandError
from harness_bt.ledger import CommandEvent, EventKind
from harness_bt.runtime.bridge import RuntimeState
from harness_bt.runtime.executor import ExecutorStatus, ExecutorStep
from harness_bt.runtime.observation import Observation
from runtime_bridge.host.core import Bookkeeping, HostCore, Live, PlanOn
from runtime_bridge.host.giveway import GiveWay
from runtime_bridge.host.record import RuntimeReason
from runtime_bridge.host.types import StepResult

__all__ = ["ControlStep"]


class ControlStep(HostCore):
    """The host's control loop side: :meth:`reset` and :meth:`step` (see the module
    docstring). Only one thread may step."""

    def reset(self) -> Observation:
        """Reset the backend (a new episode); the gripper target follows the measured fingers."""
        with self._step_lock:
            obs = self.backend.reset()
            with self._lock:
                self._observation = obs
                self._merger.reset(obs)
            return obs

    def end_episode(self) -> Observation | None:
        """End the backend's episode now, when it can (a backend with ``end_episode()``, e.g.
        the built-in simulator once a task has ended): the next episode's first observation,
        as a step answering with it would give (the active commands end, ``EPISODE_ENDED``);
        None when the backend cannot end it (yet)."""
        end = getattr(self.backend, "end_episode", None)
        if not callable(end):
            return None
        with self._step_lock:
            obs = end()
            if obs is None:
                return None
            with self._lock:
                self._observation = obs
                self._episode_ended(obs)
            return obs

    def step(self, *, plan_on: PlanOn | None = None) -> StepResult:
        """One control step: protect, step executors, merge, journal, step the backend.

        ``plan_on``: run the bookkeeping part (everything but the backend's step) through it:
        the runtime server hands it to its I/O thread (:meth:`Broker.inline
        <runtime_bridge.zmq.broker.Broker.inline>`), which then answers the requests that
        arrive during the step between two commands, on its own thread (see
        :class:`~runtime_bridge.host.giveway.GiveWay`)."""
        if self._observation is None:
            self.reset()
        with self._step_lock:
            plan = self._plan(None) if plan_on is None else plan_on(self._plan)
            return self._advance(plan)

    def _plan(self, give_way: GiveWay | None) -> Bookkeeping:
        """Protect, step the executors, merge and settle, journal: the step up to the backend."""
        scheduler, batch = self.scheduler, self._batch
        scheduler.begin(self.backend.control_period_s, give_way)
        try:
            with self._lock:
                self._check_open()
                now = self.clock.monotonic()
                obs = self._observation
                assert obs is not None  # set by reset() in step()
                batch.collected = []
                self._protect(now)
                stepped = self._step_executors(now, obs)
                outputs = [(cid, out) for live, cid, out in stepped
                           if self._active.get(cid) is live]
                merged = self._merger.merge([(cid, out.action) for cid, out in outputs])
                refused = {cid: (code, msg) for cid, code, msg in merged.refused}
                shared = time.perf_counter()
                for cid, out in outputs:
                    live = self._active.get(cid)
                    if live is not None:
                        self._settle(live, out, refused.get(cid))
                    shared = scheduler.share(shared)
                if give_way is not None:
                    batch.flush_in_chunks(scheduler.share, shared)
                batch.flush()
                return Bookkeeping(now, merged.action, tuple(batch.collected))
        finally:
            scheduler.end()
            batch.collected = None

    def _advance(self, plan: Bookkeeping) -> StepResult:
        """Step the backend with the planned action; take its observation."""
        try:
            obs = self.backend.step(plan.action)
        except Exception as exc:
            ended = isinstance(exc, BridgeError) and exc.code == "EPISODES_DONE"
            with self._lock:
                for live in list(self._active.values()):
                    if live.started_at is not None:
                        self._finish(live, RuntimeState.ABORTED,
                                     f"{RuntimeReason.EPISODE_ENDED}: {exc}" if ended
                                     else f"{RuntimeReason.BACKEND_ERROR}: {exc}",
                                     EventKind.ABORTED)
                self._batch.flush()
            raise BridgeError("BACKEND_ERROR", f"the backend failed a step: {exc}",
                              fix="check the simulator / robot; running commands were "
                              "aborted") from exc
        events = plan.events
        with self._lock:
            self._observation = obs
            if obs.reset:
                events += self._episode_ended(obs)
            if plan.now - self._last_purge >= self.config.purge_interval_s:
                self._purge(plan.now)
        return StepResult(plan.action, obs, events)

    def _episode_ended(self, obs: Observation) -> tuple[CommandEvent, ...]:
        """A step answered with the first observation of a new episode (a GenManip server ends
        an episode inside ``/step``): the world the active commands were planned for is gone.
        They end at once (started: ABORTED, not started: REJECTED, reason ``EPISODE_ENDED``),
        and the gripper target follows the new episode's fingers."""
        self._merger.reset(obs)
        for live in list(self._active.values()):
            started = live.started_at is not None
            self._finish(live, RuntimeState.ABORTED if started else RuntimeState.REJECTED,
                         f"{RuntimeReason.EPISODE_ENDED}: the episode ended; the step answered "
                         "with the first observation of the next one",
                         EventKind.ABORTED if started else EventKind.REJECTED)
        ended = tuple(self._batch.staged)
        self._batch.flush()
        return ended

    def _protect(self, now: float) -> None:
        # the action of this step holds until the next one: a lease that ends before then ends
        # the command now, rather than let the robot move on an expired lease for a period
        lease_end = now + self.backend.control_period_s
        for live in list(self._active.values()):
            rec = live.record
            if live.started_at is None:
                if now >= live.start_deadline:
                    self._finish(live, RuntimeState.REJECTED, f"{RuntimeReason.EXPIRED_COMMAND}: "
                                 "the start budget ran out before it could start",
                                 EventKind.REJECTED)
                elif live.lease_deadline is not None and lease_end > live.lease_deadline:
                    self._finish(live, RuntimeState.REJECTED, RuntimeReason.LEASE_EXPIRED.value,
                                 EventKind.REJECTED)
            elif live.lease_deadline is not None and lease_end > live.lease_deadline:
                self._hold(live, RuntimeReason.LEASE_EXPIRED.value, now - live.lease_deadline)
            elif rec.state is RuntimeState.STOPPING:
                if live.stop_deadline is not None and now >= live.stop_deadline:
                    self._hold(live, f"{RuntimeReason.STOP_FORCED}: {live.stop_reason}",
                               now - live.stop_deadline)
            elif live.exec_deadline is not None and now >= live.exec_deadline:
                self._request_stop(live, RuntimeReason.EXECUTION_TIMEOUT.value)

    def _hold(self, live: Live, reason: str, latency_s: float) -> None:
        """Stop applying the executor's actions from this step on, and record why."""
        with contextlib.suppress(Exception):  # the hold needs no cooperation from the executor
            live.executor.request_stop()
        self._finish(live, RuntimeState.STOPPED, reason, EventKind.STOPPED,
                     {"held": True, "protection_latency_s": round(max(0.0, latency_s), 6)})

    def _step_executors(self, now: float, obs: Observation
                        ) -> list[tuple[Live, str, ExecutorStep]]:
        outputs: list[tuple[Live, str, ExecutorStep]] = []
        shared = time.perf_counter()
        for cid, live in list(self._active.items()):
            shared = self.scheduler.share(shared)
            if self._active.get(cid) is not live:  # ended while the lock was shared
                continue
            if live.started_at is None:
                live.started_at = now
                command = live.record.command
                assert command is not None  # only a burnt id's record has none, never active
                live.exec_deadline = now + command.execution_timeout_ms / 1000.0
                live.record.state = RuntimeState.RUNNING
                live.record.reason = "STARTED"
                self._emit(live.record, EventKind.STARTED, "")
            try:
                out = live.executor.step(obs)
                if not isinstance(out, ExecutorStep):
                    raise CommandError("INVALID_EXECUTOR_STEP", f"step() returned "
                                       f"{type(out).__name__}, not ExecutorStep",
                                       command_id=cid)
            except Exception as exc:
                self._finish(live, RuntimeState.ABORTED, f"{RuntimeReason.EXECUTOR_ERROR}: "
                             f"{exc!r}", EventKind.ABORTED)
                continue
            outputs.append((live, cid, out))
        return outputs

    def _settle(self, live: Live, out: ExecutorStep, refused: tuple[str, str] | None) -> None:
        if refused is not None:
            self._finish(live, RuntimeState.ABORTED, f"{refused[0]}: {refused[1]}",
                         EventKind.ABORTED)
        elif out.status is ExecutorStatus.RUNNING:
            if out.progress is not None:
                self._emit(live.record, EventKind.PROGRESS, "", out.progress)
        elif out.status is ExecutorStatus.CONTROL_DONE:
            self._finish(live, RuntimeState.CONTROL_DONE, "CONTROL_DONE", EventKind.CONTROL_DONE,
                         {"detail": out.reason} if out.reason else None, progress=out.progress)
        elif out.status is ExecutorStatus.ABORTED:
            self._finish(live, RuntimeState.ABORTED, out.reason or "ABORTED", EventKind.ABORTED,
                         progress=out.progress)
        else:
            reason = live.stop_reason or (f"STOPPED_BY_EXECUTOR: {out.reason}" if out.reason
                                          else "STOPPED_BY_EXECUTOR")
            self._finish(live, RuntimeState.STOPPED, reason, EventKind.STOPPED,
                         progress=out.progress)
