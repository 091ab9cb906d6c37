"""What the ledger knows about one command: its state and its history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from harness_bt.ledger.command import Command
from harness_bt.ledger.states import CommandState

__all__ = ["CommandRecord", "HistoryEntry"]


class HistoryEntry(NamedTuple):
    """One step in a command's history, journaled before it took effect.

    ``seq`` is the ledger-wide journal sequence number; ``runtime_seq`` the runtime's own event
    sequence number when the step came from a runtime event. ``applied`` is False for an event
    that was recorded and ignored (duplicate, late, or not allowed in the state it met).
    """

    seq: int
    op: str
    state_before: CommandState | None
    state_after: CommandState
    reason: str
    mono: float
    wall: float
    applied: bool = True
    runtime_seq: int | None = None
    evidence: tuple[Any, ...] = ()
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "seq": self.seq,
            "op": self.op,
            "state_before": None if self.state_before is None else self.state_before.value,
            "state_after": self.state_after.value,
            "reason": self.reason,
            "mono": self.mono,
            "wall": self.wall,
            "applied": self.applied,
        }
        if self.runtime_seq is not None:
            out["runtime_seq"] = self.runtime_seq
        if self.evidence:
            out["evidence"] = list(self.evidence)
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(slots=True, eq=False)
class CommandRecord:
    """The ledger's live record of one command. Read it; change it only through the ledger."""

    command: Command
    state: CommandState
    reason: str
    accepted_at: float
    start_deadline: float
    dispatched_at: float | None = None
    started_at: float | None = None
    exec_deadline: float | None = None
    stop_requested: bool = False
    stop_deadline: float | None = None
    terminal_at: float | None = None
    last_seq: int = -1
    progress: float | None = None
    last_progress_at: float | None = None
    control_done_seen: bool = False
    prior_state: CommandState | None = None
    evidence: tuple[Any, ...] = ()
    events: list[HistoryEntry] = field(default_factory=list)
    #: this record's line in a snapshot, kept once it was written for a terminal record and
    #: dropped by any change (the ledger's snapshots then copy it instead of encoding it again)
    _snapshot_text: str | None = field(default=None, repr=False)

    @property
    def command_id(self) -> str:
        return self.command.command_id

    @property
    def terminal(self) -> bool:
        return self.state.terminal

    @property
    def restarted(self) -> bool:
        """Whether a harness restart left this command open (the ledger journaled it open and
        marked it UNKNOWN on reopening)."""
        return any(h.op == "restart" for h in self.events)

    def start_budget_left_ms(self, now: float) -> float:
        """Start budget left at ``now``: what a forwarder passes on (it is never refreshed)."""
        return max(0.0, (self.start_deadline - now) * 1000.0)

    def summary(self) -> dict[str, Any]:
        """State without history: what a table, a trace line or a comparison needs."""
        return {
            "command_id": self.command_id,
            "skill": self.command.skill,
            "state": self.state.value,
            "reason": self.reason,
            "resources": list(self.command.resources),
            "accepted_at": self.accepted_at,
            "dispatched_at": self.dispatched_at,
            "started_at": self.started_at,
            "stop_requested": self.stop_requested,
            "terminal_at": self.terminal_at,
            "last_seq": self.last_seq,
            "evidence": list(self.evidence),
        }
