"""The command ledger: one record per command id, a lifecycle that never regresses, a journal.

Every public call decides what changes (the rules: :mod:`harness_bt.ledger.lifecycle`), writes
the change to the journal (when durable), applies it to memory, tells the listeners, and
returns. Replaying the journal applies the same entries, so a reopened ledger is the one that
was written, with every non-terminal command turned UNKNOWN (reason ``RESTARTED``) until it is
reconciled. Inside :meth:`Ledger.group` the journal writes of several calls (one tick's) are
committed together, at :meth:`Ledger.flush` or at the end of the group.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from harness_bt.ledger.command import Command, CommandEvent
from harness_bt.ledger.errors import LedgerCode, LedgerError, finite_seconds
from harness_bt.ledger.group import GroupCommit
from harness_bt.ledger.lifecycle import (
    Book,
    cancel_entry,
    deadline_entries,
    entry_text,
    event_entry,
    move,
    premise_problem,
    verdict_entry,
)
from harness_bt.ledger.record import CommandRecord, HistoryEntry
from harness_bt.ledger.recovery import replay
from harness_bt.ledger.sqlite_store import LedgerJournal
from harness_bt.ledger.states import CommandState, Verdict

__all__ = ["Ledger", "LedgerListener", "PremiseCheck"]

LedgerListener = Callable[[CommandRecord, HistoryEntry], None]
#: Returns None when a command's premises still hold, else the reason they do not.
PremiseCheck = Callable[[Command], str | None]


class Ledger(GroupCommit):
    """The command ledger. See the package docstring and docs/architecture.md for the rules.

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
        _journal: LedgerJournal | None = None,
    ) -> None:
        if retention_s is not None:
            finite_seconds("retention_s", retention_s)
        finite_seconds("default_stop_timeout_s", default_stop_timeout_s)
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
        self._book = Book()
        self._records = self._book.records
        self._active = self._book.active
        self._holders = self._book.holders
        self._listeners: list[LedgerListener] = []
        self._seq = 0
        self._closed = False
        self.restarted: list[str] = []
        self.snapshot_every: int | None = None
        if _journal is not None:
            self._seq = replay(self._book, _journal)

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
        snapshot_every: int | None = 5_000,
    ) -> Ledger:
        """Open (or create) a durable ledger. Reopening recovers every record in the file.

        Non-terminal records come back UNKNOWN with reason ``RESTARTED`` (their ids are listed in
        :attr:`restarted`) and keep their resources until reconciled. ``now`` is the monotonic
        time stamped on those transitions (default: ``time.monotonic()``). A reopen reads the
        newest snapshot and the entries after it; one is written on :meth:`close` and after
        every ``snapshot_every`` entries (None: only on close).
        """
        if snapshot_every is not None and (type(snapshot_every) is not int or snapshot_every < 1):
            raise LedgerError(LedgerCode.INVALID_COMMAND, f"snapshot_every={snapshot_every!r} "
                              "must be a positive int or None", field="snapshot_every")
        journal = LedgerJournal(path, synchronous=synchronous)
        try:
            ledger = cls(retention_s=retention_s, default_stop_timeout_s=default_stop_timeout_s,
                         wall_clock=wall_clock, _journal=journal)
        except BaseException:
            journal.close()
            raise
        ledger.snapshot_every = snapshot_every
        ledger._mark_restarted(time.monotonic() if now is None else now)
        return ledger

    @property
    def durable(self) -> bool:
        return self._journal is not None

    @property
    def path(self) -> str | None:
        return None if self._journal is None else self._journal.path

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
        return self._book.world_version

    @world_version.setter
    def world_version(self, value: int) -> None:
        self._set_meta(world_version=self._int("world_version", value))

    @property
    def epoch(self) -> int:
        return self._book.epoch

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
            now = finite_seconds("now", now, command.command_id)
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
            reason = premise_problem(command, epoch=self._book.epoch,
                                     world_version=self._book.world_version)
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
                        + (" (reconcile it first)" if state is CommandState.UNKNOWN else ""),
                    )
            entry = {"op": "accept", "id": command.command_id, "t": now, "cmd": command}
            self._commit([entry])
            return self._records[command.command_id]

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
            now = finite_seconds("now", now, command_id)
            if rec.state is not CommandState.ACCEPTED or rec.dispatched_at is not None:
                return rec
            reason: str | None = None
            detail = ""
            if now >= rec.start_deadline:
                reason = LedgerCode.EXPIRED_COMMAND.value
                detail = f"start deadline passed {now - rec.start_deadline:.3f} s ago"
            else:
                problem = premise_problem(rec.command, epoch=self._book.epoch,
                                          world_version=self._book.world_version)
                if problem is not None:
                    reason, detail = problem[0].value, problem[1]
                elif self.premise_check is not None:
                    why = self.premise_check(rec.command)
                    if why is not None:
                        reason, detail = "STALE_PREMISE", why
            if reason is not None:
                self._commit(
                    [move(rec, CommandState.REJECTED, reason, now, "dispatch", detail=detail)]
                )
            else:
                self._commit([{"op": "dispatch", "id": command_id, "t": now}])
            return rec

    def apply(self, event: CommandEvent, *, now: float) -> CommandRecord:
        """Apply one runtime event. Duplicates, older seqs and events the state does not allow
        are recorded (``applied=False``) and change nothing."""
        with self._lock:
            self._check_open()
            rec = self._records.get(event.command_id) or self.get(event.command_id)
            now = finite_seconds("now", now, event.command_id)
            self._commit([event_entry(rec, event, now)])
            return rec

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
            now = finite_seconds("now", now, command_id)
            self._commit([verdict_entry(rec, verdict, evidence, now)])
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
            now = finite_seconds("now", now, command_id)
            timeout = self.default_stop_timeout_s if stop_timeout_s is None else stop_timeout_s
            timeout = finite_seconds("stop_timeout_s", timeout, command_id)
            if timeout <= 0:
                raise LedgerError(
                    LedgerCode.INVALID_COMMAND,
                    f"stop_timeout_s={timeout!r} must be positive",
                    command_id=command_id,
                    field="stop_timeout_s",
                )
            entry = cancel_entry(rec, now, timeout)
            if entry is None:
                return rec
            self._commit([entry])
            return rec

    def reconcile(self, command_id: str, *, now: float, note: str = "") -> CommandRecord:
        """UNKNOWN -> RECONCILING: the runtime is being queried / the world re-observed.
        Settle it afterwards with :meth:`verdict` (or a runtime event)."""
        with self._lock:
            self._check_open()
            rec = self.get(command_id)
            now = finite_seconds("now", now, command_id)
            if rec.state is CommandState.RECONCILING:
                return rec
            if rec.state is not CommandState.UNKNOWN:
                raise LedgerError(
                    LedgerCode.INVALID_TRANSITION,
                    f"only an UNKNOWN command can be reconciled; {command_id!r} is "
                    f"{rec.state.value}",
                    command_id=command_id,
                    details={"state": rec.state.value},
                )
            self._commit([move(rec, CommandState.RECONCILING, "RECONCILING", now, "reconcile",
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
            now = finite_seconds("now", now)
            entries = deadline_entries(self._active.values(), now, self.default_stop_timeout_s)
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

    def _commit(self, entries: list[dict[str, Any]]) -> list[HistoryEntry | None]:
        """Number, journal, apply and announce entries. Nothing changes if the journal fails."""
        wall = self._wall()
        seq = self._seq
        for entry in entries:
            seq += 1
            entry["seq"] = seq
            entry["w"] = wall
        journal = self._journal
        if journal is not None:
            journal.append([(e["seq"], entry_text(e)) for e in entries])
        self._seq = seq
        apply, listeners = self._book.apply, self._listeners
        out = []
        for entry in entries:
            rec, hist = apply(entry)
            out.append(hist)
            if listeners and hist is not None and rec is not None:
                for listener in listeners:
                    listener(rec, hist)
        every = self.snapshot_every
        if (every is not None and journal is not None
                and journal.last_seq - journal.snapshot_seq >= every):
            self._after_write()
        return out

    # ------------------------------------------------------------------ durability

    def _mark_restarted(self, now: float) -> None:
        entries = [
            move(rec, CommandState.UNKNOWN, "RESTARTED", now, "restart",
                       detail=f"was {rec.state.value} when the ledger stopped")
            for rec in self._active.values()
            if rec.state not in (CommandState.UNKNOWN,)
        ]
        self.restarted = [rec.command_id for rec in self._active.values()]
        if entries:
            self._commit(entries)

    def _check_open(self) -> None:
        if self._journal is not None and self._journal.failed is not None:
            raise self._journal.failed
        if self._closed:
            raise LedgerError(
                LedgerCode.LEDGER_CLOSED, "the ledger is closed", fix="open it again"
            )

    def snapshot(self) -> dict[str, Any]:
        """Everything that identifies the ledger's state, for comparisons and tests."""
        with self._lock:
            return {
                "world_version": self._book.world_version,
                "epoch": self._book.epoch,
                "holders": dict(self._holders),
                "records": {cid: r.summary() for cid, r in self._records.items()},
            }

    def history(self, command_ids: Iterable[str] | None = None) -> list[HistoryEntry]:
        """Every history entry (of the given commands), in journal order."""
        ids = self._records.keys() if command_ids is None else command_ids
        out = [h for cid in ids for h in self.get(cid).events]
        out.sort(key=lambda h: h.seq)
        return out

