"""How a run ended: :class:`TaskResult`, and :func:`result_of` a finished run."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness_bt.context import RunContext
from harness_bt.events import TraceKind
from harness_bt.ledger import CommandState, Ledger
from harness_bt.run.checkpoint import RunProgress
from harness_bt.trace import Trace

__all__ = ["Finished", "TaskResult", "result_of"]


@dataclass(frozen=True)
class TaskResult:
    """How a run ended.

    ``outcome``: ``succeeded`` (final reason ``done``), ``aborted`` (a final ``aborted_<why>``
    state, or the runner stopped a stalled / budget-exhausted chart), ``timeout`` or
    ``max_ticks``. ``reason``: the final state's reason (``done``, ``aborted_<why>``) or the
    runner's. ``commands``: every command of the run with its final state; ``unknowns``: those
    left UNKNOWN (their resources stay held until reconciled).
    """

    task_id: str
    run_id: str
    outcome: str
    reason: str
    phases_visited: tuple[str, ...]
    commands: Mapping[str, str]
    command_reasons: Mapping[str, str]
    retries: int
    recoveries: int
    replans: int
    unknowns: tuple[str, ...]
    unknown_verdicts: int
    durations: Mapping[str, float]
    ticks: int
    decision_latency_s: tuple[float, ...] = ()
    protection_latency_s: tuple[float | None, ...] = ()
    trace_path: str | None = None
    final_state: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.outcome == "succeeded"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Finished(Protocol):
    """What a result reads from a run that ended (a :class:`~harness_bt.run.runner.TaskRunner`)."""

    task_id: str
    run_id: str
    context: RunContext
    ledger: Ledger
    trace: Trace
    progress: RunProgress
    ticks: int


def result_of(run: Finished, now: float, outcome: str, reason: str,
              final_state: str | None) -> TaskResult:
    """The result of ``run``, ended at ``now`` with ``outcome`` / ``reason``: every command it
    issued with its final state, its counters, durations and latencies."""
    ctx = run.context
    ledger = run.ledger
    records = [ledger.get(cid) for cid in ctx.command_phase if cid in ledger]
    latencies = [e["data"] for e in run.trace.of_kind(TraceKind.LATENCY)] if run.trace.keep else []
    return TaskResult(
        task_id=run.task_id, run_id=run.run_id, outcome=outcome, reason=reason,
        phases_visited=tuple(run.progress.visited),
        commands={r.command_id: r.state.value for r in records},
        command_reasons={r.command_id: r.reason for r in records},
        retries=ctx.counters.get("retries", 0),
        recoveries=ctx.counters.get("recoveries", 0),
        replans=ctx.counters.get("replans", 0),
        unknowns=tuple(r.command_id for r in records if r.state is CommandState.UNKNOWN),
        unknown_verdicts=ctx.counters.get("unknown_verdicts", 0),
        durations={"total": now - run.progress.started_at, **run.progress.durations},
        ticks=run.ticks,
        decision_latency_s=tuple(d["seconds"] for d in latencies if d["which"] == "decision"
                                 and d.get("clock", "run") == "run"),
        protection_latency_s=tuple(d["seconds"] for d in latencies
                                   if d["which"] == "protection"),
        trace_path=None if run.trace.path is None else str(run.trace.path),
        final_state=final_state,
        details={"held_resources": ledger.held_resources(),
                 "breakers": ctx.breakers.states(now)},
    )
