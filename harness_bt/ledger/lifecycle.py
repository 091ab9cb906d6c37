"""The lifecycle rules of the command ledger: what each request, runtime event and deadline does
to a command's record, as journal entries, and how an entry changes the ledger's state.

A ledger call decides an entry here (:func:`event_entry`, :func:`verdict_entry`,
:func:`cancel_entry`, :func:`deadline_entries`), journals it, and applies it with
:meth:`Book.apply`; replaying the journal applies the same entries, so a reopened ledger is the
one that was written. A ``move`` entry changes a record's state (only along :data:`ALLOWED`); a
``note`` entry records something that changes no state (a duplicate event, a progress report, a
stop request for an UNKNOWN command).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness_bt.ledger.command import Command, CommandEvent
from harness_bt.ledger.errors import LedgerCode, LedgerError
from harness_bt.ledger.record import CommandRecord, HistoryEntry
from harness_bt.ledger.sqlite_store import encode_entry
from harness_bt.ledger.states import TERMINAL, CommandState, EventKind, Verdict

__all__ = ["ALLOWED", "Book", "cancel_entry", "deadline_entries", "entry_text", "event_entry",
           "jsonable", "move", "note", "premise_problem", "verdict_entry"]



def _states(*names: str) -> frozenset[CommandState]:
    return frozenset(CommandState(name) for name in names)


#: Allowed state changes. Anything else is a bug in the ledger, not in the caller.
ALLOWED: dict[CommandState, frozenset[CommandState]] = {
    CommandState.ACCEPTED: _states("RUNNING", "EVALUATING", "FAILED", "CANCELING", "CANCELED",
                                   "REJECTED", "UNKNOWN"),
    CommandState.RUNNING: _states("EVALUATING", "FAILED", "CANCELING", "UNKNOWN"),
    CommandState.CANCELING: _states("CANCELED", "UNKNOWN"),
    CommandState.EVALUATING: _states("SUCCEEDED", "FAILED", "UNKNOWN", "CANCELED"),
    CommandState.UNKNOWN: _states("RECONCILING", "CANCELED", "FAILED"),
    CommandState.RECONCILING: _states("SUCCEEDED", "FAILED", "CANCELED", "UNKNOWN"),
    CommandState.SUCCEEDED: frozenset(),
    CommandState.FAILED: frozenset(),
    CommandState.CANCELED: frozenset(),
    CommandState.REJECTED: frozenset(),
}
_STATE_BY_VALUE = {s.value: s for s in CommandState}
_VERDICTS = {v.value: v for v in Verdict}
_VERDICT_REASONS = {
    Verdict.SUCCEEDED: "POSTCONDITION_CONFIRMED",
    Verdict.FAILED: "POSTCONDITION_NOT_MET",
    Verdict.UNKNOWN: "EVIDENCE_INSUFFICIENT",
    Verdict.CANCELED: "STOP_CONFIRMED_BY_QUERY",
}


def premise_problem(command: Command, *, epoch: int, world_version: int
                    ) -> tuple[LedgerCode, str] | None:
    """Why ``command`` may no longer be issued: an older control epoch than the ledger's, or a
    world version older than the world's (None: its premises hold)."""
    if command.epoch < epoch:
        return (LedgerCode.STALE_EPOCH, f"command epoch {command.epoch} is older than the "
                f"ledger's epoch {epoch}; a newer controller has taken over")
    if command.world_version < world_version:
        return (LedgerCode.STALE_WORLD, f"command planned on world version "
                f"{command.world_version}, the world is now at {world_version}")
    return None


def move(rec: CommandRecord, to: CommandState, reason: str, now: float, src: str,
         **extra: Any) -> dict[str, Any]:
    """An entry that moves ``rec`` to ``to`` (``src``: the call that decided it)."""
    entry = {"op": "move", "id": rec.command.command_id, "t": now, "to": to.value,
             "reason": reason, "src": src}
    entry.update(extra)
    return entry


def note(rec: CommandRecord, now: float, src: str, reason: str, applied: bool,
         **extra: Any) -> dict[str, Any]:
    """An entry that records something about ``rec`` without moving it."""
    entry = {"op": "note", "id": rec.command.command_id, "t": now, "reason": reason,
             "src": src, "applied": applied}
    entry.update(extra)
    return entry


def event_entry(rec: CommandRecord, ev: CommandEvent, now: float) -> dict[str, Any]:
    """What a runtime event does to ``rec``. Duplicates, older seqs and events the state does
    not allow are noted (``applied=False``) and change nothing."""
    kind: EventKind = ev.kind  # type: ignore[assignment]  # CommandEvent normalises it
    state = rec.state
    extra: dict[str, Any] = {"rseq": ev.seq, "kind": kind.value}
    if ev.progress is not None:
        extra["progress"] = ev.progress
    if ev.seq <= rec.last_seq:
        return note(rec, now, "event", "DUPLICATE_OR_STALE_SEQ", False, **extra)
    if state in TERMINAL:
        return note(rec, now, "event", f"LATE_AFTER_{state.value}", False, **extra)
    why = ev.reason
    stopping = state is CommandState.CANCELING or (
        state in (CommandState.UNKNOWN, CommandState.RECONCILING) and rec.stop_requested)
    if kind is EventKind.STARTED:
        if state is CommandState.ACCEPTED:
            return move(rec, CommandState.RUNNING, "STARTED", now, "event", **extra)
        return note(rec, now, "event", f"STARTED_WHILE_{state.value}", False, **extra)
    if kind is EventKind.PROGRESS:
        if state is CommandState.ACCEPTED:
            return move(rec, CommandState.RUNNING, "IMPLICIT_START", now, "event", **extra)
        if state is CommandState.EVALUATING:
            return note(rec, now, "event", "PROGRESS_AFTER_CONTROL_DONE", False, **extra)
        return note(rec, now, "event", "PROGRESS", True, **extra)
    if kind is EventKind.CONTROL_DONE:
        if state in (CommandState.ACCEPTED, CommandState.RUNNING):
            detail = ev.data.get("detail") if isinstance(ev.data, Mapping) else None
            if detail:  # why the executor ended (the policy's done, a step budget ...)
                extra["detail"] = str(detail)[:500]
            return move(rec, CommandState.EVALUATING, "CONTROL_DONE", now, "event", **extra)
        if state in (CommandState.UNKNOWN, CommandState.RECONCILING):
            return note(rec, now, "event", "CONTROL_DONE_NOTED", True, cdone=True, **extra)
        return note(rec, now, "event", f"LATE_CONTROL_DONE_WHILE_{state.value}", False,
                    **extra)
    if kind is EventKind.ABORTED:
        reason = why or "ABORTED"
        if state in (CommandState.ACCEPTED, CommandState.RUNNING):
            return move(rec, CommandState.FAILED, reason, now, "event", **extra)
        if stopping:
            return move(rec, CommandState.CANCELED, f"ABORTED_WHILE_STOPPING: {reason}", now,
                        "event", **extra)
        if state in (CommandState.UNKNOWN, CommandState.RECONCILING):
            return move(rec, CommandState.FAILED, reason, now, "event", **extra)
        return note(rec, now, "event", f"ABORTED_WHILE_{state.value}", False, **extra)
    if kind is EventKind.STOPPED:
        if stopping:
            return move(rec, CommandState.CANCELED, "STOP_CONFIRMED", now, "event", **extra)
        if state in (CommandState.ACCEPTED, CommandState.RUNNING, CommandState.UNKNOWN,
                     CommandState.RECONCILING):
            reason = f"STOPPED_BY_RUNTIME: {why}" if why else "STOPPED_BY_RUNTIME"
            return move(rec, CommandState.FAILED, reason, now, "event", **extra)
        return note(rec, now, "event", f"STOPPED_WHILE_{state.value}", False, **extra)
    # EventKind.REJECTED: the runtime refused to start it.
    if state is CommandState.ACCEPTED:
        return move(rec, CommandState.REJECTED, f"RUNTIME_REJECTED: {why}" if why else
                    "RUNTIME_REJECTED", now, "event", **extra)
    if state is CommandState.CANCELING:
        return move(rec, CommandState.CANCELED, "NEVER_STARTED", now, "event", **extra)
    return note(rec, now, "event", f"REJECTED_WHILE_{state.value}", False, **extra)


def verdict_entry(rec: CommandRecord, verdict: Verdict | CommandState | str,
                  evidence: Sequence[Any], now: float) -> dict[str, Any]:
    """An evaluator's verdict on ``rec``: SUCCEEDED / FAILED / UNKNOWN settle EVALUATING;
    RECONCILING also takes CANCELED (the runtime confirmed the stop)."""
    cid = rec.command_id
    try:
        v = _VERDICTS.get(verdict) or Verdict(str(verdict))
    except (ValueError, TypeError):
        raise LedgerError(LedgerCode.INVALID_TRANSITION, f"verdict {verdict!r} is not one of "
                          "SUCCEEDED, FAILED, UNKNOWN, CANCELED", command_id=cid,
                          field="verdict") from None
    allowed = rec.state is CommandState.RECONCILING or (
        rec.state is CommandState.EVALUATING and v is not Verdict.CANCELED)
    if not allowed:
        raise LedgerError(
            LedgerCode.INVALID_TRANSITION,
            f"a {v.value} verdict cannot settle command {cid!r}: it is {rec.state.value}; "
            "verdicts settle EVALUATING (SUCCEEDED/FAILED/UNKNOWN) or RECONCILING (also "
            "CANCELED)", command_id=cid, details={"state": rec.state.value})
    return move(rec, _STATE_BY_VALUE[v.value], _VERDICT_REASONS[v], now, "verdict",
                ev=jsonable(list(evidence)))


def cancel_entry(rec: CommandRecord, now: float, stop_timeout_s: float) -> dict[str, Any] | None:
    """What a cancel does to ``rec`` (None: nothing, it is terminal or already stopping)."""
    state = rec.state
    if state is CommandState.ACCEPTED and rec.dispatched_at is None:
        return move(rec, CommandState.CANCELED, "NEVER_DISPATCHED", now, "cancel")
    if state in (CommandState.ACCEPTED, CommandState.RUNNING):
        return move(rec, CommandState.CANCELING, "CANCEL_REQUESTED", now, "cancel",
                    stop_deadline=now + stop_timeout_s)
    if state is CommandState.EVALUATING:
        return move(rec, CommandState.CANCELED, "CANCELED_AFTER_CONTROL_DONE", now, "cancel")
    if state in (CommandState.UNKNOWN, CommandState.RECONCILING) and not rec.stop_requested:
        return note(rec, now, "cancel", "STOP_REQUESTED", True, stop=True)
    return None


def deadline_entries(active: Iterable[CommandRecord], now: float,
                     stop_timeout_s: float) -> list[dict[str, Any]]:
    """The deadlines passed at ``now``: an ACCEPTED command past its start deadline is
    REJECTED if it was never dispatched, else CANCELING (it may have started and its events
    been lost); RUNNING past its execution timeout -> CANCELING; CANCELING past its stop
    deadline -> UNKNOWN."""
    entries: list[dict[str, Any]] = []
    for rec in active:
        state = rec.state
        if state is CommandState.ACCEPTED and now >= rec.start_deadline:
            if rec.dispatched_at is None:
                entries.append(move(rec, CommandState.REJECTED,
                                    LedgerCode.EXPIRED_COMMAND.value, now, "tick",
                                    detail="start deadline passed"))
            else:
                # Sent, but no start seen: it may be running (the event lost), so it is
                # stopped, not forgotten; its resources stay held until confirmed.
                entries.append(move(
                    rec, CommandState.CANCELING, "START_UNCONFIRMED", now, "tick",
                    stop_deadline=now + stop_timeout_s,
                    detail="dispatched, no start seen before the start deadline"))
        elif (state is CommandState.RUNNING and rec.exec_deadline is not None
              and now >= rec.exec_deadline):
            entries.append(move(rec, CommandState.CANCELING, "EXECUTION_TIMEOUT", now, "tick",
                                stop_deadline=now + stop_timeout_s))
        elif (state is CommandState.CANCELING and rec.stop_deadline is not None
              and now >= rec.stop_deadline):
            entries.append(move(rec, CommandState.UNKNOWN, "STOP_UNCONFIRMED", now, "tick"))
    return entries


class Book:
    """The ledger's state: every record by command id, the non-terminal ones, the resources
    they hold, the world version and the control epoch. Changed only by :meth:`apply`."""

    def __init__(self) -> None:
        self.records: dict[str, CommandRecord] = {}
        self.active: dict[str, CommandRecord] = {}
        self.holders: dict[str, str] = {}
        self.world_version = 0
        self.epoch = 0

    def apply(self, e: dict[str, Any]) -> tuple[CommandRecord | None, HistoryEntry | None]:
        """Apply one journal entry. Used live and on replay alike."""
        op = e["op"]
        if op == "accept":
            return self._accept(e)
        if op == "meta":
            if "world_version" in e:
                self.world_version = e["world_version"]
            if "epoch" in e:
                self.epoch = e["epoch"]
            return None, None
        if op == "forget":
            for cid in e["ids"]:
                if self.records.pop(cid, None) is not None:
                    self.active.pop(cid, None)
            return None, None
        t = e["t"]
        rec = self.records[e["id"]]
        before = rec.state
        rec._snapshot_text = None  # its snapshot line, if one was kept, is out of date
        rseq = e.get("rseq")
        if rseq is not None and rseq > rec.last_seq:
            rec.last_seq = rseq
        if "progress" in e and e.get("applied", True):
            rec.progress = e["progress"]
            rec.last_progress_at = t
        if op == "dispatch":
            rec.dispatched_at = t
            hist = HistoryEntry(e["seq"], "dispatch", before, before, "DISPATCHED", t, e["w"])
        else:
            src = e.get("src", "")
            kind = e.get("kind")
            label = src if kind is None else f"{src}:{kind}"
            if op == "note":
                if e.get("stop"):
                    rec.stop_requested = True
                if e.get("cdone"):
                    rec.control_done_seen = True
                hist = HistoryEntry(e["seq"], label, before, before, e["reason"], t, e["w"],
                                    e["applied"], rseq)
            else:  # move
                to = self._move(rec, e, before)
                ev = e.get("ev")
                hist = HistoryEntry(e["seq"], label, before, to, e["reason"], t, e["w"], True,
                                    rseq, () if ev is None else tuple(ev), e.get("detail", ""))
        rec.events.append(hist)
        return rec, hist

    def _accept(self, e: dict[str, Any]) -> tuple[CommandRecord, HistoryEntry]:
        t = e["t"]
        cmd = e["cmd"]
        if not isinstance(cmd, Command):
            cmd = Command.model_validate(cmd)  # a dict fresh from the journal
        rec = CommandRecord(command=cmd, state=CommandState.ACCEPTED, reason="ACCEPTED",
                            accepted_at=t, start_deadline=t + cmd.start_within_ms / 1000.0)
        cid = e["id"]
        self.records[cid] = rec
        self.active[cid] = rec
        for res in cmd.resources:
            self.holders[res] = cid
        hist = HistoryEntry(e["seq"], "submit", None, CommandState.ACCEPTED, "ACCEPTED", t, e["w"])
        rec.events.append(hist)
        return rec, hist

    def _move(self, rec: CommandRecord, e: dict[str, Any], before: CommandState
              ) -> CommandState:
        cid = rec.command_id
        t = e["t"]
        to = _STATE_BY_VALUE[e["to"]]
        if to not in ALLOWED[before]:
            raise LedgerError(LedgerCode.INVALID_TRANSITION,
                              f"internal: {before.value} -> {to.value} is not a ledger "
                              "transition", command_id=cid)
        rec.state = to
        rec.reason = e["reason"]
        if to is CommandState.RUNNING:
            rec.started_at = t
            rec.exec_deadline = t + rec.command.execution_timeout_ms / 1000.0
            if rec.last_progress_at is None:
                rec.last_progress_at = t
        elif to is CommandState.CANCELING:
            rec.stop_requested = True
            rec.stop_deadline = e["stop_deadline"]
        elif to is CommandState.UNKNOWN and e["src"] == "restart":
            rec.prior_state = before
        if before is CommandState.CANCELING and to is CommandState.UNKNOWN:
            rec.prior_state = before
        if "ev" in e:
            rec.evidence = tuple(e["ev"])
        if to in TERMINAL:
            rec.terminal_at = t
            self.active.pop(cid, None)
            for res in rec.command.resources:
                if self.holders.get(res) == cid:
                    del self.holders[res]
        return to


def entry_text(entry: dict[str, Any]) -> str:
    """An entry as the journal stores it: compact JSON, the command (``accept``) as its wire
    text, made once per command (:attr:`Command.wire_text`) and spliced in, not re-encoded."""
    cmd = entry.get("cmd")
    if cmd is None:
        return encode_entry(entry)
    head = encode_entry({k: v for k, v in entry.items() if k != "cmd"})
    body = cmd.wire_text if isinstance(cmd, Command) else encode_entry(cmd)
    return f'{head[:-1]},"cmd":{body}}}'


_SCALARS = (str, int, float, bool, type(None))


def jsonable(value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    return str(value)
