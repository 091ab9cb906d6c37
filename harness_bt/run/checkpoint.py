"""Checkpoints of a running task: what one takes from a run, how a resumed run gets it back,
and when they are taken (the storage is the run record, :mod:`harness_bt.run.run_record`).

Taken after the start and after every tick in which the chart changed configuration: the
configuration and history states, every atomic phase's activation number, the blackboard's
plain values, the task budget's retries used, the counters, the plan version, the run's
:class:`RunProgress` (phases visited and their durations, commands handed over to a later
phase), the control epoch and the time used; in between, the time used is rewritten about once
per ``progress_interval_s``. Restored before the chart is rebuilt in that configuration; the
runner then re-enters the active phases.

This module reads a run through :class:`Checkpointed` (what a
:class:`~harness_bt.run.runner.TaskRunner` exposes), never its private state.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from statemachine.model import Model
from statemachine.orderedset import OrderedSet

from harness_bt.context import PhaseScope, RunContext
from harness_bt.events import TraceKind
from harness_bt.ledger import Ledger
from harness_bt.run.run_record import RunCheckpoint, RunRecord, journalable
from harness_bt.task import Task

__all__ = ["Checkpointed", "Checkpointer", "RunProgress", "chart_in", "restore", "take"]


@dataclass
class RunProgress:
    """What a run has done so far besides its chart and its context: when it started (on its
    clock), the phases it entered in order, how long each was active, and the commands handed
    over to a later phase (command id -> the phase that issued it)."""

    started_at: float = 0.0
    visited: list[str] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    handed_over: dict[str, str] = field(default_factory=dict)


class Checkpointed(Protocol):
    """What a checkpoint reads from a running task."""

    context: RunContext
    progress: RunProgress
    chart: Any
    ledger: Ledger
    ticks: int

    @property
    def scopes(self) -> Mapping[str, PhaseScope]: ...

    @property
    def configuration(self) -> tuple[str, ...]: ...


def take(run: Checkpointed, now: float, reason: str) -> RunCheckpoint:
    """The run's progress now."""
    ctx = run.context
    board = ctx.blackboard.as_dict()
    kept = {k: v for k, v in board.items() if journalable(v)}
    chart = run.chart
    history = {} if chart is None else {
        sid: [s.id for s in states] for sid, states in chart.history_values.items()}
    progress = run.progress
    return RunCheckpoint(
        configuration=run.configuration,
        activations={pid: scope.activation for pid, scope in run.scopes.items()},
        blackboard=copy.deepcopy(kept), retries_used=ctx.budget.retries_used,
        counters=dict(ctx.counters), plan_version=ctx.plan_version,
        visited=tuple(progress.visited), epoch=run.ledger.epoch,
        elapsed_s=now - progress.started_at, ticks=run.ticks, history=history,
        durations=dict(progress.durations), handed_over=dict(progress.handed_over),
        dropped=tuple(sorted(set(board) - set(kept))), reason=reason)


def restore(run: Checkpointed, cp: RunCheckpoint) -> None:
    """Put back what ``cp`` kept (before the chart is rebuilt); traced as ``resume``."""
    ctx = run.context
    for key, value in cp.blackboard.items():
        ctx.blackboard.set(key, copy.deepcopy(value), writer="resume")
    ctx.budget.retries_used = cp.retries_used
    ctx.counters.update(cp.counters)
    ctx.plan_version = cp.plan_version
    for pid, n in cp.activations.items():
        if pid in run.scopes:
            run.scopes[pid].activation = n
    run.progress.durations.update(cp.durations)
    run.progress.handed_over.update(cp.handed_over)
    ctx.emit(TraceKind.RESUME, checkpoint=cp.seq, reason=cp.reason,
             configuration=list(cp.configuration), activations=dict(cp.activations),
             retries_used=cp.retries_used, elapsed_s=cp.elapsed_s, epoch=cp.epoch,
             dropped=list(cp.dropped), restarted=list(run.ledger.restarted))


def chart_in(task: Task, cp: RunCheckpoint, *, listeners: Sequence[Any]) -> Any:
    """A chart of ``task`` already in ``cp``'s configuration: its model carries the state
    values, so python-statemachine starts there without running any entry action."""
    model = Model()
    model.state = OrderedSet(cp.configuration) if len(cp.configuration) > 1 \
        else cp.configuration[0]
    chart = task.chart_class(model=model, listeners=list(listeners))
    states = task.chart_class.states_map
    chart.history_values = {sid: [states[v] for v in values if v in states]
                            for sid, values in cp.history.items()}
    return chart


class Checkpointer:
    """When a run's progress is journaled (see the module docstring); a run without a run
    record takes none. ``transitions`` counts the chart's transitions so far."""

    def __init__(self, record: RunRecord | None, *, progress_interval_s: float = 1.0) -> None:
        self.record = record
        self.progress_interval_s = progress_interval_s
        self._checkpointed = -1
        self._progress_at = -math.inf

    def checkpoint(self, run: Checkpointed, now: float, reason: str, transitions: int) -> None:
        """Journal a checkpoint now (traced as ``checkpoint``)."""
        if self.record is None:
            return
        self._checkpointed = transitions
        self._progress_at = now
        run.ledger.flush()  # the ledger's entries the checkpoint rests on reach the disk first
        cp = take(run, now, reason)
        seq = self.record.checkpoint(cp, wall=run.context.clock.wall())
        run.context.emit(TraceKind.CHECKPOINT, seq=seq, reason=reason,
                         configuration=list(cp.configuration), dropped=list(cp.dropped))

    def after_tick(self, run: Checkpointed, now: float, transitions: int) -> None:
        """A checkpoint when the configuration changed since the last one, else the time used
        when it is due."""
        if self.record is None:
            return
        if transitions != self._checkpointed:
            self.checkpoint(run, now, "transition", transitions)
        elif now - self._progress_at >= self.progress_interval_s:
            self._progress_at = now
            self.record.progress_update(elapsed_s=now - run.progress.started_at,
                                         ticks=run.ticks, epoch=run.ledger.epoch)

    def finish(self, result: Mapping[str, Any]) -> None:
        if self.record is not None:
            self.record.finish(dict(result))
