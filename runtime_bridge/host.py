"""The executor host: runs commands on a robot or simulator, one control step at a time.

Shared by the in-process runtime and the ZeroMQ runtime server. The host

- takes commands (``submit``), idempotent per command id: a resend returns the original
  answer with ``duplicate=True``, whatever happened since (and renews the lease of a running
  one, as a heartbeat would); it refuses stale epochs, expired
  start budgets, busy resources and commands its executor factory refuses, and remembers the
  refusal so a resend is refused the same way;
- steps every active executor once per ``step()``, merges their shares into one action (holding
  what nobody drives), steps the :class:`Backend`, and reports starts, progress, control done,
  aborts and stops as :class:`CommandEvent` with a per-command increasing ``seq``;
- protects locally: each command holds a lease renewed by ``heartbeat``; a lease that runs out
  before the next step stops the command's executor at this one (its parts are held in that
  same step) with reason ``LEASE_EXPIRED``, without waiting for the harness: an action holds
  for a whole control period, so the last one a lease allows is the one sent before it ends.
  Control epochs fence: a newer epoch takes over, commands, cancels and heartbeats from an
  older one are refused, and a newer epoch's command that needs a resource held by an older
  epoch's command preempts it (held at once, reason ``EPOCH_PREEMPTED``) instead of waiting
  out its lease;
- journals every change before it acts on it or answers about it, so a restarted host answers
  for everything it acknowledged, and reports what was active when it died as ABORTED with
  reason ``RUNTIME_RESTARTED``, never running it again.

Time comes from an injected :class:`Clock`; tests drive ``step()`` with a fake clock.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import BridgeError, HarnessError
from harness_bt.ledger import Command, CommandEvent, EventKind
from harness_bt.runtime.backend import Backend
from harness_bt.runtime.bridge import Ack, RuntimeState, RuntimeStatus
from harness_bt.runtime.executor import Executor, ExecutorFactory, ExecutorStatus, ExecutorStep
from harness_bt.runtime.observation import Observation
from runtime_bridge.host_lock import HostLock
from runtime_bridge.host_types import (
    EventBatch,
    GiveWay,
    HeartbeatResult,
    HostConfig,
    StepResult,
)
from runtime_bridge.journal import MemoryRuntimeJournal, RuntimeJournal
from runtime_bridge.merge import ActionMerger
from runtime_bridge.record import RuntimeReason, RuntimeRecord

__all__ = ["EventBatch", "ExecutorHost", "GiveWay", "HeartbeatResult", "HostConfig",
           "PlanOn", "StepResult"]

R = RuntimeReason
RS = RuntimeState


@dataclass(frozen=True, slots=True)
class _Plan:
    """A step's bookkeeping done: the time it ran at, the merged action, its events."""

    now: float
    action: Mapping[str, Any]
    events: tuple[CommandEvent, ...]


#: runs a step's bookkeeping (handed the give-way it may answer through) and returns its result
PlanOn = Callable[[Callable[[GiveWay], _Plan]], _Plan]


@dataclass(slots=True, eq=False)
class _Live:
    """Runtime-only state of an active command (gone after a restart, by design)."""

    record: RuntimeRecord
    executor: Executor
    start_deadline: float
    lease_deadline: float | None
    started_at: float | None = None
    exec_deadline: float | None = None
    stop_deadline: float | None = None
    stop_reason: str | None = None


class ExecutorHost:
    """See the module docstring. Thread-safe: the control loop may call :meth:`step` while
    another thread submits, cancels and queries (only one thread may step). A step with many
    commands shares the lock with a waiting thread every ``SHARE_S`` seconds of its own work,
    after journaling what it has done, so an answer never waits for a whole step.

    A thread that answers requests (the runtime server's I/O thread) wraps each one in
    ``with host.answering():``. A step then steps aside at its next command: it journals what it
    has done, lets go of the lock and sleeps until the answer has left, so the answering thread
    has the interpreter to itself instead of winning it back at every switch interval. A step
    gives way for at most ``YIELD_SHARE`` of a control period in all, so a flood of requests
    delays the control loop by a bounded amount and never starves it.

    Better still, the answering thread runs the step's bookkeeping itself (``step(plan_on=...)``,
    see :class:`GiveWay`; the runtime server with its own broker does): every ``LOOK_S`` of
    work it answers the requests waiting, with no lock or interpreter changing hands, and
    otherwise offers the CPU to whatever else waits for it (``sched_yield``): a step is
    milliseconds of CPU, and a process woken on its core, a client or the socket's I/O thread,
    would otherwise wait for all of it. Such an answer journals only what it tells: a new
    command's record alone, or every change in hand when it reports a command the step has
    changed (:meth:`_reveal`)."""

    SHARE_S = 0.0005
    LOOK_S = 0.0001
    YIELD_SHARE = 0.25
    #: records per journal write when a step journals its changes giving way (about 0.05 ms)
    FLUSH_CHUNK = 16

    def __init__(
        self,
        backend: Backend,
        executors: ExecutorFactory,
        *,
        journal: RuntimeJournal | None = None,
        clock: Clock | None = None,
        config: HostConfig | None = None,
    ) -> None:
        self.backend = backend
        self.executors = executors
        self.config = config or HostConfig()
        self.clock: Clock = clock or SystemClock()
        self._journal: RuntimeJournal = journal if journal is not None else MemoryRuntimeJournal()
        self._lock = HostLock()
        self._answers = _Answering(self)
        self._answer_lock = threading.Lock()
        self._answering = 0  # requests being answered now
        self._parked = False  # the step is waiting for them to leave
        self._answered = threading.Event()
        self._yield_left = 0.0
        self._give_way: GiveWay | None = None  # set while a step's plan is made through one
        self._step_lock = threading.Lock()
        self._active: dict[str, _Live] = {}
        self._cache: OrderedDict[str, RuntimeRecord] = OrderedDict()
        self._holders: dict[str, str] = {}
        self._dirty: dict[str, RuntimeRecord] = {}
        self._meta: dict[str, str] = {}
        self._staged: list[CommandEvent] = []
        self._collected: list[CommandEvent] | None = None  # what a step's flushes let out
        self._log: deque[tuple[int, CommandEvent]] = deque(maxlen=self.config.event_log_size)
        self._log_index = 0
        self._merger = ActionMerger()
        self._observation: Observation | None = None
        self._last_purge = self.clock.monotonic()
        self._closed = False
        self._epoch = int(self._journal.meta("epoch") or 0)
        boots = int(self._journal.meta("boots") or 0) + 1
        self.boot_id = f"{boots}-{uuid.uuid4().hex[:8]}"
        self._meta["boots"] = str(boots)
        self.restarted: tuple[str, ...] = self._abort_unfinished()

    # ------------------------------------------------------------------ reading

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def cursor(self) -> int:
        """The index of the newest event in the log (start ``events_since`` here for news)."""
        return self._log_index

    @property
    def observation(self) -> Observation | None:
        return self._observation

    def active(self) -> dict[str, RuntimeState]:
        with self._lock:
            return {cid: live.record.state for cid, live in self._active.items()}

    def progress(self) -> dict[str, float | None]:
        """Latest progress of every active command (for telemetry)."""
        with self._lock:
            out: dict[str, float | None] = {}
            for cid, live in self._active.items():
                last = live.record.events[-1] if live.record.events else None
                out[cid] = None if last is None else last.progress
            return out

    def query(self, command_id: str) -> RuntimeStatus:
        """The record of ``command_id`` (NOT_FOUND if never seen or past its retention)."""
        with self._lock:
            rec = self._find(command_id)
            if rec is None:
                return RuntimeStatus(command_id, RS.NOT_FOUND, R.UNKNOWN_COMMAND.value)
            self._reveal(command_id)
            return rec.status()

    def events_since(self, cursor: int, *, limit: int = 1000) -> EventBatch:
        with self._lock:
            first = self._log[0][0] if self._log else self._log_index + 1
            start = max(0, cursor + 1 - first)  # indices in the log are consecutive
            out = [ev for _, ev in itertools.islice(self._log, start, start + limit)]
            nxt = max(cursor, first - 1) + len(out)
            return EventBatch(self.boot_id, tuple(out), max(nxt, min(cursor, self._log_index)),
                              gap=cursor + 1 < first)

    def answering(self) -> _Answering:
        """``with host.answering():`` around the handling of one request (see the class
        docstring); cheap, re-entrant across threads."""
        return self._answers

    def _answer_begins(self) -> None:
        with self._answer_lock:
            self._answering += 1

    def _answer_ends(self) -> None:
        with self._answer_lock:
            self._answering -= 1
            if not self._answering and self._parked:
                self._answered.set()

    def _step_aside(self) -> None:
        """Journal what the step has done, and sleep without the lock until no answer is being
        made (or the step's yield budget is spent)."""
        self._flush()
        t0 = time.perf_counter()
        self._parked = True
        self._answered.clear()
        try:
            if self._answering:
                self._lock.park(self._answered, self._yield_left)
        finally:
            self._parked = False
        self._yield_left -= time.perf_counter() - t0
        self._check_open()

    # ------------------------------------------------------------------ commands

    def submit(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        """Accept ``command`` (state PENDING, started at the next step) or refuse it."""
        with self._lock:
            self._check_open()
            cid = command.command_id
            old = self._find(cid)
            if old is not None:
                self._reveal(cid)
                if old.command is None or old.digest == command.digest:
                    self._renew_on_resend(command)
                    return old.ack(duplicate=True)
                return Ack(cid, False, RS.REJECTED, f"{R.COMMAND_ID_CONFLICT}: id {cid!r} is "
                           f"taken by a command of other content (digest {str(old.digest)[:12]}, "
                           f"this one {command.digest[:12]}); a changed command needs a new id")
            problems = command.problems()
            if problems:
                return Ack(cid, False, RS.REJECTED, f"{R.INVALID_COMMAND}: " + "; ".join(
                    f"{f} {m}" for f, m in problems))
            now = self.clock.monotonic()
            first = len(self._staged)  # this submit's events are staged after ``first``
            refusal = self._refusal(command, start_budget_ms)
            executor: Executor | None = None
            if refusal is None:
                try:
                    executor = self.executors(command)
                except HarnessError as exc:
                    refusal = f"{R.EXECUTOR_REFUSED}: {exc}"
                except Exception as exc:  # a broken factory must not take the runtime down
                    refusal = f"{R.EXECUTOR_REFUSED}: the executor factory raised {exc!r}"
            rec = RuntimeRecord(cid, command, refusal is None, RS.PENDING, R.ACCEPTED.value,
                                self.clock.wall())
            if refusal is not None or executor is None:
                self._end(rec, RS.REJECTED, refusal or R.EXECUTOR_REFUSED.value,
                          EventKind.REJECTED)
            else:
                budget = command.start_within_ms if start_budget_ms is None else start_budget_ms
                lease = self.config.lease_s
                self._active[cid] = _Live(rec, executor, now + budget / 1000.0,
                                          None if lease is None else now + lease)
                for res in command.resources:
                    self._holders[res] = cid
            try:
                self._flush_own(rec, first)
            except BaseException:
                self._forget_unjournaled(cid)
                raise
            return rec.ack(duplicate=False)

    def _forget_unjournaled(self, cid: str) -> None:
        """A submit whose record could not be journaled never happened: nothing runs it, and
        a resend is judged afresh."""
        self._active.pop(cid, None)
        for res in [r for r, holder in self._holders.items() if holder == cid]:
            del self._holders[res]
        self._dirty.pop(cid, None)
        self._cache.pop(cid, None)
        self._staged[:] = [e for e in self._staged if e.command_id != cid]

    def _renew_on_resend(self, command: Command) -> None:
        """A resent dispatch proves its harness alive, as a heartbeat would: renew the lease
        (a harness blocked in its retries sends no heartbeats meanwhile). Not for an older
        epoch: a fenced harness renews nothing."""
        live = self._active.get(command.command_id)
        if (live is not None and self.config.lease_s is not None
                and command.epoch >= self._epoch):
            live.lease_deadline = self.clock.monotonic() + self.config.lease_s

    def _refusal(self, command: Command, start_budget_ms: float | None) -> str | None:
        if command.epoch < self._epoch:
            return (f"{R.STALE_EPOCH}: command epoch {command.epoch} is older than the "
                    f"runtime's epoch {self._epoch}; a newer controller has taken over")
        self._take_over(command.epoch)
        budget = command.start_within_ms if start_budget_ms is None else start_budget_ms
        if not budget > 0:
            return f"{R.EXPIRED_COMMAND}: start budget {budget!r} ms left; re-plan and re-issue"
        for res in command.resources:
            holder = self._holders.get(res)
            if holder is None:
                continue
            live = self._active[holder]
            older = live.record.command
            if older is not None and older.epoch < command.epoch:
                self._preempt(live, command, res)
                continue
            return (f"{R.RESOURCE_BUSY}: resource {res!r} is held by command {holder!r} "
                    f"({live.record.state}); wait until it finishes")
        return None

    def _preempt(self, live: _Live, command: Command, resource: str) -> None:
        """A newer epoch's command needs ``resource``, held by an older epoch's command: that
        command has lost its controller (its heartbeats and cancels are refused), so it is held
        now instead of when its lease runs out, and the newer command may start. A controller
        that adopts the older command (a resumed harness) follows it and sends nothing that
        conflicts with it, so it is never preempted that way."""
        with contextlib.suppress(Exception):  # the hold needs no cooperation from the executor
            live.executor.request_stop()
        self._finish(live, RS.STOPPED, f"{R.EPOCH_PREEMPTED}: epoch {command.epoch} command "
                     f"{command.command_id!r} needs {resource!r}", EventKind.STOPPED,
                     {"held": True, "preempted_by": command.command_id})

    def cancel(self, command_id: str, *, epoch: int | None = None) -> Ack:
        """Ask for a stop. A pending command stops at once; a running one is asked to stop
        (STOPPING) and held by force after ``stop_timeout_s``; the confirmation is a ``stopped``
        event. A cancel for an id never seen burns the id (a late dispatch of it never runs)."""
        with self._lock:
            self._check_open()
            self._reveal(command_id)
            if epoch is not None and epoch < self._epoch:
                rec = self._find(command_id)
                return Ack(command_id, False, RS.NOT_FOUND if rec is None else rec.state,
                           f"{R.STALE_EPOCH}: cancel from epoch {epoch}, the runtime is at "
                           f"epoch {self._epoch}")
            if epoch is not None:
                self._take_over(epoch)
            live = self._active.get(command_id)
            rec = live.record if live is not None else self._find(command_id)
            if rec is None:
                rec = RuntimeRecord(command_id, None, False, RS.PENDING, "", self.clock.wall())
                self._end(rec, RS.STOPPED, R.CANCELED_BEFORE_RECEIPT.value, EventKind.STOPPED)
                self._flush()
                return Ack(command_id, True, RS.STOPPED, R.CANCELED_BEFORE_RECEIPT.value)
            if live is None:
                return Ack(command_id, False, rec.state, f"{R.ALREADY_FINISHED}: {rec.reason}")
            if rec.state is RS.STOPPING:
                return rec.ack(duplicate=True)
            if rec.state is RS.PENDING:
                self._finish(live, RS.STOPPED, R.CANCEL_REQUESTED.value, EventKind.STOPPED,
                             {"started": False})
            else:
                self._request_stop(live, R.CANCEL_REQUESTED.value)
            self._flush()
            return rec.ack(duplicate=False)

    def heartbeat(
        self, command_ids: Iterable[str] | None = None, *, epoch: int | None = None
    ) -> HeartbeatResult:
        """Renew the leases of ``command_ids`` (all active commands when None)."""
        with self._lock:
            self._check_open()
            ids = list(self._active) if command_ids is None else list(command_ids)
            self._reveal(*ids)
            if epoch is not None and epoch < self._epoch:
                return HeartbeatResult(self._epoch, False, f"{R.STALE_EPOCH}: heartbeat from "
                                       f"epoch {epoch}, the runtime is at epoch {self._epoch}")
            if epoch is not None:
                self._take_over(epoch)
                self._flush()
            now = self.clock.monotonic()
            renewed, states = [], {}
            for cid in ids:
                live = self._active.get(cid)
                if live is not None:
                    if self.config.lease_s is not None:
                        live.lease_deadline = now + self.config.lease_s
                    renewed.append(cid)
                    states[cid] = live.record.state
                else:
                    rec = self._find(cid)
                    states[cid] = RS.NOT_FOUND if rec is None else rec.state
            return HeartbeatResult(self._epoch, True, "", tuple(renewed), states)

    # ------------------------------------------------------------------ the control step

    def reset(self) -> Observation:
        """Reset the backend (a new episode); the gripper target follows the measured fingers."""
        with self._step_lock:
            obs = self.backend.reset()
            with self._lock:
                self._observation = obs
                self._merger.reset(obs)
            return obs

    def step(self, *, plan_on: PlanOn | None = None) -> StepResult:
        """One control step: protect, step executors, merge, journal, step the backend.

        ``plan_on``: run the bookkeeping part (everything but the backend's step) through it:
        the runtime server hands it to its I/O thread (:meth:`Broker.inline
        <runtime_bridge.zmq.broker.Broker.inline>`), which then answers the requests that
        arrive during the step between two commands, on its own thread (see :class:`GiveWay`)."""
        if self._observation is None:
            self.reset()
        with self._step_lock:
            plan = self._plan(None) if plan_on is None else plan_on(self._plan)
            return self._advance(plan)

    def _plan(self, give_way: GiveWay | None) -> _Plan:
        """Protect, step the executors, merge and settle, journal: the step up to the backend."""
        self._yield_left = self.YIELD_SHARE * self.backend.control_period_s
        self._give_way = give_way
        try:
            with self._lock:
                self._check_open()
                now = self.clock.monotonic()
                obs = self._observation
                assert obs is not None  # set by reset() in step()
                self._collected = []
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
                    shared = self._share(shared)
                if give_way is not None:
                    self._flush_giving_way(shared)
                self._flush()
                return _Plan(now, merged.action, tuple(self._collected))
        finally:
            self._give_way = None
            self._collected = None

    def _advance(self, plan: _Plan) -> StepResult:
        """Step the backend with the planned action; take its observation."""
        try:
            obs = self.backend.step(plan.action)
        except Exception as exc:
            ended = isinstance(exc, BridgeError) and exc.code == "EPISODES_DONE"
            with self._lock:
                for live in list(self._active.values()):
                    if live.started_at is not None:
                        self._finish(live, RS.ABORTED, f"{R.EPISODE_ENDED}: {exc}" if ended
                                     else f"{R.BACKEND_ERROR}: {exc}", EventKind.ABORTED)
                self._flush()
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
            self._finish(live, RS.ABORTED if started else RS.REJECTED,
                         f"{R.EPISODE_ENDED}: the episode ended; the step answered with the "
                         f"first observation of the next one", EventKind.ABORTED if started
                         else EventKind.REJECTED)
        ended = tuple(self._staged)
        self._flush()
        return ended

    def _protect(self, now: float) -> None:
        # the action of this step holds until the next one: a lease that ends before then ends
        # the command now, rather than let the robot move on an expired lease for a period
        lease_end = now + self.backend.control_period_s
        for live in list(self._active.values()):
            rec = live.record
            if live.started_at is None:
                if now >= live.start_deadline:
                    self._finish(live, RS.REJECTED, f"{R.EXPIRED_COMMAND}: the start budget "
                                 "ran out before it could start", EventKind.REJECTED)
                elif live.lease_deadline is not None and lease_end > live.lease_deadline:
                    self._finish(live, RS.REJECTED, R.LEASE_EXPIRED.value, EventKind.REJECTED)
            elif live.lease_deadline is not None and lease_end > live.lease_deadline:
                self._hold(live, R.LEASE_EXPIRED.value, now - live.lease_deadline)
            elif rec.state is RS.STOPPING:
                if live.stop_deadline is not None and now >= live.stop_deadline:
                    self._hold(live, f"{R.STOP_FORCED}: {live.stop_reason}",
                               now - live.stop_deadline)
            elif live.exec_deadline is not None and now >= live.exec_deadline:
                self._request_stop(live, R.EXECUTION_TIMEOUT.value)

    def _hold(self, live: _Live, reason: str, latency_s: float) -> None:
        """Stop applying the executor's actions from this step on, and record why."""
        with contextlib.suppress(Exception):  # the hold needs no cooperation from the executor
            live.executor.request_stop()
        self._finish(live, RS.STOPPED, reason, EventKind.STOPPED,
                     {"held": True, "protection_latency_s": round(max(0.0, latency_s), 6)})

    def _request_stop(self, live: _Live, reason: str) -> None:
        live.record.state = RS.STOPPING
        live.record.reason = reason
        live.stop_reason = reason
        live.stop_deadline = self.clock.monotonic() + self.config.stop_timeout_s
        self._dirty[live.record.command_id] = live.record
        try:
            live.executor.request_stop()
        except Exception as exc:
            self._finish(live, RS.STOPPED, f"{R.STOP_FORCED}: request_stop raised {exc!r}",
                         EventKind.STOPPED, {"held": True})

    def _share(self, since: float) -> float:
        """Between two commands of a step. With a :class:`GiveWay`, every ``LOOK_S``: answer
        the requests waiting, here and now, or else offer the CPU. Otherwise, when an answer is
        being made, step aside; and every ``SHARE_S``, when another thread waits for the lock,
        journal what is done and let that submit, cancel or query in before going on."""
        give_way = self._give_way
        if give_way is not None:
            now = time.perf_counter()
            if now - since < self.LOOK_S:
                return since
            if self._yield_left <= 0 or not give_way.pending():
                os.sched_yield()
                return time.perf_counter()
            while True:
                give_way.answer()
                spent = time.perf_counter() - now
                if spent >= self._yield_left or not give_way.pending():
                    break
            self._yield_left -= spent
            self._check_open()
            return time.perf_counter()
        if self._answering and self._yield_left > 0:
            self._step_aside()
            return time.perf_counter()
        now = time.perf_counter()
        if now - since < self.SHARE_S or not self._lock.contended:
            return since
        self._flush()
        self._lock.share()
        self._check_open()
        return time.perf_counter()

    def _step_executors(self, now: float, obs: Observation
                        ) -> list[tuple[_Live, str, ExecutorStep]]:
        outputs: list[tuple[_Live, str, ExecutorStep]] = []
        shared = time.perf_counter()
        for cid, live in list(self._active.items()):
            shared = self._share(shared)
            if self._active.get(cid) is not live:  # ended while the lock was shared
                continue
            if live.started_at is None:
                live.started_at = now
                live.exec_deadline = now + live.record.command.execution_timeout_ms / 1000.0  # type: ignore[union-attr]
                live.record.state = RS.RUNNING
                live.record.reason = "STARTED"
                self._emit(live.record, EventKind.STARTED, "")
            try:
                out = live.executor.step(obs)
                if not isinstance(out, ExecutorStep):
                    raise TypeError(f"step() returned {type(out).__name__}, not ExecutorStep")
            except Exception as exc:
                self._finish(live, RS.ABORTED, f"{R.EXECUTOR_ERROR}: {exc!r}", EventKind.ABORTED)
                continue
            outputs.append((live, cid, out))
        return outputs

    def _settle(self, live: _Live, out: ExecutorStep, refused: tuple[str, str] | None) -> None:
        if refused is not None:
            self._finish(live, RS.ABORTED, f"{refused[0]}: {refused[1]}", EventKind.ABORTED)
        elif out.status is ExecutorStatus.RUNNING:
            if out.progress is not None:
                self._emit(live.record, EventKind.PROGRESS, "", out.progress)
        elif out.status is ExecutorStatus.CONTROL_DONE:
            self._finish(live, RS.CONTROL_DONE, "CONTROL_DONE", EventKind.CONTROL_DONE,
                         progress=out.progress)
        elif out.status is ExecutorStatus.ABORTED:
            self._finish(live, RS.ABORTED, out.reason or "ABORTED", EventKind.ABORTED,
                         progress=out.progress)
        else:
            reason = live.stop_reason or (f"STOPPED_BY_EXECUTOR: {out.reason}" if out.reason
                                          else "STOPPED_BY_EXECUTOR")
            self._finish(live, RS.STOPPED, reason, EventKind.STOPPED, progress=out.progress)

    # ------------------------------------------------------------------ records

    def _emit(self, rec: RuntimeRecord, kind: EventKind, reason: str,
              progress: float | None = None, data: Mapping[str, Any] | None = None) -> None:
        rec.last_seq += 1
        obs = self._observation
        event = CommandEvent(rec.command_id, rec.last_seq, kind, reason, progress,
                             None if obs is None else obs.timestep, dict(data or {}))
        rec.add_event(event)
        self._dirty[rec.command_id] = rec
        self._staged.append(event)

    def _end(self, rec: RuntimeRecord, state: RuntimeState, reason: str, kind: EventKind,
             data: Mapping[str, Any] | None = None, progress: float | None = None) -> None:
        rec.state = state
        rec.reason = reason
        rec.finished_wall = self.clock.wall()
        self._emit(rec, kind, reason, progress, data)
        self._remember(rec)

    def _remember(self, rec: RuntimeRecord) -> None:
        """Keep a finished record in the in-memory cache (the journal keeps them all)."""
        self._cache[rec.command_id] = rec
        self._cache.move_to_end(rec.command_id)
        while len(self._cache) > self.config.cache_size:
            self._cache.popitem(last=False)

    def _finish(self, live: _Live, state: RuntimeState, reason: str, kind: EventKind,
                data: Mapping[str, Any] | None = None, progress: float | None = None) -> None:
        cid = live.record.command_id
        self._active.pop(cid, None)
        for res, holder in list(self._holders.items()):
            if holder == cid:
                del self._holders[res]
        self._end(live.record, state, reason, kind, data, progress)

    def _find(self, command_id: str) -> RuntimeRecord | None:
        live = self._active.get(command_id)
        if live is not None:
            return live.record
        rec = self._cache.get(command_id) or self._journal.get(command_id)
        if rec is not None and rec.finished:
            self._remember(rec)
        return rec

    def _take_over(self, epoch: int) -> None:
        if epoch > self._epoch:
            self._epoch = epoch
            self._meta["epoch"] = str(epoch)

    def _reveal(self, *command_ids: str) -> None:
        """Before an answer tells of these commands: journal what is not yet (a step answering
        between two commands has changes of its own in hand)."""
        if any(cid in self._dirty for cid in command_ids):
            self._flush()

    def _flush_own(self, rec: RuntimeRecord, first: int) -> None:
        """Journal a new command's record (and the meta) alone, and let out the events staged
        for it after ``first``: an answer about it needs nothing else journaled, so a submit
        answered inside a step does not wait for the step's own changes. When the submit changed
        another command too (it preempted one), everything in hand is journaled."""
        cid = rec.command_id
        own = self._staged[first:]
        if any(event.command_id != cid for event in own):
            self._dirty[cid] = rec
            self._flush()
            return
        self._journal.write([rec], self._meta)
        self._meta = {}
        self._dirty.pop(cid, None)
        self._let_out(own)
        del self._staged[first:]

    def _flush_giving_way(self, shared: float) -> None:
        """Journal the step's changes a few records at a time, giving way between two writes:
        one write of a hundred records is a third of a millisecond no request could break into.
        Each record's row is whole in one write; the staged events go out afterwards, in
        :meth:`_flush`, once all of them are journaled (an answer in between that reports a
        record still in hand journals the rest first, as anywhere in a step)."""
        while len(self._dirty) > self.FLUSH_CHUNK:
            ids = list(itertools.islice(self._dirty, self.FLUSH_CHUNK))
            self._journal.write([self._dirty[cid] for cid in ids], self._meta)
            self._meta = {}
            for cid in ids:  # only once written: a failed write leaves them all in hand
                del self._dirty[cid]
            shared = self._share(shared)

    def _flush(self) -> None:
        """Journal the changes, then let the staged events out."""
        if self._dirty or self._meta:
            self._journal.write(list(self._dirty.values()), self._meta)
            self._dirty.clear()
            self._meta = {}
        self._let_out(self._staged)
        if self._collected is not None:
            self._collected += self._staged
        self._staged.clear()

    def _let_out(self, events: list[CommandEvent]) -> None:
        """Append journaled events to the log ``events_since`` reads."""
        for event in events:
            self._log_index += 1
            self._log.append((self._log_index, event))

    def _abort_unfinished(self) -> tuple[str, ...]:
        ids = []
        for rec in self._journal.unfinished():
            was = rec.state.value
            self._end(rec, RS.ABORTED, R.RUNTIME_RESTARTED.value, EventKind.ABORTED,
                      {"was": was})
            ids.append(rec.command_id)
        self._flush()
        return tuple(ids)

    def _purge(self, now: float) -> None:
        self._last_purge = now
        horizon = self.clock.wall() - self.config.retention_s
        self._journal.purge(horizon)
        for cid in [c for c, r in self._cache.items()
                    if r.finished_wall is not None and r.finished_wall < horizon]:
            del self._cache[cid]

    def _check_open(self) -> None:
        if self._closed:
            raise BridgeError("HOST_CLOSED", "the executor host is closed",
                              fix="build a new host on the same journal")

    def close(self) -> None:
        """Close the journal (the backend belongs to whoever built it)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._journal.close()


class _Answering:
    """The context manager :meth:`ExecutorHost.answering` returns."""

    __slots__ = ("_host",)

    def __init__(self, host: ExecutorHost) -> None:
        self._host = host

    def __enter__(self) -> None:
        self._host._answer_begins()

    def __exit__(self, *exc: object) -> None:
        self._host._answer_ends()
