"""Checkpoints of a running task: what one takes from a run, how a resumed run gets it back,
and when they are taken (the storage is the run record, :mod:`harness_bt.run.run_record`).

Taken after the start, after every tick in which the chart changed configuration and after one
in which a node asked for it (``RunContext.checkpoint_wanted``: a ``for_each`` froze its items): the
configuration and history states, every atomic phase's activation number, the blackboard's
plain values, the task budget's retries used, the counters, the plan version, the run's
:class:`RunProgress` (phases visited and their durations, commands handed over to a later
phase), the control epoch, the time used, and the world memory (the world model and the
blackboard values made from it, :mod:`harness_bt.run.memory`); in between, the time used is
rewritten about once per ``progress_interval_s``. Restored before the chart is rebuilt in that
configuration; the runner then re-enters the active phases.

This module reads a run through :class:`Checkpointed` (what a
:class:`~harness_bt.run.runner.TaskRunner` exposes), never its private state.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from statemachine.model import Model
from statemachine.orderedset import OrderedSet

from harness_bt.context import PhaseScope, RunContext
from harness_bt.events import TraceKind
from harness_bt.ledger import Ledger
from harness_bt.run import memory
from harness_bt.run.run_record import RunCheckpoint, RunRecord, journalable
from harness_bt.task import Task
from harness_bt.world import WorldModel

__all__ = ["NO_MEMORY", "Checkpointed", "Checkpointer", "RunProgress", "chart_in",
           "check_memory", "forget_world", "restore", "take"]

#: why a resumed run starts with an empty world when its checkpoint holds no world memory
NO_MEMORY = ("the checkpoint holds no world memory (written by a harness-bt before world "
             "memory was checkpointed): every object is observed again")


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
    world: WorldModel
    ticks: int

    @property
    def scopes(self) -> Mapping[str, PhaseScope]: ...

    @property
    def configuration(self) -> tuple[str, ...]: ...


def _wall_at(run: Checkpointed, now: float) -> float:
    """The wall time at the run's monotonic time ``now``."""
    clock = run.context.clock
    return clock.wall() - (clock.monotonic() - now)


def take(run: Checkpointed, now: float, reason: str) -> RunCheckpoint:
    """The run's progress now."""
    ctx = run.context
    wall = _wall_at(run, now)
    board = ctx.blackboard.as_dict()
    kept = {k: v for k, v in board.items() if journalable(v)}
    made = {k: e for k, v in board.items() if k not in kept
            and (e := memory.encode_value(v, now=now, wall=wall)) is not None}
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
        dropped=tuple(sorted(set(board) - set(kept) - set(made))), reason=reason,
        world=memory.remember(run.world, now=now, wall=wall), world_values=made)


def check_memory(cp: RunCheckpoint, where: str) -> None:
    """Refuse a checkpoint whose world memory does not check out (``WORLD_MEMORY_INVALID``),
    before anything is built."""
    if cp.world is not None:
        memory.world_memory(cp.world, now=0.0, wall=0.0, where=where)
    for key, value in cp.world_values.items():
        memory.decode_value(value, now=0.0, wall=0.0, where=f"{where}, blackboard key {key!r}")


def forget_world(cp: RunCheckpoint, why: str) -> RunCheckpoint:
    """``cp`` without its world memory (``harness resume --forget-world``): no object is
    restored (the world version is kept, so every new sighting is newer than any premise), and
    the blackboard values made from the world are dropped."""
    return replace(cp, world=memory.forgotten(cp.world, why), world_values={},
                   dropped=tuple(sorted({*cp.dropped, *cp.world_values})))


def restore(run: Checkpointed, cp: RunCheckpoint) -> None:
    """Put back what ``cp`` kept (before the chart is rebuilt); traced as ``resume``."""
    ctx = run.context
    now = ctx.now
    wall = _wall_at(run, now)
    where = f"checkpoint {cp.seq}"
    if cp.world is None:
        world: dict[str, Any] = {"restored": False, "why": NO_MEMORY}
    else:
        world = memory.recall(run.world, cp.world, now=now, wall=wall, where=where)
    for key, value in cp.blackboard.items():
        ctx.blackboard.set(key, copy.deepcopy(value), writer="resume")
    for key, value in cp.world_values.items():
        ctx.blackboard.set(key, memory.decode_value(
            value, now=now, wall=wall, where=f"{where}, blackboard key {key!r}"),
            writer="resume")
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
             dropped=list(cp.dropped), restarted=list(run.ledger.restarted), world=world)


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
        self._seq = 0
        self._known: frozenset[str] = frozenset()  # the object ids of the last world written

    def checkpoint(self, run: Checkpointed, now: float, reason: str, transitions: int) -> None:
        """Journal a checkpoint now (traced as ``checkpoint``)."""
        if self.record is None:
            return
        self._checkpointed = transitions
        self._progress_at = now
        run.ledger.flush()  # the ledger's entries the checkpoint rests on reach the disk first
        cp = take(run, now, reason)
        self._seq = seq = self.record.checkpoint(cp, wall=run.context.clock.wall())
        self._known = frozenset(o.object_id for o in run.world.objects())
        run.context.emit(TraceKind.CHECKPOINT, seq=seq, reason=reason,
                         configuration=list(cp.configuration), dropped=list(cp.dropped))

    def after_tick(self, run: Checkpointed, now: float, transitions: int) -> None:
        """A checkpoint when the configuration changed since the last one; else, when it is
        due or an object appeared or went since, the time used and the world memory (which
        the newest checkpoint takes on resume)."""
        if self.record is None:
            return
        wanted, run.context.checkpoint_wanted = run.context.checkpoint_wanted, None
        if transitions != self._checkpointed or wanted is not None:
            self.checkpoint(run, now, "transition" if wanted is None else wanted, transitions)
            return
        known = frozenset(o.object_id for o in run.world.objects())
        if now - self._progress_at >= self.progress_interval_s or known != self._known:
            self._progress_at = now
            self._known = known
            self.record.progress_update(
                elapsed_s=now - run.progress.started_at, ticks=run.ticks,
                epoch=run.ledger.epoch, world=memory.remember(
                    run.world, now=now, wall=_wall_at(run, now)), checkpoint=self._seq)

    def finish(self, result: Mapping[str, Any]) -> None:
        if self.record is not None:
            self.record.finish(dict(result))
