"""What a checkpoint takes from a running :class:`~harness_bt.run.runner.TaskRunner`, and how a
resumed runner gets it back (the storage is :mod:`harness_bt.run.journal`).

Taken after every tick in which the chart changed configuration: the configuration and history
states, every atomic phase's activation number, the blackboard's plain values, the task
budget's retries used, the counters, the plan version, the phases visited and their durations,
the commands handed over to a later phase, the control epoch and the time used. Restored before
the chart is rebuilt in that configuration; the runner then re-enters the active phases.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from statemachine.model import Model
from statemachine.orderedset import OrderedSet

from harness_bt.phases import Task
from harness_bt.run.journal import RunCheckpoint, journalable

if TYPE_CHECKING:
    from harness_bt.run.runner import TaskRunner

__all__ = ["chart_in", "restore", "take"]


def take(runner: TaskRunner, now: float, reason: str) -> RunCheckpoint:
    """The runner's progress now (the runner's own state, read as it stands)."""
    ctx = runner.context
    board = ctx.blackboard.as_dict()
    kept = {k: v for k, v in board.items() if journalable(v)}
    chart = runner.chart
    history = {} if chart is None else {
        sid: [s.id for s in states] for sid, states in chart.history_values.items()}
    return RunCheckpoint(
        configuration=runner.configuration,
        activations={pid: scope.activation for pid, scope in runner.scopes.items()},
        blackboard=copy.deepcopy(kept), retries_used=ctx.budget.retries_used,
        counters=dict(ctx.counters), plan_version=ctx.plan_version,
        visited=tuple(runner.visited), epoch=runner.ledger.epoch,
        elapsed_s=now - runner._started_at, ticks=runner.ticks, history=history,
        durations=dict(runner._durations), handed_over=dict(runner._handed_over),
        dropped=tuple(sorted(set(board) - set(kept))), reason=reason)


def restore(runner: TaskRunner, cp: RunCheckpoint) -> None:
    """Put back what ``cp`` kept (before the chart is rebuilt); traced as ``resume``."""
    ctx = runner.context
    for key, value in cp.blackboard.items():
        ctx.blackboard.set(key, copy.deepcopy(value), writer="resume")
    ctx.budget.retries_used = cp.retries_used
    ctx.counters.update(cp.counters)
    ctx.plan_version = cp.plan_version
    for pid, n in cp.activations.items():
        if pid in runner.scopes:
            runner.scopes[pid].activation = n
    runner._durations.update(cp.durations)
    runner._handed_over.update(cp.handed_over)
    ctx.emit("resume", checkpoint=cp.seq, reason=cp.reason,
             configuration=list(cp.configuration), activations=dict(cp.activations),
             retries_used=cp.retries_used, elapsed_s=cp.elapsed_s, epoch=cp.epoch,
             dropped=list(cp.dropped), restarted=list(runner.ledger.restarted))


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
