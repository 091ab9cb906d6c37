"""Snapshots of the ledger's state, so that a reopen reads the newest snapshot plus the tail of
the journal written after it instead of replaying every entry.

A snapshot is the :class:`~harness_bt.ledger.lifecycle.Book` at one journal sequence number,
as compact JSON (positional arrays, one per record and per history entry) with its sha256. It is
a cache of the journal, never a second source of truth: the journal keeps every entry, and a
snapshot that does not check out (another format, a digest that does not match, a seq past the
journal's end) is ignored with a warning and the journal is replayed from the start.

The snapshot is written by the ledger itself from records it validated when they were accepted,
and the digest only guards against a damaged file; loading still validates every
:class:`~harness_bt.ledger.command.Command` (all of them in one pydantic call). Nothing here
unpickles anything.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from harness_bt.ledger.command import Command
from harness_bt.ledger.lifecycle import Book
from harness_bt.ledger.record import CommandRecord, HistoryEntry
from harness_bt.ledger.sqlite_store import decode_json
from harness_bt.ledger.states import TERMINAL, CommandState

__all__ = ["SNAPSHOT_FORMAT", "SnapshotMismatch", "dump_book", "load_book"]

SNAPSHOT_FORMAT = 1
_STATE = {s.value: s for s in CommandState}
_DUMPS = json.JSONEncoder(separators=(",", ":")).encode  # json, not orjson: NaN evidence
_FIELDS = tuple(Command.model_fields)
_COMMANDS = TypeAdapter(list[Command])


class SnapshotMismatch(ValueError):
    """A stored snapshot cannot be used (the journal is replayed instead)."""


def _hist(h: HistoryEntry) -> list[Any]:
    return [h.seq, h.op, None if h.state_before is None else h.state_before.value,
            h.state_after.value, h.reason, h.mono, h.wall, h.applied, h.runtime_seq,
            list(h.evidence), h.detail]


def _record(r: CommandRecord) -> list[Any]:
    wire = r.command.wire
    return [[wire[f] for f in _FIELDS], r.state.value, r.reason, r.accepted_at, r.start_deadline,
            r.dispatched_at, r.started_at, r.exec_deadline, r.stop_requested, r.stop_deadline,
            r.terminal_at, r.last_seq, r.progress, r.last_progress_at, r.control_done_seen,
            None if r.prior_state is None else r.prior_state.value, list(r.evidence),
            _history_text(r)]


def _history_text(r: CommandRecord) -> str:
    raw = r._raw if isinstance(r, SnapshotRecord) else None
    if raw is not None:
        return raw
    events = r.events
    return _encode([_hist(h) for h in events], all(_exact(h.evidence) for h in events))


def _exact(value: Any) -> bool:
    """Whether orjson writes ``value`` as json would: no NaN or infinity (orjson: null)."""
    if type(value) is float:
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_exact(v) for v in value)
    if isinstance(value, dict):
        return all(_exact(v) for v in value.values())
    return True


def _encode(value: Any, exact: bool) -> str:
    """orjson where it writes what json would, else json (which keeps NaN as NaN)."""
    if exact:
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # an integer past 64 bits
            pass
    return _DUMPS(value)


def _history(raw: str) -> list[HistoryEntry]:
    state, hist = _STATE, HistoryEntry
    return [hist(s, op, None if b is None else state[b], state[a], why, mono, wall, applied,
                 rseq, tuple(hev), detail)
            for s, op, b, a, why, mono, wall, applied, rseq, hev, detail in decode_json(raw)]


class SnapshotRecord(CommandRecord):
    """A record loaded from a snapshot: its history (most records' history is never read
    again) stays JSON text until :attr:`events` is first used."""

    __slots__ = ("_raw",)

    def __init__(self, *args: Any, raw: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._raw: str | None = raw

    @property
    def events(self) -> list[HistoryEntry]:
        raw = self._raw
        if raw is not None:
            self._raw = None
            _EVENTS.__set__(self, _history(raw))
        return _EVENTS.__get__(self)

    @events.setter
    def events(self, value: list[HistoryEntry]) -> None:
        self._raw = None
        _EVENTS.__set__(self, value)


_EVENTS: Any = CommandRecord.__dict__["events"]  # the slot under the property


def dump_book(book: Book, seq: int) -> tuple[str, str]:
    """The book as it stands after journal entry ``seq``: ``(body, sha256 of body)``."""
    records = book.records.values()
    body = _encode({
        "format": SNAPSHOT_FORMAT, "seq": seq, "world_version": book.world_version,
        "epoch": book.epoch, "holders": book.holders, "fields": _FIELDS,
        "records": [_record(r) for r in records],
    }, all(_exact(r.evidence) for r in records))
    return body, hashlib.sha256(body.encode()).hexdigest()


def load_book(book: Book, body: str, digest: str, *, last_seq: int) -> int:
    """Fill the empty ``book`` from a snapshot; returns the journal seq it stands at.

    Raises :class:`SnapshotMismatch` (the book untouched) when the snapshot cannot be used."""
    if hashlib.sha256(body.encode()).hexdigest() != digest:
        raise SnapshotMismatch("its sha256 does not match its content")
    try:
        data = decode_json(body)
    except ValueError as exc:
        raise SnapshotMismatch(f"it is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        fmt = data.get("format") if isinstance(data, dict) else None
        raise SnapshotMismatch(f"it is of format {fmt!r}, this version reads {SNAPSHOT_FORMAT}")
    seq = data["seq"]
    if not isinstance(seq, int) or not 0 <= seq <= last_seq:
        raise SnapshotMismatch(f"it stands at seq {seq!r}, the journal ends at {last_seq}")
    if data.get("fields") != list(_FIELDS):
        raise SnapshotMismatch("its commands have other fields than this version's")
    state = _STATE
    records: dict[str, CommandRecord] = {}
    active: dict[str, CommandRecord] = {}
    try:
        rows = data["records"]
        commands = _COMMANDS.validate_python([dict(zip(_FIELDS, r[0], strict=True))
                                              for r in rows])
        for cmd, (_, st, reason, acc, sdl, disp, started, edl, stop_req, stop_dl, term, lseq,
             prog, lprog, cdone, prior, ev, events) in zip(commands, rows, strict=True):
            if not isinstance(events, str):
                raise TypeError(f"history {events!r:.50} is not JSON text")
            rec = SnapshotRecord(
                command=cmd, state=state[st], reason=reason, accepted_at=acc,
                start_deadline=sdl, dispatched_at=disp, started_at=started, exec_deadline=edl,
                stop_requested=stop_req, stop_deadline=stop_dl, terminal_at=term, last_seq=lseq,
                progress=prog, last_progress_at=lprog, control_done_seen=cdone,
                prior_state=None if prior is None else state[prior], evidence=tuple(ev),
                raw=events)
            records[cmd.command_id] = rec
            if rec.state not in TERMINAL:
                active[cmd.command_id] = rec
        holders = {str(k): str(v) for k, v in data["holders"].items()}
        world_version, epoch = int(data["world_version"]), int(data["epoch"])
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise SnapshotMismatch(f"its content does not read as a ledger: {exc!r}") from None
    book.records.update(records)
    book.active.update(active)
    book.holders.update(holders)
    book.world_version, book.epoch = world_version, epoch
    return seq
