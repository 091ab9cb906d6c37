"""Lifecycle words of the command ledger: command states, runtime event kinds, verdicts."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ACTIVE", "TERMINAL", "CommandState", "EventKind", "Verdict"]


class CommandState(StrEnum):
    """Where a command is in its lifecycle (docs/architecture.md, "The command ledger").

    ``ACCEPTED -> RUNNING -> EVALUATING -> SUCCEEDED | FAILED``;
    ``ACCEPTED | RUNNING -> CANCELING -> CANCELED``; a stop not confirmed in time or lost
    evidence -> ``UNKNOWN -> RECONCILING -> SUCCEEDED | FAILED | CANCELED | UNKNOWN``;
    refused at submit or start -> ``REJECTED``.
    """

    ACCEPTED = "ACCEPTED"
    RUNNING = "RUNNING"
    CANCELING = "CANCELING"
    EVALUATING = "EVALUATING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    UNKNOWN = "UNKNOWN"
    RECONCILING = "RECONCILING"
    REJECTED = "REJECTED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset(
    {CommandState.SUCCEEDED, CommandState.FAILED, CommandState.CANCELED, CommandState.REJECTED}
)
ACTIVE = frozenset(CommandState) - TERMINAL


class EventKind(StrEnum):
    """What a runtime reports about a command it executes."""

    STARTED = "started"  # the executor began: ACCEPTED -> RUNNING
    PROGRESS = "progress"  # still moving; progress value / distance remaining in the event
    CONTROL_DONE = "control_done"  # the control action finished: -> EVALUATING (not success)
    ABORTED = "aborted"  # the executor gave up, with the runtime's reason: -> FAILED
    STOPPED = "stopped"  # a stop was carried out and confirmed: CANCELING -> CANCELED
    REJECTED = "rejected"  # the runtime refused to start it (stale epoch, expired): -> REJECTED


class Verdict(StrEnum):
    """An evaluator's (or a reconciliation's) judgement of a command's physical result."""

    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"
    CANCELED = "CANCELED"  # only when reconciling: the runtime confirmed the stop
