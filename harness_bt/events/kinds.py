"""Every kind of trace event the harness writes (docs/architecture.md, "Traces")."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["TraceKind"]


class TraceKind(StrEnum):
    """The ``kind`` of a trace event. Its value is what the JSONL trace holds; a trace from a
    newer writer may hold others (:func:`harness_bt.events.parse_event` keeps them as a
    :class:`~harness_bt.events.OtherEvent`)."""

    TASK = "task"  # the whole task structure, first in every trace
    RUN_START = "run_start"
    RESUME = "resume"  # a run continued from a checkpoint
    RESUMED = "resumed"  # open commands adopted from the ledger
    CHECKPOINT = "checkpoint"
    OBSERVATION = "observation"
    COMMAND = "command"  # every ledger history entry
    DISPATCH = "dispatch"
    CANCEL = "cancel"
    CANCEL_SENT = "cancel_sent"
    ADOPTED = "adopted"  # a step already journaled
    REISSUE = "reissue"  # a step left open by a restart, never started: issued again
    STATUS = "status"  # tick-status changes of one phase's tree
    PHASE_ENTER = "phase_enter"
    PHASE_EXIT = "phase_exit"
    HANDOVER = "handover"
    CHART = "chart"  # a transition, with the configuration after
    OUTCOME = "outcome"  # a tree ended
    UNHANDLED = "unhandled"  # no transition took a tree's outcome
    FAILURE = "failure"  # why a node failed
    NODE_ERROR = "node_error"  # a node raised
    BUDGET = "budget"  # a retry / recovery draw, or the task time running out
    BREAKER = "breaker"
    VERDICT = "verdict"  # with evidence
    RECOVERY = "recovery"
    ITERATION = "iteration"  # a for_each loop: an item's run started / ended, or none is left
    WAITING = "waiting"  # for a resource
    BLACKBOARD = "blackboard"  # a write
    RECONCILE = "reconcile"
    LATENCY = "latency"  # decision or protection
    NOTICE = "notice"
    ORPHAN_EVENT = "orphan_event"
    ERROR = "error"
    STOP = "stop"
    STALLED = "stalled"
    DRAINING = "draining"
    DRAIN_TIMEOUT = "drain_timeout"
    FRAME = "frame"  # camera frames recorded beside the trace
    CONTROL = "control"  # a request from the live console
    PLANNER = "planner"  # a planner call that chose the task, or refused
    FAULT_INJECTED = "fault_injected"  # the simulator injected a fault (slip, nudge, ...)
    RUN_END = "run_end"  # the result
