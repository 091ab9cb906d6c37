"""One record type per kind of trace event (:class:`~harness_bt.events.TraceKind`), with
typed fields for what the readers of a trace use; :data:`RECORDS` maps each kind to its type.

Every field not typed here is still in the record's ``data`` (the event as written).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness_bt.events.base import (
    Event,
    anything,
    field_of,
    flag,
    integer,
    mapping,
    number,
    optional,
    text,
    texts,
    values,
)
from harness_bt.events.kinds import TraceKind
from harness_bt.events.values import OutcomeInfo, budget_limits, outcome_info, status_changes

__all__ = [
    "RECORDS",
    "AdoptedEvent",
    "BlackboardEvent",
    "BreakerEvent",
    "BudgetEvent",
    "CancelEvent",
    "CancelSentEvent",
    "ChartEvent",
    "CheckpointEvent",
    "CommandEvent",
    "ControlEvent",
    "DispatchEvent",
    "DrainTimeoutEvent",
    "DrainingEvent",
    "ErrorEvent",
    "FailureEvent",
    "FaultInjectedEvent",
    "FrameEvent",
    "HandoverEvent",
    "IterationEvent",
    "LatencyEvent",
    "NodeErrorEvent",
    "NodeEvent",
    "NoticeEvent",
    "ObservationEvent",
    "OrphanRuntimeEvent",
    "OutcomeEvent",
    "OutcomeInfo",
    "PhaseEnterEvent",
    "PhaseExitEvent",
    "PlannerEvent",
    "ReconcileEvent",
    "RecoveryEvent",
    "ReissueEvent",
    "ResumeEvent",
    "ResumedEvent",
    "RunEndEvent",
    "RunStartEvent",
    "StalledEvent",
    "StatusEvent",
    "StopEvent",
    "TaskEvent",
    "UnhandledEvent",
    "VerdictEvent",
    "WaitingEvent",
]

_record = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)


_str = optional(text)
_num = optional(number)
_int = optional(integer)


@_record
class TaskEvent(Event):
    """``task``: the whole task structure (the first event); ``structure`` is what drawings
    and replay read."""

    name: str = field_of(text, key="task", default="")
    initial: str | None = field_of(_str, default=None)
    scene: str | None = field_of(_str, default=None)
    phases: tuple[Any, ...] = field_of(values, default=())
    trees: dict[str, Any] = field_of(mapping, default={})
    skills: dict[str, Any] = field_of(mapping, default={})

    @property
    def structure(self) -> dict[str, Any]:
        """The task's structure: everything but the skills' versions."""
        return {k: v for k, v in self.data.items() if k != "skills"}


@_record
class RunStartEvent(Event):
    """``run_start``: the seed, the tick period and the task budget's limits (``budget``)."""

    seed: int | None = field_of(_int, default=None)
    tick_period_s: float | None = field_of(_num, default=None)
    budget: dict[str, Any] = field_of(budget_limits, default={})

    @property
    def max_time_s(self) -> float | None:
        """The task's time budget (None: unlimited)."""
        return _num(self.budget.get("max_time_s"))


@_record
class ResumeEvent(Event):
    """``resume``: a run continued from checkpoint ``checkpoint``."""

    checkpoint: int = field_of(integer)
    reason: str = field_of(text, default="")
    configuration: tuple[str, ...] = field_of(texts, default=())
    dropped: tuple[Any, ...] = field_of(values, default=())
    restarted: tuple[Any, ...] = field_of(values, default=())
    #: what the world memory restored (``restored``, ``version``, ``objects``: id -> version)
    world: dict[str, Any] = field_of(mapping, default={})


@_record
class ResumedEvent(Event):
    """``resumed``: open commands adopted from the ledger (command id -> state)."""

    open: dict[str, Any] = field_of(mapping)


@_record
class CheckpointEvent(Event):
    checkpoint_seq: int = field_of(integer, key="seq")
    reason: str = field_of(text, default="")
    configuration: tuple[str, ...] = field_of(texts, default=())


@_record
class ObservationEvent(Event):
    world_version: int = field_of(integer)
    timestep: int | None = field_of(_int, default=None)
    worker_id: str = field_of(text, default="")
    reset: bool = field_of(flag, default=False)
    changed: dict[str, Any] = field_of(mapping, default={})


@_record
class CommandEvent(Event):
    """``command``: one ledger history entry of ``command_id``."""

    op: str = field_of(text)
    state_after: str = field_of(text)
    state_before: str | None = field_of(_str, default=None)
    reason: str = field_of(text, default="")
    skill: str = field_of(text, default="")
    applied: bool = field_of(flag, default=True)
    evidence: tuple[Any, ...] = field_of(values, default=())


@_record
class DispatchEvent(Event):
    sent: bool = field_of(flag)
    accepted: bool | None = field_of(optional(flag), default=None)
    runtime_state: str | None = field_of(_str, default=None)
    reason: str = field_of(text, default="")
    error: dict[str, Any] | None = field_of(optional(mapping), default=None)


@_record
class CancelEvent(Event):
    why: str = field_of(text)
    state_before: str | None = field_of(_str, default=None)
    state_after: str | None = field_of(_str, default=None)


@_record
class CancelSentEvent(Event):
    sent: bool = field_of(flag)
    accepted: bool | None = field_of(optional(flag), default=None)
    runtime_state: str | None = field_of(_str, default=None)
    reason: str = field_of(text, default="")
    error: dict[str, Any] | None = field_of(optional(mapping), default=None)


@_record
class NodeEvent(Event):
    """An event about one node of one phase's tree."""

    phase: str = field_of(text, default="")
    node_path: str = field_of(text, default="")


@_record
class AdoptedEvent(NodeEvent):
    message: str = field_of(text, default="")


@_record
class ReissueEvent(NodeEvent):
    reason: str = field_of(text, default="")


@_record
class RecoveryEvent(NodeEvent):
    pass


@_record
class IterationEvent(NodeEvent):
    """``iteration``: a ``for_each`` loop (``node_path``) began (``stage`` ``start``) or ended
    (``end``, with the body's ``status``) a run of its body for ``item`` (the ``index``-th run
    of the loop, this item's ``run``-th), or found nothing left to do (``done``); ``left``:
    the items still to do when it chose. Stage ``domain``: the loop started over a scene group
    or an expression (``over``, as written) and ``left`` holds the items it found (an
    expression's frozen for the rest of the loop)."""

    stage: str = field_of(text)
    item: str = field_of(text, default="")
    index: int = field_of(integer, default=0)
    run: int = field_of(integer, default=0)
    status: str = field_of(text, default="")
    left: tuple[str, ...] = field_of(texts, default=())
    over: str = field_of(text, default="")


@_record
class WaitingEvent(NodeEvent):
    details: dict[str, Any] = field_of(mapping, default={})


@_record
class NodeErrorEvent(NodeEvent):
    stage: str = field_of(text, default="")
    exception: str = field_of(text, default="")


@_record
class FailureEvent(NodeEvent):
    outcome: OutcomeInfo = field_of(outcome_info)


@_record
class VerdictEvent(NodeEvent):
    verdict: str = field_of(text)
    evidence: tuple[str, ...] = field_of(texts)
    final: bool = field_of(flag)
    look: int | None = field_of(_int, default=None)
    timestep: int | None = field_of(_int, default=None)


@_record
class StatusEvent(Event):
    phase: str = field_of(text)
    changes: dict[str, tuple[str, str]] = field_of(status_changes)


@_record
class PhaseEnterEvent(Event):
    """``phase_enter``: ``tree`` (its node paths) for a phase with a tree, ``phase_kind`` for
    the others (compound, parallel, final)."""

    phase: str = field_of(text)
    activation: int | None = field_of(_int, default=None)
    tree: tuple[str, ...] | None = field_of(optional(texts), default=None)
    phase_kind: str | None = field_of(_str, key="kind", default=None)


@_record
class PhaseExitEvent(Event):
    phase: str = field_of(text)
    activation: int | None = field_of(_int, default=None)


@_record
class HandoverEvent(Event):
    phase: str = field_of(text)


@_record
class ChartEvent(Event):
    """``chart``: a transition (no ``source`` for the initial configuration)."""

    event: str = field_of(text)
    configuration: tuple[str, ...] = field_of(texts)
    source: str | None = field_of(_str, default=None)
    target: str | None = field_of(_str, default=None)


@_record
class OutcomeEvent(Event):
    """``outcome``: a tree ended; ``event`` is what it raised in the chart."""

    phase: str = field_of(text)
    event: str = field_of(text)
    outcome: OutcomeInfo = field_of(outcome_info)


@_record
class UnhandledEvent(Event):
    phase: str = field_of(text)
    event: str = field_of(text)


@_record
class BudgetEvent(Event):
    """``budget``: a draw (``draw``: retry, recovery, time, ...), granted or refused."""

    draw: str = field_of(text, key="kind")
    granted: bool = field_of(flag)
    node_path: str | None = field_of(_str, default=None)
    refused: str | None = field_of(_str, default=None)
    delay_s: float | None = field_of(_num, default=None)
    retries_used: int | None = field_of(_int, default=None)
    retries_left: int | None = field_of(_int, default=None)
    time_left_s: float | None = field_of(_num, default=None)


@_record
class BreakerEvent(Event):
    key: str = field_of(text)
    state_before: str = field_of(text)
    state_after: str = field_of(text)
    failures: int | None = field_of(_int, default=None)


@_record
class BlackboardEvent(Event):
    key: str = field_of(text)
    value: Any = field_of(anything, default=None)
    writer: str = field_of(text, default="")


@_record
class ReconcileEvent(Event):
    runtime_state: str = field_of(text)
    action: str = field_of(text)
    state_after: str = field_of(text)
    runtime_reason: str = field_of(text, default="")


@_record
class LatencyEvent(Event):
    """``latency``: ``which`` is decision or protection; ``seconds`` None when unmeasured.
    ``clock``: ``run`` (the run's clock: a simulator's steps, which do not advance while the
    harness decides) or ``wall`` (the decision latency ``harness run`` reports: wall time
    from the observation handed over to the command dispatched)."""

    which: str = field_of(text)
    seconds: float | None = field_of(_num)
    confirmed: bool | None = field_of(optional(flag), default=None)
    clock: str = field_of(text, default="run")


@_record
class NoticeEvent(Event):
    notice_kind: str = field_of(text, key="kind")
    worker_id: str = field_of(text, default="")
    notice: dict[str, Any] = field_of(mapping, default={})


@_record
class OrphanRuntimeEvent(Event):
    """``orphan_event``: a runtime event for a command the ledger does not know."""

    event: dict[str, Any] = field_of(mapping)


@_record
class ErrorEvent(Event):
    where: str = field_of(text)
    error: dict[str, Any] = field_of(mapping)


@_record
class StopEvent(Event):
    """``stop``: the run stopped from outside its chart. ``by`` says who asked: empty for the
    runner's own stops (a limit, the budget, the simulator's end of the episode); for a stop
    asked for from the console, ``{"source": "console", "control": "stop", "client": ...,
    "peer": ..., "agent": ...}``."""

    outcome: str = field_of(text)
    reason: str = field_of(text)
    configuration: tuple[str, ...] = field_of(texts, default=())
    by: dict[str, Any] = field_of(mapping, default={})


@_record
class StalledEvent(Event):
    held: tuple[str, ...] = field_of(texts, default=())
    configuration: tuple[str, ...] = field_of(texts, default=())


@_record
class DrainingEvent(Event):
    outcome: str = field_of(text)
    reason: str = field_of(text)
    open: tuple[str, ...] = field_of(texts, default=())


@_record
class DrainTimeoutEvent(Event):
    open: dict[str, Any] = field_of(mapping)


@_record
class FrameEvent(Event):
    """``frame``: camera frames recorded in ``file`` beside the trace."""

    file: str = field_of(text)
    timestep: int | None = field_of(_int, default=None)
    images: dict[str, Any] = field_of(mapping, default={})
    ee_poses: tuple[Any, ...] = field_of(values, default=())
    objects: dict[str, Any] = field_of(mapping, default={})


@_record
class ControlEvent(Event):
    """``control``: a request from the live console (pause, resume, step, stop, a
    breakpoint set, reached or cleared); ``who`` asked."""

    op: str = field_of(text)
    who: dict[str, Any] = field_of(mapping, default={})
    node: str | None = field_of(_str, default=None)
    when: str | None = field_of(_str, default=None)
    status: str | None = field_of(_str, default=None)
    stage: str | None = field_of(_str, default=None)
    received_wall: float | None = field_of(_num, default=None)


@_record
class PlannerEvent(Event):
    call: int = field_of(integer)
    planner: str = field_of(text, default="")
    instruction: str = field_of(text, default="")
    plan: dict[str, Any] | None = field_of(optional(mapping), default=None)
    refusal: dict[str, Any] | None = field_of(optional(mapping), default=None)


@_record
class FaultInjectedEvent(Event):
    """``fault_injected``: the simulator injected ``fault`` (slip, nudge, occlude, ...) in
    step ``timestep`` of the episode (``sim_time_s`` after it began), while the runtime
    executed ``command_id`` (the envelope's; None: no command of this run) for node
    ``node_path`` of ``phase``; ``running``: every command the runtime was executing."""

    fault: str = field_of(text)
    timestep: int = field_of(integer)
    sim_time_s: float | None = field_of(_num, default=None)
    phase: str | None = field_of(_str, default=None)
    node_path: str | None = field_of(_str, default=None)
    skill: str | None = field_of(_str, default=None)
    worker_id: str = field_of(text, default="")
    details: dict[str, Any] = field_of(mapping, default={})
    running: tuple[str, ...] = field_of(texts, default=())


@_record
class RunEndEvent(Event):
    """``run_end``: the run's result (``result``: all of it, as written)."""

    outcome: str = field_of(text)
    reason: str = field_of(text)

    @property
    def result(self) -> dict[str, Any]:
        return dict(self.data)


#: The record type of each kind.
RECORDS: dict[TraceKind, type[Event]] = {
    TraceKind.TASK: TaskEvent, TraceKind.RUN_START: RunStartEvent,
    TraceKind.RESUME: ResumeEvent, TraceKind.RESUMED: ResumedEvent,
    TraceKind.CHECKPOINT: CheckpointEvent, TraceKind.OBSERVATION: ObservationEvent,
    TraceKind.COMMAND: CommandEvent, TraceKind.DISPATCH: DispatchEvent,
    TraceKind.CANCEL: CancelEvent, TraceKind.CANCEL_SENT: CancelSentEvent,
    TraceKind.ADOPTED: AdoptedEvent, TraceKind.REISSUE: ReissueEvent,
    TraceKind.STATUS: StatusEvent, TraceKind.PHASE_ENTER: PhaseEnterEvent,
    TraceKind.PHASE_EXIT: PhaseExitEvent, TraceKind.HANDOVER: HandoverEvent,
    TraceKind.CHART: ChartEvent, TraceKind.OUTCOME: OutcomeEvent,
    TraceKind.UNHANDLED: UnhandledEvent, TraceKind.FAILURE: FailureEvent,
    TraceKind.NODE_ERROR: NodeErrorEvent, TraceKind.BUDGET: BudgetEvent,
    TraceKind.BREAKER: BreakerEvent, TraceKind.VERDICT: VerdictEvent,
    TraceKind.RECOVERY: RecoveryEvent, TraceKind.ITERATION: IterationEvent,
    TraceKind.WAITING: WaitingEvent,
    TraceKind.BLACKBOARD: BlackboardEvent, TraceKind.RECONCILE: ReconcileEvent,
    TraceKind.LATENCY: LatencyEvent, TraceKind.NOTICE: NoticeEvent,
    TraceKind.ORPHAN_EVENT: OrphanRuntimeEvent, TraceKind.ERROR: ErrorEvent,
    TraceKind.STOP: StopEvent, TraceKind.STALLED: StalledEvent,
    TraceKind.DRAINING: DrainingEvent, TraceKind.DRAIN_TIMEOUT: DrainTimeoutEvent,
    TraceKind.FRAME: FrameEvent, TraceKind.CONTROL: ControlEvent,
    TraceKind.PLANNER: PlannerEvent, TraceKind.RUN_END: RunEndEvent,
    TraceKind.FAULT_INJECTED: FaultInjectedEvent,
}
