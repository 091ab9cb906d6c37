"""What a runtime remembers about one command: :class:`RuntimeRecord` and the reason words."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

from harness_bt.ledger import Command, CommandEvent, EventKind
from harness_bt.runtime.bridge import Ack, RuntimeState, RuntimeStatus

__all__ = ["RuntimeReason", "RuntimeRecord"]


class RuntimeReason(StrEnum):
    """Why a runtime refused, stopped or ended a command (the ``reason`` of acks and events)."""

    ACCEPTED = "ACCEPTED"
    STALE_EPOCH = "STALE_EPOCH"  # issued under an older control epoch than the runtime's
    EXPIRED_COMMAND = "EXPIRED_COMMAND"  # its start budget ran out before it could start
    RESOURCE_BUSY = "RESOURCE_BUSY"  # a resource it needs is held by an active command
    EPOCH_PREEMPTED = "EPOCH_PREEMPTED"  # held: a newer epoch's command needed its resource
    COMMAND_ID_CONFLICT = "COMMAND_ID_CONFLICT"  # the id is taken by a command of other content
    INVALID_COMMAND = "INVALID_COMMAND"  # malformed command (the field is named)
    EXECUTOR_REFUSED = "EXECUTOR_REFUSED"  # the executor factory refused it (unknown skill)
    EXECUTOR_ERROR = "EXECUTOR_ERROR"  # the executor raised while stepping
    INVALID_ACTION = "INVALID_ACTION"  # the executor produced an action the robot cannot take
    ACTION_CONFLICT = "ACTION_CONFLICT"  # two executors drove the same part in one step
    BACKEND_ERROR = "BACKEND_ERROR"  # the simulator / robot failed a step
    CANCEL_REQUESTED = "CANCEL_REQUESTED"  # the harness asked for a stop
    CANCELED_BEFORE_RECEIPT = "CANCELED_BEFORE_RECEIPT"  # a cancel came before its dispatch
    LEASE_EXPIRED = "LEASE_EXPIRED"  # no heartbeat renewed its lease: the runtime held itself
    EXECUTION_TIMEOUT = "EXECUTION_TIMEOUT"  # ran past its execution timeout
    STOP_FORCED = "STOP_FORCED"  # the executor did not confirm a stop in time: held by force
    RUNTIME_RESTARTED = "RUNTIME_RESTARTED"  # it was active when the runtime died
    EPISODE_ENDED = "EPISODE_ENDED"  # the simulator ended the episode it was running in
    ALREADY_FINISHED = "ALREADY_FINISHED"  # a cancel for a command that had already finished
    UNKNOWN_COMMAND = "UNKNOWN_COMMAND"  # no record with that id


_STATES = {s.value: s for s in RuntimeState}
_SCALARS = frozenset({str, int, bool, type(None)})
#: Events a record keeps for ``query``: every lifecycle event, and only the latest progress.
_LIFECYCLE = frozenset(EventKind) - {EventKind.PROGRESS}


@dataclass(slots=True, eq=False)
class RuntimeRecord:
    """The durable part of a runtime's record of one command.

    ``command`` is None for a tombstone (a cancel that arrived before its dispatch: the id is
    burnt and a late dispatch with it never runs). ``accepted`` says whether the original
    submit was accepted; ``last_seq`` is the last event sequence number handed out (a
    command's events are numbered from 1; 0: none yet), so events issued after a restart
    continue above it. ``received_wall`` / ``finished_wall`` are wall times (they outlive the
    process; retention is measured on them).
    """

    command_id: str
    command: Command | None
    accepted: bool
    state: RuntimeState
    reason: str
    received_wall: float
    finished_wall: float | None = None
    last_seq: int = 0
    events: list[CommandEvent] = field(default_factory=list)
    _command_json: str | None = field(default=None, repr=False)

    @property
    def digest(self) -> str | None:
        return None if self.command is None else self.command.digest

    @property
    def finished(self) -> bool:
        return self.state.finished

    def add_event(self, event: CommandEvent) -> None:
        """Keep ``event`` for ``query``: lifecycle events all, progress only the latest."""
        if event.kind not in _LIFECYCLE and self.events and self.events[-1].kind not in _LIFECYCLE:
            self.events[-1] = event
        else:
            self.events.append(event)

    def ack(self, *, duplicate: bool, reason: str | None = None) -> Ack:
        return Ack(
            command_id=self.command_id,
            accepted=self.accepted,
            state=self.state,
            reason=self.reason if reason is None else reason,
            duplicate=duplicate,
        )

    def status(self) -> RuntimeStatus:
        return RuntimeStatus(
            command_id=self.command_id,
            state=self.state,
            reason=self.reason,
            last_seq=self.last_seq,
            events=tuple(self.events),
        )

    def _command_text(self) -> str | None:
        if self._command_json is None and self.command is not None:
            self._command_json = self.command.model_dump_json()
        return self._command_json

    def to_row(self) -> tuple[Any, ...]:
        """The journal row: (id, command, accepted, state, reason, received, finished, last_seq,
        events)."""
        return (
            self.command_id,
            self._command_text(),
            int(self.accepted),
            str(self.state),  # its value (a StrEnum's str), without the enum's slow .value
            self.reason,
            self.received_wall,
            self.finished_wall,
            self.last_seq,
            _events_text(self.events),
        )

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> RuntimeRecord:
        cid, cmd, accepted, state, reason, received, finished, last_seq, events = row
        return cls(
            command_id=cid,
            command=None if cmd is None else Command.model_validate_json(cmd),
            _command_json=cmd,
            accepted=bool(accepted),
            state=_STATES[state],
            reason=reason,
            received_wall=received,
            finished_wall=finished,
            last_seq=last_seq,
            events=[CommandEvent.from_wire(e) for e in json.loads(events)],
        )


def _events_text(events: list[CommandEvent]) -> str:
    """The events as JSON text. orjson when every ``data`` value is a plain scalar (a progress
    is finite by construction): there it writes what json would mean; otherwise json (which
    keeps a NaN as NaN where orjson would write null)."""
    if not events:
        return "[]"
    wire = [e.to_wire() for e in events]
    if all(_plain(e.data) for e in events):
        try:
            return orjson.dumps(wire).decode("utf-8")
        except TypeError:  # a lone surrogate, an integer past 64 bits
            pass
    return json.dumps(wire)


def _plain(data: Any) -> bool:
    for key, value in data.items():
        if type(key) is not str:
            return False
        if type(value) is float:
            if not math.isfinite(value):
                return False
        elif type(value) not in _SCALARS:
            return False
    return True
