"""The runtime seam: what the harness needs from anything that executes commands.

A :class:`RuntimeBridge` dispatches commands, cancels them, answers queries about them, and on
``poll()`` hands back the runtime's events and observations. The in-process runtime over a
GenManip simulator, the ZeroMQ bridge to a robot runtime, and the test
:class:`harness_bt.testing.FakeRuntime` all implement it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from harness_bt.ledger import Command, CommandEvent
from harness_bt.runtime.faults import FaultFired
from harness_bt.runtime.observation import Observation

__all__ = ["Ack", "BridgeNotice", "PollResult", "RuntimeBridge", "RuntimeState", "RuntimeStatus"]


class RuntimeState(StrEnum):
    """A command as the runtime sees it (answers to ``query``)."""

    PENDING = "PENDING"  # received, not started yet
    RUNNING = "RUNNING"
    STOPPING = "STOPPING"  # a stop was asked for and is being carried out
    CONTROL_DONE = "CONTROL_DONE"  # the executor finished its control action
    ABORTED = "ABORTED"  # the executor gave up
    STOPPED = "STOPPED"  # stopped on request (or by the runtime's own protection)
    REJECTED = "REJECTED"  # refused (stale epoch, expired, unknown skill, busy)
    NOT_FOUND = "NOT_FOUND"  # never received (or forgotten after its retention)

    @property
    def finished(self) -> bool:
        return self in {
            RuntimeState.CONTROL_DONE, RuntimeState.ABORTED, RuntimeState.STOPPED,
            RuntimeState.REJECTED, RuntimeState.NOT_FOUND,
        }


@dataclass(frozen=True, slots=True)
class Ack:
    """The runtime's answer to a dispatch or cancel. ``accepted`` False means refused, with
    ``reason``; ``duplicate`` True means the runtime already had this command id."""

    command_id: str
    accepted: bool
    state: RuntimeState = RuntimeState.PENDING
    reason: str = ""
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class RuntimeStatus:
    """The runtime's record of one command: what reconciliation reads."""

    command_id: str
    state: RuntimeState
    reason: str = ""
    last_seq: int = -1
    events: tuple[CommandEvent, ...] = ()


@dataclass(frozen=True, slots=True)
class BridgeNotice:
    """Something the bridge saw that is not a command event: an episode ended, a final metric
    arrived, a step's outcome is unknown, a worker died. ``data`` is JSON-ready."""

    kind: str
    worker_id: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PollResult:
    """What one ``poll()`` brought in, oldest first; ``faults``: the faults a simulator
    injected in the steps it ran (:mod:`harness_bt.runtime.faults`)."""

    events: tuple[CommandEvent, ...] = ()
    observations: tuple[Observation, ...] = ()
    notices: tuple[BridgeNotice, ...] = ()
    faults: tuple[FaultFired, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.events or self.observations or self.notices or self.faults)


@runtime_checkable
class RuntimeBridge(Protocol):
    """A runtime as the harness sees it. No method blocks longer than its configured timeout.

    ``dispatch`` must be idempotent per command id (a resend returns the original answer with
    ``duplicate=True``); ``start_budget_ms`` is the start budget left when the harness sends it
    (the runtime must refuse to start it later). ``cancel`` asks for a stop; the confirmation
    arrives later as a ``stopped`` event. ``query`` never changes anything. Event sequence
    numbers start at 1 per command (the harness records a refused dispatch acknowledgement as
    that command's event 0).
    """

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack: ...

    def cancel(self, command_id: str) -> Ack: ...

    def query(self, command_id: str) -> RuntimeStatus: ...

    def poll(self) -> PollResult: ...

    def close(self) -> None: ...
