"""The command ledger: one record per command id, a lifecycle that never regresses, a journal.

Every public call decides what changes, writes the change to the journal (when durable),
applies it to memory, tells the listeners, and returns. Replaying the journal goes through the
same :meth:`Ledger._apply`, so a reopened ledger is the one that was written, with every
non-terminal command turned UNKNOWN (reason ``RESTARTED``) until it is reconciled.
"""

from __future__ import annotations

import gc
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from harness_bt.ledger.command import Command, CommandEvent
from harness_bt.ledger.errors import LedgerCode, LedgerError
from harness_bt.ledger.journal import SqliteJournal
from harness_bt.ledger.record import CommandRecord, HistoryEntry
from harness_bt.ledger.states import TERMINAL, CommandState, EventKind, Verdict

__all__ = ["Ledger", "LedgerListener", "PremiseCheck"]

S = CommandState

#: Allowed state changes. Anything else is a bug in the ledger, not in the caller.
_ALLOWED: dict[CommandState, frozenset[CommandState]] = {
    S.ACCEPTED: frozenset(
        {S.RUNNING, S.EVALUATING, S.FAILED, S.CANCELING, S.CANCELED, S.REJECTED, S.UNKNOWN}
    ),
    S.RUNNING: frozenset({S.EVALUATING, S.FAILED, S.CANCELING, S.UNKNOWN}),
    S.CANCELING: frozenset({S.CANCELED, S.UNKNOWN}),
    S.EVALUATING: frozenset({S.SUCCEEDED, S.FAILED, S.UNKNOWN, S.CANCELED}),
    S.UNKNOWN: frozenset({S.RECONCILING, S.CANCELED, S.FAILED}),
    S.RECONCILING: frozenset({S.SUCCEEDED, S.FAILED, S.CANCELED, S.UNKNOWN}),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
    S.CANCELED: frozenset(),
    S.REJECTED: frozenset(),
}

LedgerListener = Callable[[CommandRecord, HistoryEntry], None]
#: Returns None when a command's premises still hold, else the reason they do not.
PremiseCheck = Callable[[Command], str | None]

_STATE_BY_VALUE = {s.value: s for s in CommandState}


def _finite(name: str, value: float, command_id: str | None = None) -> float:
    if type(value) is float and value - value == 0.0:  # fast path: finite float
        return value
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise LedgerError(
            LedgerCode.INVALID_COMMAND,
            f"{name}={value!r} must be a finite number of seconds",
            command_id=command_id,
            field=name,
        )
    return float(value)


class Ledger:
    """The command ledger (seed 000 §4.1-4.2). See the package docstring for the rules.

    ``Ledger()`` keeps everything in memory; :meth:`Ledger.open` journals to SQLite. Times passed
    as ``now`` are monotonic seconds from the caller's clock; wall times come from
    ``wall_clock``. ``retention_s`` (default: keep for the whole run) bounds how long terminal
    records stay for deduplication. ``default_stop_timeout_s`` is the stop budget for cancels that
    the ledger starts itself (execution timeout).
    """

    def __init__(
        self,
        *,
        retention_s: float | None = None,
        default_stop_timeout_s: float = 1.0,
        wall_clock: Callable[[], float] = time.time,
        _journal: SqliteJournal | None = None,
    ) -> None:
        if retention_s is not None:
            _finite("retention_s", retention_s)
        _finite("default_stop_timeout_s", default_stop_timeout_s)
        if default_stop_timeout_s <= 0:
            raise LedgerError(
                LedgerCode.INVALID_COMMAND,
                f"default_stop_timeout_s={default_stop_timeout_s!r} must be positive",
                field="default_stop_timeout_s",
            )
        self.retention_s = retention_s
        self.default_stop_timeout_s = float(default_stop_timeout_s)
        self.premise_check: PremiseCheck | None = None
        self._wall = wall_clock
        self._journal = _journal
        self._lock = threading.RLock()
        self._records: dict[str, CommandRecord] = {}
        self._active: dict[str, CommandRecord] = {}
        self._holders: dict[str, str] = {}
        self._listeners: list[LedgerListener] = []
        self._world_version = 0
        self._epoch = 0
        self._seq = 0
        self._closed = False
        self.restarted: list[str] = []
        if _journal is not None:
            self._replay(_journal)

    # ------------------------------------------------------------------ construction

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        retention_s: float | None = None,
        default_stop_timeout_s: float = 1.0,
        wall_clock: Callable[[], float] = time.time,
        synchronous: str = "NORMAL",
        now: float | None = None,
    ) -> Ledger:
        """Open (or create) a durable ledger. Reopening recovers every record in the file.

        Non-terminal records come back UNKNOWN with reason ``RESTARTED`` (their ids are listed in
        :attr:`restarted`) and keep their resources until reconciled. ``now`` is the monotonic
        time stamped on those transitions (default: ``time.monotonic()``).
        """
        journal = SqliteJournal(path, synchronous=synchronous)
        ledger = cls(
            retention_s=retention_s,
            default_stop_timeout_s=default_stop_timeout_s,
            wall_clock=wall_clock,
            _journal=journal,
        )
        ledger._mark_restarted(time.monotonic() if now is None else now)
        return ledger

    @property
    def durable(self) -> bool:
        return self._journal is not None

    @property
    def path(self) -> str | None:
        return None if self._journal is None else self._journal.path

    def close(self) -> None:
        """Close the journal. Further calls raise ``LEDGER_CLOSED``."""
        with self._lock:
            self._closed = True
            if self._journal is not None:
                self._journal.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_listener(self, listener: LedgerListener) -> None:
        """Call ``listener(record, entry)`` after every history entry (trace, live view)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: LedgerListener) -> None:
        self._listeners.remove(listener)

    # ------------------------------------------------------------------ reading

    def get(self, command_id: str) -> CommandRecord:
        rec = self._records.get(command_id)
        if rec is None:
            raise LedgerError(
                LedgerCode.UNKNOWN_COMMAND,
                f"no command {command_id!r} in the ledger",
                command_id=command_id,
                fix="submit it first (or it was dropped after the retention period)",
            )
        return rec

    def find(self, command_id: str) -> CommandRecord | None:
        return self._records.get(command_id)

    def __contains__(self, command_id: object) -> bool:
        return command_id in self._records

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[CommandRecord]:
        return iter(list(self._records.values()))

    def records(self) -> list[CommandRecord]:
        return list(self._records.values())

    def active(self) -> list[CommandRecord]:
        """Non-terminal records (UNKNOWN and RECONCILING included)."""
        return list(self._active.values())

    def holder(self, resource: str) -> CommandRecord | None:
        """The non-terminal command holding ``resource``, if any."""
        cid = self._holders.get(resource)
        return None if cid is None else self._records[cid]

    def held_resources(self) -> dict[str, str]:
        return dict(self._holders)

    @property
    def world_version(self) -> int:
        return self._world_version

    @world_version.setter
    def world_version(self, value: int) -> None:
        self._set_meta(world_version=self._int("world_version", value))

    @property
    def epoch(self) -> int:
        return self._epoch

    @epoch.setter
    def epoch(self, value: int) -> None:
        self._set_meta(epoch=self._int("epoch", value))

    @staticmethod
    def _int(name: str, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise LedgerError(
                LedgerCode.INVALID_COMMAND, f"{name}={value!r} must be an int", field=name
            )
        return value

    def _set_meta(self, **fields: int) -> None:
        with self._lock:
            self._commit([{"op": "meta", "t": None, **fields}])

    # ------------------------------------------------------------------ commands

    def submit(self, command: Command, *, now: float) -> CommandRecord:
        """Accept a command, or return the original record for a resend of the same command.

        Raises :class:`LedgerError` with code COMMAND_ID_CONFLICT, INVALID_COMMAND, STALE_EPOCH,
        STALE_WORLD, EXPIRED_COMMAND or RESOURCE_BUSY. A refused command leaves no record.
        """
        with self._lock:
            self._check_open()
            old = self._records.get(command.command_id)
            if old is not None:
                if old.command is command or old.command.digest == command.digest:
                    return old
                raise LedgerError(
                    LedgerCode.COMMAND_ID_CONFLICT,
                    f"command id {command.command_id!r} is already used by a command with "
                    f"different content (digest {old.command.digest[:12]} vs "
                    f"{command.digest[:12]})",
                    command_id=command.command_id,
                    fix="a changed command needs a new id (ids include the attempt number)",
                )
            now = _finite("now", now, command.command_id)
            problems = command.problems()
            if problems:
                field, message = problems[0]
                more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
                raise LedgerError(
                    LedgerCode.INVALID_COMMAND,
                    f"{field} {message}{more}",
                    command_id=command.command_id,
                    field=field,
                    details={"problems": [f"{f} {m}" for f, m in problems]},
                )
            reason = self._premise_problem(command)
            if reason is not None:
                code, message = reason
                raise LedgerError(code, message, command_id=command.command_id)
            if command.start_within_ms <= 0:
                raise LedgerError(
                    LedgerCode.EXPIRED_COMMAND,
                    f"start_within_ms={command.start_within_ms!r}: no start budget left",
                    command_id=command.command_id,
                    field="start_within_ms",
                    fix="re-plan and issue a new command",
                )
            for res in command.resources:
                holder = self._holders.get(res)
                if holder is not None:
                    state = self._records[holder].state
                    raise LedgerError(
                        LedgerCode.RESOURCE_BUSY,
                        f"resource {res!r} is held by command {holder!r} ({state.value})",
                        command_id=command.command_id,
                        details={"resource": res, "holder": holder, "holder_state": state.value},
                        fix="wait until it is terminal"
                        + (" (reconcile it first)" if state is S.UNKNOWN else ""),
                    )
            entry = {"op": "accept", "id": command.command_id, "t": now, "cmd": command}
            self._commit([entry])
            return self._records[command.command_id]

    def _premise_problem(self, command: Command) -> tuple[LedgerCode, str] | None:
        if command.epoch < self._epoch:
            return (
                LedgerCode.STALE_EPOCH,
                f"command epoch {command.epoch} is older than the ledger's epoch {self._epoch}; "
                "a newer controller has taken over",
            )
        if command.world_version < self._world_version:
            return (
                LedgerCode.STALE_WORLD,
                f"command planned on world version {command.world_version}, the world is now at "
                f"{self._world_version}",
            )
        return None

    def dispatch(self, command_id: str, *, now: float) -> CommandRecord:
        """The last re-check before a command is sent to a runtime.

        An ACCEPTED command whose start deadline passed, whose world version or epoch is stale,
        or whose premises no longer hold (``premise_check``) becomes REJECTED with the reason.
        Otherwise it is marked dispatched; a second dispatch changes nothing. Send it to the
        runtime only when the returned record is ACCEPTED.
        """
        with self._lock:
            self._check_open()
            rec = self.get(command_id)
            now = _finite("now", now, command_id)
            if rec.state is not S.ACCEPTED or rec.dispatched_at is not None:
                return rec
            reason: str | None = None
            detail = ""
            if now >= rec.start_deadline:
                reason = LedgerCode.EXPIRED_COMMAND.value
                detail = f"start deadline passed {now - rec.start_deadline:.3f} s ago"
            else:
                problem = self._premise_problem(rec.command)
                if problem is not None:
                    reason, detail = problem[0].value, problem[1]
                elif self.premise_check is not None:
                    why = self.premise_check(rec.command)
                    if why is not None:
                        reason, detail = "STALE_PREMISE", why
            if reason is not None:
                self._commit(
                    [self._move(rec, S.REJECTED, reason, now, "dispatch", detail=detail)]
                )
            else:
                self._commit([{"op": "dispatch", "id": command_id, "t": now}])
            return rec

    def apply(self, event: CommandEvent, *, now: float) -> CommandRecord:
        """Apply one runtime event. Duplicates, older seqs and events the state does not allow
        are recorded (``applied=False``) and change nothing."""
        with self._lock:
            self._check_open()
            rec = self.get(event.command_id)
            now = _finite("now", now, event.command_id)
            self._commit([self._event_entry(rec, event, now)])
            return rec

    def _event_entry(self, rec: CommandRecord, ev: CommandEvent, now: float) -> dict[str, Any]:
        kind = cast(EventKind, ev.kind)  # CommandEvent normalises kind to EventKind
        state = rec.state
        extra: dict[str, Any] = {"rseq": ev.seq, "kind": kind.value}
        if ev.progress is not None:
            extra["progress"] = ev.progress
        if ev.seq <= rec.last_seq:
            return self._note(rec, now, "event", "DUPLICATE_OR_STALE_SEQ", False, **extra)
        if state in TERMINAL:
            return self._note(rec, now, "event", f"LATE_AFTER_{state.value}", False, **extra)
        why = ev.reason
        if kind is EventKind.STARTED:
            if state is S.ACCEPTED:
                return self._move(rec, S.RUNNING, "STARTED", now, "event", **extra)
            return self._note(rec, now, "event", f"STARTED_WHILE_{state.value}", False, **extra)
        if kind is EventKind.PROGRESS:
            if state is S.ACCEPTED:
                return self._move(rec, S.RUNNING, "IMPLICIT_START", now, "event", **extra)
            if state is S.EVALUATING:
                return self._note(rec, now, "event", "PROGRESS_AFTER_CONTROL_DONE", False, **extra)
            return self._note(rec, now, "event", "PROGRESS", True, **extra)
        if kind is EventKind.CONTROL_DONE:
            if state in (S.ACCEPTED, S.RUNNING):
                return self._move(rec, S.EVALUATING, "CONTROL_DONE", now, "event", **extra)
            if state in (S.UNKNOWN, S.RECONCILING):
                return self._note(rec, now, "event", "CONTROL_DONE_NOTED", True, cdone=True,
                                  **extra)
            return self._note(rec, now, "event", f"LATE_CONTROL_DONE_WHILE_{state.value}", False,
                              **extra)
        if kind is EventKind.ABORTED:
            reason = why or "ABORTED"
            if state in (S.ACCEPTED, S.RUNNING):
                return self._move(rec, S.FAILED, reason, now, "event", **extra)
            if state is S.CANCELING or (state in (S.UNKNOWN, S.RECONCILING) and rec.stop_requested):
                return self._move(rec, S.CANCELED, f"ABORTED_WHILE_STOPPING: {reason}", now,
                                  "event", **extra)
            if state in (S.UNKNOWN, S.RECONCILING):
                return self._move(rec, S.FAILED, reason, now, "event", **extra)
            return self._note(rec, now, "event", f"ABORTED_WHILE_{state.value}", False, **extra)
        if kind is EventKind.STOPPED:
            if state is S.CANCELING or (state in (S.UNKNOWN, S.RECONCILING) and rec.stop_requested):
                return self._move(rec, S.CANCELED, "STOP_CONFIRMED", now, "event", **extra)
            if state in (S.ACCEPTED, S.RUNNING, S.UNKNOWN, S.RECONCILING):
                reason = f"STOPPED_BY_RUNTIME: {why}" if why else "STOPPED_BY_RUNTIME"
                return self._move(rec, S.FAILED, reason, now, "event", **extra)
            return self._note(rec, now, "event", f"STOPPED_WHILE_{state.value}", False, **extra)
        # EventKind.REJECTED: the runtime refused to start it.
        if state is S.ACCEPTED:
            return self._move(rec, S.REJECTED, f"RUNTIME_REJECTED: {why}" if why else
                              "RUNTIME_REJECTED", now, "event", **extra)
        if state is S.CANCELING:
            return self._move(rec, S.CANCELED, "NEVER_STARTED", now, "event", **extra)
        return self._note(rec, now, "event", f"REJECTED_WHILE_{state.value}", False, **extra)

    def verdict(
        self,
        command_id: str,
        verdict: Verdict | CommandState | str,
        *,
        evidence: Sequence[Any] = (),
        now: float,
    ) -> CommandRecord:
        """Settle an EVALUATING or RECONCILING command with an evaluator's verdict.

        SUCCEEDED / FAILED / UNKNOWN settle EVALUATING; RECONCILING also takes CANCELED (the
        runtime confirmed the stop). ``evidence`` (JSON-ready items) is kept on the record.
        """
        with self._lock:
            self._check_open()
            rec = self.get(command_id)
            now = _finite("now", now, command_id)
            try:
                v = Verdict(str(verdict))
            except ValueError:
                raise LedgerError(
                    LedgerCode.INVALID_TRANSITION,
                    f"verdict {verdict!r} is not one of SUCCEEDED, FAILED, UNKNOWN, CANCELED",
                    command_id=command_id,
                    field="verdict",
                ) from None
            allowed = rec.state is S.RECONCILING or (
                rec.state is S.EVALUATING and v is not Verdict.CANCELED
            )
            if not allowed:
                raise LedgerError(
                    LedgerCode.INVALID_TRANSITION,
                    f"a {v.value} verdict cannot settle command {command_id!r}: it is "
                    f"{rec.state.value}; verdicts settle EVALUATING (SUCCEEDED/FAILED/UNKNOWN) "
                    "or RECONCILING (also CANCELED)",
                    command_id=command_id,
                    details={"state": rec.state.value},
                )
            reason = {
                Verdict.SUCCEEDED: "POSTCONDITION_CONFIRMED",
                Verdict.FAILED: "POSTCONDITION_NOT_MET",
                Verdict.UNKNOWN: "EVIDENCE_INSUFFICIENT",
                Verdict.CANCELED: "STOP_CONFIRMED_BY_QUERY",
            }[v]
            to = _STATE_BY_VALUE[v.value]
            self._commit(
                [self._move(rec, to, reason, now, "verdict", ev=_jsonable(list(evidence)))]
            )
            return rec

    def cancel(
        self, command_id: str, *, now: float, stop_timeout_s: float | None = None
    ) -> CommandRecord:
        """Ask for a command to stop.

        ACCEPTED and never dispatched -> CANCELED at once; dispatched or RUNNING -> CANCELING
        with a stop deadline of ``now + stop_timeout_s`` (a repeated cancel never extends it);
        EVALUATING (control already done) -> CANCELED; UNKNOWN / RECONCILING remember that a stop
        was requested, so a later stop confirmation settles them CANCELED. Terminal: no change.
        Tell the runtime to stop when the returned record is CANCELING.
        """
        with self._lock:
            self._check_open()
            rec = self.get(command_id)
            now = _finite("now", now, command_id)
            timeout = self.default_stop_timeout_s if stop_timeout_s is None else stop_timeout_s
            timeout = _finite("stop_timeout_s", timeout, command_id)
            if timeout <= 0:
                raise LedgerError(
                    LedgerCode.INVALID_COMMAND,
                    f"stop_timeout_s={timeout!r} must be positive",
                    command_id=command_id,
                    field="stop_timeout_s",
                )
            state = rec.state
            if state is S.ACCEPTED and rec.dispatched_at is None:
                entry = self._move(rec, S.CANCELED, "NEVER_DISPATCHED", now, "cancel")
            elif state in (S.ACCEPTED, S.RUNNING):
                entry = self._move(rec, S.CANCELING, "CANCEL_REQUESTED", now, "cancel",
                                   stop_deadline=now + timeout)
            elif state is S.EVALUATING:
                entry = self._move(rec, S.CANCELED, "CANCELED_AFTER_CONTROL_DONE", now, "cancel")
            elif state in (S.UNKNOWN, S.RECONCILING) and not rec.stop_requested:
                entry = self._note(rec, now, "cancel", "STOP_REQUESTED", True, stop=True)
            else:
                return rec
            self._commit([entry])
            return rec

    def reconcile(self, command_id: str, *, now: float, note: str = "") -> CommandRecord:
        """UNKNOWN -> RECONCILING: the runtime is being queried / the world re-observed.
        Settle it afterwards with :meth:`verdict` (or a runtime event)."""
        with self._lock:
            self._check_open()
            rec = self.get(command_id)
            now = _finite("now", now, command_id)
            if rec.state is S.RECONCILING:
                return rec
            if rec.state is not S.UNKNOWN:
                raise LedgerError(
                    LedgerCode.INVALID_TRANSITION,
                    f"only an UNKNOWN command can be reconciled; {command_id!r} is "
                    f"{rec.state.value}",
                    command_id=command_id,
                    details={"state": rec.state.value},
                )
            self._commit([self._move(rec, S.RECONCILING, "RECONCILING", now, "reconcile",
                                     detail=note)])
            return rec

    def tick(self, *, now: float) -> list[HistoryEntry]:
        """Enforce deadlines at ``now`` and return the transitions it made.

        ACCEPTED past its start deadline -> REJECTED (EXPIRED_COMMAND) if it was never
        dispatched, else CANCELING (START_UNCONFIRMED: it may have started and its events been
        lost, so tell the runtime to stop; resources stay held); RUNNING past its
        execution timeout -> CANCELING (EXECUTION_TIMEOUT: tell the runtime to stop); CANCELING
        past its stop deadline -> UNKNOWN (STOP_UNCONFIRMED). Terminal records older than the
        retention are dropped.
        """
        with self._lock:
            self._check_open()
            now = _finite("now", now)
            entries: list[dict[str, Any]] = []
            for rec in self._active.values():
                state = rec.state
                if state is S.ACCEPTED and now >= rec.start_deadline:
                    if rec.dispatched_at is None:
                        entries.append(self._move(rec, S.REJECTED,
                                                  LedgerCode.EXPIRED_COMMAND.value, now, "tick",
                                                  detail="start deadline passed"))
                    else:
                        # Sent, but no start seen: it may be running (the event lost), so it is
                        # stopped, not forgotten; its resources stay held until confirmed.
                        entries.append(self._move(
                            rec, S.CANCELING, "START_UNCONFIRMED", now, "tick",
                            stop_deadline=now + self.default_stop_timeout_s,
                            detail="dispatched, no start seen before the start deadline"))
                elif (state is S.RUNNING and rec.exec_deadline is not None
                      and now >= rec.exec_deadline):
                    entries.append(self._move(rec, S.CANCELING, "EXECUTION_TIMEOUT", now, "tick",
                                              stop_deadline=now + self.default_stop_timeout_s))
                elif (state is S.CANCELING and rec.stop_deadline is not None
                      and now >= rec.stop_deadline):
                    entries.append(self._move(rec, S.UNKNOWN, "STOP_UNCONFIRMED", now, "tick"))
            if self.retention_s is not None:
                horizon = now - self.retention_s
                old = [
                    cid for cid, r in self._records.items()
                    if r.terminal_at is not None and r.terminal_at <= horizon
                ]
                if old:
                    entries.append({"op": "forget", "t": now, "ids": old})
            if not entries:
                return []
            return [h for h in self._commit(entries) if h is not None]

    # ------------------------------------------------------------------ entries

    @staticmethod
    def _move(rec: CommandRecord, to: CommandState, reason: str, now: float, src: str,
              **extra: Any) -> dict[str, Any]:
        entry = {"op": "move", "id": rec.command.command_id, "t": now, "to": to.value,
                 "reason": reason, "src": src}
        entry.update(extra)
        return entry

    @staticmethod
    def _note(rec: CommandRecord, now: float, src: str, reason: str, applied: bool,
              **extra: Any) -> dict[str, Any]:
        entry = {"op": "note", "id": rec.command.command_id, "t": now, "reason": reason,
                 "src": src, "applied": applied}
        entry.update(extra)
        return entry

    def _commit(self, entries: list[dict[str, Any]]) -> list[HistoryEntry | None]:
        """Number, journal, apply and announce entries. Nothing changes if the journal fails."""
        wall = self._wall()
        seq = self._seq
        for entry in entries:
            seq += 1
            entry["seq"] = seq
            entry["w"] = wall
        if self._journal is not None:
            self._journal.append([_to_json(e) for e in entries])
        self._seq = seq
        out = []
        for entry in entries:
            rec, hist = self._apply(entry)
            out.append(hist)
            if hist is not None and rec is not None:
                for listener in self._listeners:
                    listener(rec, hist)
        return out

    def _apply(self, e: dict[str, Any]) -> tuple[CommandRecord | None, HistoryEntry | None]:
        """Apply one journal entry to memory. Used live and on replay alike."""
        op = e["op"]
        t = e["t"]
        if op == "meta":
            if "world_version" in e:
                self._world_version = e["world_version"]
            if "epoch" in e:
                self._epoch = e["epoch"]
            return None, None
        if op == "forget":
            for cid in e["ids"]:
                rec = self._records.pop(cid, None)
                if rec is not None:
                    self._active.pop(cid, None)
            return None, None
        cid = e["id"]
        if op == "accept":
            cmd = e["cmd"]
            if not isinstance(cmd, Command):
                cmd = Command.from_wire(cmd)
            rec = CommandRecord(
                command=cmd,
                state=S.ACCEPTED,
                reason="ACCEPTED",
                accepted_at=t,
                start_deadline=t + cmd.start_within_ms / 1000.0,
            )
            self._records[cid] = rec
            self._active[cid] = rec
            for res in cmd.resources:
                self._holders[res] = cid
            hist = HistoryEntry(e["seq"], "submit", None, S.ACCEPTED, "ACCEPTED", t, e["w"])
            rec.events.append(hist)
            return rec, hist
        rec = self._records[cid]
        before = rec.state
        rseq = e.get("rseq")
        if rseq is not None and rseq > rec.last_seq:
            rec.last_seq = rseq
        if "progress" in e and e.get("applied", True):
            rec.progress = e["progress"]
            rec.last_progress_at = t
        if op == "dispatch":
            rec.dispatched_at = t
            hist = HistoryEntry(e["seq"], "dispatch", before, before, "DISPATCHED", t, e["w"])
        elif op == "note":
            if e.get("stop"):
                rec.stop_requested = True
            if e.get("cdone"):
                rec.control_done_seen = True
            src = e["src"]
            hist = HistoryEntry(
                e["seq"], f"{src}:{e['kind']}" if "kind" in e else src, before, before,
                e["reason"], t, e["w"], applied=e["applied"], runtime_seq=rseq,
            )
        else:  # move
            to = _STATE_BY_VALUE[e["to"]]
            if to not in _ALLOWED[before]:
                raise LedgerError(
                    LedgerCode.INVALID_TRANSITION,
                    f"internal: {before.value} -> {to.value} is not a ledger transition",
                    command_id=cid,
                )
            rec.state = to
            rec.reason = e["reason"]
            if to is S.RUNNING:
                rec.started_at = t
                rec.exec_deadline = t + rec.command.execution_timeout_ms / 1000.0
                if rec.last_progress_at is None:
                    rec.last_progress_at = t
            elif to is S.CANCELING:
                rec.stop_requested = True
                rec.stop_deadline = e["stop_deadline"]
            elif to is S.UNKNOWN and e["src"] == "restart":
                rec.prior_state = before
            if before is S.CANCELING and to is S.UNKNOWN:
                rec.prior_state = before
            if "ev" in e:
                rec.evidence = tuple(e["ev"])
            if to in TERMINAL:
                rec.terminal_at = t
                self._active.pop(cid, None)
                for res in rec.command.resources:
                    if self._holders.get(res) == cid:
                        del self._holders[res]
            src = e["src"]
            hist = HistoryEntry(
                e["seq"], f"{src}:{e['kind']}" if "kind" in e else src, before, to,
                e["reason"], t, e["w"], runtime_seq=rseq, evidence=tuple(e.get("ev", ())),
                detail=e.get("detail", ""),
            )
        rec.events.append(hist)
        return rec, hist

    # ------------------------------------------------------------------ durability

    def _replay(self, journal: SqliteJournal) -> None:
        # Replay allocates only acyclic objects; pausing the cyclic collector saves the repeated
        # full-heap passes that would otherwise dominate the reopen of a long journal.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            for seq, entry in journal.read():
                self._apply(entry)
                self._seq = seq
        finally:
            if was_enabled:
                gc.enable()

    def _mark_restarted(self, now: float) -> None:
        entries = [
            self._move(rec, S.UNKNOWN, "RESTARTED", now, "restart",
                       detail=f"was {rec.state.value} when the ledger stopped")
            for rec in self._active.values()
            if rec.state not in (S.UNKNOWN,)
        ]
        self.restarted = [rec.command_id for rec in self._active.values()]
        if entries:
            self._commit(entries)

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError(
                LedgerCode.LEDGER_CLOSED, "the ledger is closed", fix="open it again"
            )

    def snapshot(self) -> dict[str, Any]:
        """Everything that identifies the ledger's state, for comparisons and tests."""
        with self._lock:
            return {
                "world_version": self._world_version,
                "epoch": self._epoch,
                "holders": dict(self._holders),
                "records": {cid: r.summary() for cid, r in self._records.items()},
            }

    def history(self, command_ids: Iterable[str] | None = None) -> list[HistoryEntry]:
        """Every history entry (of the given commands), in journal order."""
        ids = self._records.keys() if command_ids is None else command_ids
        out = [h for cid in ids for h in self.get(cid).events]
        out.sort(key=lambda h: h.seq)
        return out


def _to_json(entry: dict[str, Any]) -> dict[str, Any]:
    cmd = entry.get("cmd")
    if isinstance(cmd, Command):
        entry = dict(entry)
        entry["cmd"] = cmd.to_wire()
    return entry


_SCALARS = (str, int, float, bool, type(None))


def _jsonable(value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    return str(value)
