"""The task runner: one tick = poll the runtime, enforce deadlines, reconcile UNKNOWN commands,
tick the tree of every active phase, turn tree results into chart events, trace every change.

Lifecycle of a run: ``idle`` -> ``running`` (the chart is live) -> ``draining`` (the chart ended
or the run was stopped: every open command is cancelled and the runner keeps polling until
each one is terminal or UNKNOWN, bounded by the stop timeouts) -> ``finished`` (``result``).

When a phase exits, its tree is halted (a RUNNING SkillAction cancels its command; the
resource is free only when the stop is confirmed or reconciled) and every command its
activation created that is still open is closed: ACCEPTED / RUNNING are cancelled; EVALUATING
ones are cancelled (CANCELED_AFTER_CONTROL_DONE: nobody will judge them) unless their
SkillAction has ``handover=True``, in which case they stay open for a later phase's Evaluate
until the task ends. Nothing is left EVALUATING or holding a resource forever: at the end of
the run every open command is cancelled, and UNKNOWN ones are reported in the result.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import uuid
from collections.abc import Mapping
from typing import Any

import py_trees
from py_trees.common import Status

from harness_bt.budget import BreakerBoard, Exhaustion
from harness_bt.clock import Clock, SystemClock
from harness_bt.context import (
    GuardContext,
    Outcome,
    OutcomeKind,
    PhaseScope,
    RunContext,
    RunIds,
    RunServices,
)
from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.evaluation import EvaluatorRegistry
from harness_bt.events import TraceKind
from harness_bt.ledger import CommandRecord, CommandState, HistoryEntry, Ledger
from harness_bt.run import checkpoint, loop
from harness_bt.run.bound_trees import RunTrees
from harness_bt.run.checkpoint import Checkpointer, RunProgress
from harness_bt.run.faults import trace_fault
from harness_bt.run.loop import ChartListener, RunPhase, tick_until_finished
from harness_bt.run.reconcile import Reconciler
from harness_bt.run.result import TaskResult, result_of
from harness_bt.run.run_record import RunCheckpoint
from harness_bt.run.settings import RunnerSettings, RunParts
from harness_bt.runtime.bridge import RuntimeBridge
from harness_bt.skill import SkillRegistry
from harness_bt.task import Task
from harness_bt.trace import Trace
from harness_bt.world import WorldModel, scripted_perception

__all__ = ["TaskRunner"]

_OPEN = (CommandState.ACCEPTED, CommandState.RUNNING, CommandState.CANCELING,
         CommandState.EVALUATING, CommandState.RECONCILING)
#: what a phase exit or the end of the run cancels
_CANCELABLE = (CommandState.ACCEPTED, CommandState.RUNNING, CommandState.EVALUATING)


class TaskRunner:
    """Runs a :class:`~harness_bt.task.task.Task` against a :class:`~harness_bt.RuntimeBridge`.

    Construction builds one tree per atomic phase and binds every node (unknown skills and
    evaluators are reported here, all at once). Nothing is sent until the first :meth:`tick`.
    Without ``skills`` / ``nodes`` / ``evaluators`` the registries are filled from the
    ``harness_bt.skills`` / ``harness_bt.nodes`` / ``harness_bt.evaluators`` entry points
    (evaluators: the built-ins too).
    ``trace`` is a path (JSONL), a :class:`Trace`, or None (in memory only).
    """

    def __init__(
        self,
        task: Task,
        *,
        bridge: RuntimeBridge,
        clock: Clock | None = None,
        skills: SkillRegistry | None = None,
        trace: Trace | str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        settings: RunnerSettings | None = None,
        parts: RunParts | None = None,
    ) -> None:
        settings = settings if settings is not None else RunnerSettings()
        parts = parts if parts is not None else RunParts()
        self.settings = settings
        self.task = task
        self.clock: Clock = clock or SystemClock()
        self.bridge = bridge
        self.ledger = parts.ledger if parts.ledger is not None else Ledger(
            wall_clock=self.clock.wall)
        self.world = parts.world or WorldModel()
        self.perception = parts.perception or scripted_perception
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.task_id = settings.task_id or task.name
        self.tick_period_s = float(settings.tick_period_s)
        self.reconcile_interval_s = settings.reconcile_interval_s
        self.trees = task.build_trees(parts.nodes)
        self._trees = RunTrees(self.trees)
        if isinstance(trace, Trace):
            self.trace = trace
            trace.task_id, trace.run_id = self.task_id, self.run_id
        else:
            self.trace = Trace(trace, clock=self.clock, task_id=self.task_id, run_id=self.run_id)
        self.skills = skills if skills is not None else SkillRegistry(entry_points=True)
        self.context = RunContext(
            RunIds(self.task_id, self.run_id, settings.robot_id, settings.seed),
            RunServices(self.ledger, bridge, self.clock, self.world, self.skills,
                        parts.evaluators if parts.evaluators is not None
                        else EvaluatorRegistry(entry_points=True),
                        parts.breakers or BreakerBoard()),
            budget=(settings.budget or task.budget).copy(), trace=self.trace)
        ctx = self.context
        self.trace.plan_version = lambda: ctx.plan_version
        self.scopes = {pid: PhaseScope(pid, ctx) for pid in self.trees}
        self._trees.bind(ctx, self.scopes, task=task.name)
        self._state_order = [s.id for s in task.chart_class.states_map.values()]
        self._atomic_order = [pid for pid in self._state_order if pid in self.trees]
        stop_budget = max([s.lifecycle.stop_timeout_ms / 1000.0 for _, s in self.skills.items()]
                          + [self.ledger.default_stop_timeout_s])
        self.drain_timeout_s = settings.drain_timeout_s \
            if settings.drain_timeout_s is not None \
            else 2 * stop_budget + 2 * settings.reconcile_interval_s + 1.0
        self.chart: Any = None
        self.phase: RunPhase = RunPhase.IDLE
        self.ticks = 0
        self.result: TaskResult | None = None
        self.progress = RunProgress()
        self._held: set[str] = set()
        self._to_cancel: list[str] = []
        self._entered_at: dict[str, float] = {}
        self._transitions = 0
        self._active: list[str] = []
        self._active_key = -1
        self._time_fired = False
        self._outcome = ("", "")
        self._final_state: str | None = None
        self._drain_deadline = 0.0
        self.reconciler = Reconciler(ctx, interval_s=settings.reconcile_interval_s)
        resume = parts.resume
        self.resumed_from = resume
        self._hooks = ChartListener(self._enter, self._exit, self._transitioned)
        self.checkpoints = Checkpointer(parts.run_record,
                                        progress_interval_s=settings.progress_interval_s)
        if resume is not None:
            unknown = sorted(set(resume.configuration) - set(self._state_order))
            if unknown:
                raise DefinitionError(
                    "RESUME_MISMATCH", f"the checkpoint's configuration names states "
                    f"{unknown} that task {task.name!r} does not have",
                    fix="resume with the task file the run was started with")
        self.ledger.add_listener(self._on_ledger)
        if self.ledger.premise_check is None:
            self.ledger.premise_check = self.world.premise_check
        ctx.budget.on_draw = lambda d: ctx.emit(TraceKind.BUDGET, **d)
        ctx.blackboard.on_write = lambda key, value, writer: ctx.emit(
            TraceKind.BLACKBOARD, key=key, writer=writer, value=value)
        ctx.breakers.on_change = lambda br, a, b: ctx.emit(
            TraceKind.BREAKER, key=br.name, state_before=a.value, state_after=b.value,
            failures=br.failures)

    # ------------------------------------------------------------------ reading

    @property
    def configuration(self) -> tuple[str, ...]:
        """Active chart states, in document order."""
        if self.chart is None:
            return ()
        active = set(self.chart.configuration_values)
        return tuple(s for s in self._state_order if s in active)

    def active_phases(self) -> list[str]:
        """Atomic phases whose trees tick, in document order (recomputed after transitions)."""
        if self.chart is None or self.phase is not RunPhase.RUNNING:
            return []
        if self._active_key != self._transitions:
            active = set(self.chart.configuration_values)
            self._active = [pid for pid in self._atomic_order if pid in active]
            self._active_key = self._transitions
        return self._active

    def status_map(self, *, all_phases: bool = False) -> dict[str, dict[str, str]]:
        """``{phase: {node path: status}}`` for the active phases (or all of them)."""
        phases = self._atomic_order if all_phases else self.active_phases()
        return self._trees.status_map(phases)

    @property
    def blackboard(self) -> Any:
        return self.context.blackboard

    # ------------------------------------------------------------------ running

    def run(self, max_ticks: int | None = None, timeout_s: float | None = None) -> TaskResult:
        """Tick until the run is finished (sleeping ``tick_period_s`` on the injected clock
        between ticks). ``max_ticks`` / ``timeout_s`` stop a run that has not ended by then
        (outcome ``max_ticks`` / ``timeout``); the drain after that is bounded separately."""
        return tick_until_finished(self, sleep=lambda: self.clock.sleep(self.tick_period_s),
                                   stops=(loop.max_ticks(max_ticks),
                                          loop.timeout(self.clock, timeout_s)))

    def tick(self) -> None:
        """One tick (see the module docstring)."""
        ctx = self.context
        now = self.clock.monotonic()
        ctx.now = now
        if self.phase is RunPhase.FINISHED:
            return
        with self.ledger.group():  # one commit per tick; sends and checkpoints flush first
            self.ticks += 1
            ctx.tick = self.trace.tick = self.ticks
            if self.phase is RunPhase.IDLE:
                self._start(now)
            self._poll(now)
            self._to_cancel = []
            self.ledger.tick(now=now)
            for cid in self._to_cancel:
                ctx.send_cancel(cid)
            self.reconciler.step(now)
            if self.phase is RunPhase.RUNNING:
                self._tick_chart(now)
            if self.phase in (RunPhase.RUNNING, RunPhase.DRAINING):
                self.checkpoints.after_tick(self, now, self._transitions)
        if self.phase is RunPhase.DRAINING and (not self._open()
                                                  or now >= self._drain_deadline):
            self._finish(now)  # after the tick's commit: the result rests on what is on disk

    def stop(self, outcome: str = "aborted", reason: str = "aborted_stopped", *,
             by: Mapping[str, Any] | None = None) -> None:
        """Stop a running run from outside: halt every active phase, cancel open commands,
        drain. The result's outcome / reason are the ones given; ``by``: who asked, traced
        on the ``stop`` event (none: the runner itself)."""
        if self.phase is not RunPhase.RUNNING:
            return
        self.context.emit(TraceKind.STOP, outcome=outcome, reason=reason,
                          configuration=list(self.configuration), by=dict(by or {}))
        for pid in reversed(self.active_phases()):
            self._exit(pid)
        self._close(outcome, reason)

    # ------------------------------------------------------------------ tick parts

    def _start(self, now: float) -> None:
        ctx = self.context
        resume = self.resumed_from
        self.progress.started_at = now if resume is None else now - resume.elapsed_s
        ctx.budget.start(self.progress.started_at)
        ctx.emit(TraceKind.TASK, **self.task.structure(self.trees), skills={
            name: {"version": s.version, "resources": list(s.resources)}
            for name, s in self.skills.items()})
        ctx.emit(TraceKind.RUN_START, seed=ctx.seed, tick_period_s=self.tick_period_s,
                 budget=ctx.budget.to_dict())
        if resume is None:
            for key, value in self.task.blackboard.items():  # the task's defaults, traced
                ctx.blackboard.set(key, copy.deepcopy(value), writer="task")
        else:
            checkpoint.restore(self, resume)
        prefix = f"{self.run_id}/"
        adopted = [r.command_id for r in self.ledger.active()
                   if r.command_id.startswith(prefix)]
        earlier = adopted if resume is None else [r.command_id for r in self.ledger
                                                  if r.command_id.startswith(prefix)]
        for cid in earlier:  # a resumed run: its commands so far; the open ones get reconciled
            ctx.command_phase.setdefault(cid, cid[len(prefix):].split(".", 1)[0])
        if adopted:
            ctx.emit(TraceKind.RESUMED,
                     open={cid: self.ledger.get(cid).state.value for cid in adopted})
        self.phase = RunPhase.RUNNING
        if resume is None:
            self.chart = self.task.chart_class(listeners=[self._hooks])
        else:
            self._reenter(resume)
        ctx.emit(TraceKind.CHART, event="__initial__" if resume is None else "__resumed__",
                 source=None, target=None, configuration=list(self.configuration))
        self.checkpoints.checkpoint(self, now, "start" if resume is None else "resumed",
                                    self._transitions)

    def _reenter(self, cp: RunCheckpoint) -> None:
        """Rebuild the chart in the checkpoint's configuration (no entry actions run), then
        re-enter every active state: atomic phases get their trees reset and the activation
        number they had, so their leaves re-derive the same command ids."""
        self.chart = checkpoint.chart_in(self.task, cp, listeners=[self._hooks])
        for sid in self._state_order:
            if sid in cp.configuration:
                if sid in self.scopes:
                    self.scopes[sid].activation -= 1  # enter() counts it again
                self._enter(sid)
        self.progress.visited = list(cp.visited)
        self._transitions += 1

    def _poll(self, now: float) -> None:
        ctx = self.context
        try:
            res = self.bridge.poll()
        except BridgeError as exc:
            ctx.breakers.get("bridge").record(False, now)
            ctx.error("poll", exc)
            return
        for obs in res.observations:
            if obs.received_at is None:
                obs = dataclasses.replace(obs, received_at=now)
            change = self.world.observe(obs, self.perception(obs), now=now)
            if obs.reset:
                self.ledger.world_version = self.world.version
            ctx.emit(TraceKind.OBSERVATION, timestep=obs.timestep, worker_id=obs.worker_id,
                     reset=obs.reset, world_version=change.version,
                     changed=dict(change.reasons))
        for ev in res.events:
            if ev.command_id in self.ledger:
                if ev.kind == "control_done" and ev.timestep is not None:
                    ctx.control_done_step.setdefault(ev.command_id, ev.timestep)
                self.ledger.apply(ev, now=now)
            else:
                ctx.emit(TraceKind.ORPHAN_EVENT, command_id=ev.command_id, event=ev.to_wire())
        for fault in res.faults:  # before a notice that the episode ended stops the run
            trace_fault(ctx, fault, self.active_phases())
        for notice in res.notices:
            ctx.emit(TraceKind.NOTICE, kind=notice.kind, worker_id=notice.worker_id,
                     notice=notice.data)
            if notice.kind == "episode_ended":  # before any tree sees the commands it ended
                self.stop("aborted", "aborted_episode_ended")

    def _tick_chart(self, now: float) -> None:
        ctx = self.context
        if not self._time_fired and ctx.budget.exhausted(now) is not None:
            self._time_fired = True
            ctx.emit(TraceKind.BUDGET, kind="time", granted=False,
                     refused=Exhaustion.TASK_TIME.value, time_left_s=ctx.budget.time_left(now))
            outcome = Outcome(OutcomeKind.BUDGET_EXHAUSTED, Exhaustion.TASK_TIME.value,
                              retryable=False)
            handled = False
            for pid in self.active_phases():
                if self.phase is RunPhase.RUNNING and pid in self.active_phases():
                    handled = self._raise(pid, outcome) or handled
            if self.phase is RunPhase.RUNNING and not self.chart.is_terminated and not handled:
                self.stop("aborted", "aborted_budget_exhausted")
                return
        completions: list[tuple[str, int, Outcome]] = []
        for pid in self.active_phases():
            if pid in self._held:
                continue
            root = self.trees[pid]
            root.tick_once()
            self._trees.record_status(pid, self.context)
            if root.status is Status.SUCCESS:
                completions.append((pid, self.scopes[pid].activation,
                                    Outcome(OutcomeKind.SUCCEEDED, "", self._trees.root_path(pid))))
            elif root.status is Status.FAILURE:
                why = self.scopes[pid].failure_this_tick() or Outcome(
                    OutcomeKind.FAILED, "FAILED", self._trees.root_path(pid))
                completions.append((pid, self.scopes[pid].activation, why))
        for pid, activation, outcome in completions:
            if self.phase is not RunPhase.RUNNING or pid not in self.active_phases() \
                    or self.scopes[pid].activation != activation:
                continue
            if not self._raise(pid, outcome):
                self._held.add(pid)
        if self.phase is not RunPhase.RUNNING:
            return
        final = next((s for s in self.configuration if self.task.final_reason(s)
                      and self.task.specs[s] in self.task.phases), None)
        if self.chart.is_terminated or final is not None:  # (a chart resumed in a final state)
            reason = self.task.final_reason(final) if final else "done"
            self._final_state = final
            self._close("succeeded" if reason == "done" else "aborted", reason or "done")
        elif self.active_phases() and all(p in self._held for p in self.active_phases()):
            ctx.emit(TraceKind.STALLED, held=sorted(self._held),
                     configuration=list(self.configuration))
            self.stop("aborted", "aborted_stalled")

    def _raise(self, pid: str, outcome: Outcome) -> bool:
        ctx = self.context
        event = f"{outcome.kind.value}.{pid}"
        before = self._transitions
        ctx.emit(TraceKind.OUTCOME, phase=pid, event=event, outcome=outcome.to_dict())
        self.chart.send(event, outcome=outcome, guard_context=GuardContext(
            outcome, ctx.blackboard, self.world.view(ctx.now)))
        handled = self._transitions != before
        if not handled:
            ctx.emit(TraceKind.UNHANDLED, phase=pid, event=event)
        return handled

    # ------------------------------------------------------------------ chart hooks

    def _enter(self, sid: str) -> None:
        ctx = self.context
        now = ctx.now
        self.progress.visited.append(sid)
        self._entered_at[sid] = now
        if sid in self.trees:
            scope = self.scopes[sid]
            scope.enter()
            root = self.trees[sid]
            if root.status is not Status.INVALID:
                root.stop(Status.INVALID)
            self._held.discard(sid)
            ctx.plan_version += 1
            ctx.emit(TraceKind.PHASE_ENTER, phase=sid, activation=scope.activation,
                     tree=self._trees.paths[sid])
            self._trees.record_status(sid, ctx)
        else:
            ctx.emit(TraceKind.PHASE_ENTER, phase=sid, kind=self.task.specs[sid].kind)

    def _exit(self, sid: str) -> None:
        ctx = self.context
        now = ctx.now
        durations = self.progress.durations
        durations[sid] = durations.get(sid, 0.0) + now - self._entered_at.get(sid, now)
        if sid not in self.trees:
            ctx.emit(TraceKind.PHASE_EXIT, phase=sid)
            return
        scope = self.scopes[sid]
        root = self.trees[sid]
        root.stop(Status.INVALID)  # a RUNNING SkillAction cancels its command here
        for cid in scope.commands:
            rec = self.ledger.find(cid)
            if rec is None or rec.terminal:
                continue
            if rec.state is CommandState.EVALUATING and cid in scope.handover:
                self.progress.handed_over[cid] = sid
                ctx.emit(TraceKind.HANDOVER, command_id=cid, phase=sid)
            elif rec.state in _CANCELABLE:
                ctx.cancel(cid, why="PHASE_EXIT", stop_timeout_s=self._stop_timeout(rec))
        self._held.discard(sid)
        ctx.emit(TraceKind.PHASE_EXIT, phase=sid, activation=scope.activation)
        self._trees.record_status(sid, ctx)

    def _transitioned(self, event: str, source: Any, target: Any) -> None:
        self._transitions += 1
        self.context.emit(TraceKind.CHART, event=event, source=getattr(source, "id", None),
                          target=getattr(target, "id", None),
                          configuration=list(self.configuration))

    def _stop_timeout(self, rec: CommandRecord) -> float | None:
        if rec.command.skill in self.skills:
            return self.skills.get(rec.command.skill).lifecycle.stop_timeout_ms / 1000.0
        return None

    def _on_ledger(self, rec: CommandRecord, h: HistoryEntry) -> None:
        if self.context.trace_command(rec, h):  # the ledger's own deadline asks for a stop
            self._to_cancel.append(rec.command_id)

    # ------------------------------------------------------------------ ending

    def _close(self, outcome: str, reason: str) -> None:
        ctx = self.context
        self._outcome = (outcome, reason)
        for rec in self.ledger.active():
            if rec.command_id in ctx.command_phase and rec.state in _CANCELABLE:
                ctx.cancel(rec.command_id, why="TASK_END", stop_timeout_s=self._stop_timeout(rec))
        self.phase = RunPhase.DRAINING
        self._drain_deadline = ctx.now + self.drain_timeout_s
        ctx.emit(TraceKind.DRAINING, outcome=outcome, reason=reason,
                 open=[r.command_id for r in self._open()])

    def open_commands(self) -> list[str]:
        """The ids of this run's commands still open in the ledger."""
        return [r.command_id for r in self.ledger.active()
                if r.command_id in self.context.command_phase]

    def note(self, kind: TraceKind, **data: Any) -> None:
        """An event of the run's own in its trace (the console's controls, a planner's)."""
        self.context.emit(kind, **data)

    def _open(self) -> list[CommandRecord]:
        ids = self.context.command_phase
        return [r for r in self.ledger.active() if r.command_id in ids and r.state in _OPEN]

    def _finish(self, now: float) -> None:
        ctx = self.context
        outcome, reason = self._outcome
        left = self._open()
        if left:
            ctx.emit(TraceKind.DRAIN_TIMEOUT, open={r.command_id: r.state.value for r in left})
        self.result = result_of(self, now, outcome, reason, self._final_state)
        self.phase = RunPhase.FINISHED
        self.checkpoints.finish(self.result.to_dict())
        ctx.emit(TraceKind.RUN_END, **self.result.to_dict())
        self.trace.close()  # the events stay in memory (``trace.events``)

    def close(self) -> None:
        """Close the trace file (the bridge and the ledger belong to the caller)."""
        self.trace.close()
        self.ledger.remove_listener(self._on_ledger)

    def tree(self, phase: str) -> py_trees.behaviour.Behaviour:
        return self.trees[phase]
