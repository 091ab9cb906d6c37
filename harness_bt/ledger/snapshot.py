"""Snapshots of the ledger's state, so that a reopen reads the newest snapshot plus the tail of
the journal written after it instead of replaying every entry.

A snapshot is the :class:`~harness_bt.ledger.lifecycle.Book` at one journal sequence number,
as text with its sha256: a header line (JSON: format, seq, world version, epoch, the resources
held, every command id and which records are not terminal), then one line per record (a compact
JSON array: the command as the object the journal holds (its wire text, made once per command,
spliced in as is), the record's fields, its history). It is a cache of the
journal, never a second source of truth: the journal keeps every entry, and a snapshot that does
not check out (another format, a digest that does not match, a seq past the journal's end, a line
count that does not match its ids) is ignored with a warning and the journal is replayed from the
start.

Loading is lazy: a record (a :class:`SnapshotRecord`) keeps its line as text and is built the
first time anything of it is read or changed (its command validated by pydantic then); the
records still open are built at once. Most records of a long run are terminal and never read
again, so a reopen costs the parse of the header and a split of the text into lines, and a
snapshot written later copies an unread record's line as it is. Nothing here unpickles anything.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from harness_bt.ledger.command import Command
from harness_bt.ledger.errors import LedgerCode, LedgerError
from harness_bt.ledger.lifecycle import Book
from harness_bt.ledger.record import CommandRecord, HistoryEntry
from harness_bt.ledger.sqlite_store import decode_json
from harness_bt.ledger.states import TERMINAL, CommandState

__all__ = ["CHUNK_RECORDS", "SNAPSHOT_FORMAT", "Chunk", "Dump", "SnapshotMismatch", "dump_book",
           "load_book"]

SNAPSHOT_FORMAT = 3  # 3: lines in chunks, the command as its wire object (2: one body)
_STATE = {s.value: s for s in CommandState}
_DUMPS = json.JSONEncoder(separators=(",", ":")).encode  # json, not orjson: NaN evidence
_FIELDS = tuple(Command.model_fields)
_NEW = object.__new__
_BUILDING = threading.Lock()
_SET = object.__setattr__


class SnapshotMismatch(ValueError):
    """A stored snapshot cannot be used (the journal is replayed instead)."""


def _hist(h: HistoryEntry) -> list[Any]:
    return [h.seq, h.op, None if h.state_before is None else h.state_before.value,
            h.state_after.value, h.reason, h.mono, h.wall, h.applied, h.runtime_seq,
            list(h.evidence), h.detail]


def _line(r: CommandRecord) -> str:
    """One record as its snapshot line (an unbuilt :class:`SnapshotRecord`: its own line; a
    terminal record: the line kept from the last snapshot, when nothing changed since)."""
    if type(r) is SnapshotRecord:
        line = _SnapshotLine.__get__(r)
        if line is not None:
            return line
    text = r._snapshot_text
    if text is not None:
        return text
    events = r.events
    row = [r.state.value, r.reason, r.accepted_at,
           r.start_deadline, r.dispatched_at, r.started_at, r.exec_deadline, r.stop_requested,
           r.stop_deadline, r.terminal_at, r.last_seq, r.progress, r.last_progress_at,
           r.control_done_seen, None if r.prior_state is None else r.prior_state.value,
           list(r.evidence), [_hist(h) for h in events]]
    rest = _encode(row, _exact(r.evidence) and all(_exact(h.evidence) for h in events))
    # the command first, as the text the journal holds (made once per command): not encoded
    text = f"[{r.command.wire_text},{rest[1:]}"
    if r.state in TERMINAL:
        r._snapshot_text = text
    return text


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


class SnapshotRecord(CommandRecord):
    """A record loaded from a snapshot, built from its line the first time any field of it is
    read or set (see the module docstring)."""

    __slots__ = ("_line",)

    def __getattr__(self, name: str) -> Any:  # only for a field not set yet: build them all
        _build(self)  # (nothing when built: then the name is not an attribute at all)
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if _SnapshotLine.__get__(self) is not None:
            _build(self)
        _SET(self, name, value)


_SnapshotLine: Any = SnapshotRecord.__dict__["_line"]  # the slot's descriptor


def _record(line: str) -> SnapshotRecord:
    rec = _NEW(SnapshotRecord)
    _SnapshotLine.__set__(rec, line)
    return rec


def _build(rec: SnapshotRecord) -> None:
    with _BUILDING:  # two threads reading one record: it is built once, never rebuilt over
        line = _SnapshotLine.__get__(rec)  # changes made after the first build
        if line is not None:
            _build_from(rec, line)


def _build_from(rec: SnapshotRecord, line: str) -> None:
    state = _STATE
    try:
        (wire, st, reason, acc, sdl, disp, started, edl, stop_req, stop_dl, term, lseq,
         prog, lprog, cdone, prior, ev, events) = decode_json(line)
        if type(wire) is not dict:
            raise TypeError(f"the command is a {type(wire).__name__}, not an object")
        cmd = Command.model_validate(wire)
        values = dict(
            command=cmd, state=state[st], reason=reason, accepted_at=acc, start_deadline=sdl,
            dispatched_at=disp, started_at=started, exec_deadline=edl, stop_requested=stop_req,
            stop_deadline=stop_dl, terminal_at=term, last_seq=lseq, progress=prog,
            last_progress_at=lprog, control_done_seen=cdone,
            prior_state=None if prior is None else state[prior], evidence=tuple(ev),
            events=[HistoryEntry(s, op, None if b is None else state[b], state[a], why, mono,
                                 wall, applied, rseq, tuple(hev), detail)
                    for s, op, b, a, why, mono, wall, applied, rseq, hev, detail in events],
            _snapshot_text=line if state[st] in TERMINAL else None)
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise LedgerError(
            LedgerCode.JOURNAL_FAILED, f"a record of the ledger snapshot does not read back "
            f"({exc!r:.300}): the snapshot passed its sha256 check, so it was written so",
            fix="delete the snapshot (DELETE FROM ledger_snapshots) and reopen: the whole "
                "journal is replayed") from None
    for name, value in values.items():
        _SET(rec, name, value)
    _SnapshotLine.__set__(rec, None)


#: A snapshot's record lines are stored in chunks of this many; a chunk whose lines are all the
#: ones the previous snapshot stored (the same kept text) is not written again.
CHUNK_RECORDS = 1_000

#: A chunk of a stored snapshot: its id (a row of the journal's chunk table) and its lines.
Chunk = tuple[int, list[str]]


@dataclass(slots=True)
class Dump:
    """A snapshot to store: the header and its sha256, the chunks it is made of (``chunks``, to
    reuse in the next one) and those of them not stored yet (``new``: id, body, sha256)."""

    head: str
    sha256: str
    chunks: list[Chunk]
    new: list[tuple[int, str, str]]


def dump_book(book: Book, seq: int, stored: list[Chunk], next_id: int) -> Dump:
    """The book as it stands after journal entry ``seq``. ``stored``: the chunks of the
    snapshot stored before (reused where their lines are the very same texts); new chunks are
    numbered from ``next_id``."""
    lines = list(map(_line, book.records.values()))
    chunks: list[Chunk] = []
    new: list[tuple[int, str, str]] = []
    for k, start in enumerate(range(0, len(lines), CHUNK_RECORDS)):
        part = lines[start:start + CHUNK_RECORDS]
        if k < len(stored) and len(old := stored[k][1]) == len(part) and all(
                map(operator.is_, part, old)):  # identity: the kept text of an unchanged record
            chunks.append(stored[k])
            continue
        body = "\n".join(part)
        new.append((next_id, body, hashlib.sha256(body.encode()).hexdigest()))
        chunks.append((next_id, part))
        next_id += 1
    records = book.records
    head = _encode({
        "format": SNAPSHOT_FORMAT, "seq": seq, "world_version": book.world_version,
        "epoch": book.epoch, "holders": book.holders, "fields": _FIELDS,
        "ids": list(records), "chunks": [cid for cid, _ in chunks],
        "open": [i for i, cid in enumerate(records) if cid in book.active]}, True)
    return Dump(head, hashlib.sha256(head.encode()).hexdigest(), chunks, new)


def load_book(book: Book, head: str, digest: str, stored: Mapping[int, tuple[str, str]], *,
              last_seq: int) -> tuple[int, list[Chunk]]:
    """Fill the empty ``book`` from a snapshot: its header, the header's sha256 and the stored
    chunks (id -> (body, sha256)). Returns the journal seq it stands at and its chunks.

    Raises :class:`SnapshotMismatch` (the book untouched) when the snapshot cannot be used."""
    if hashlib.sha256(head.encode()).hexdigest() != digest:
        raise SnapshotMismatch("its sha256 does not match its content")
    try:
        data = decode_json(head)
    except ValueError as exc:
        raise SnapshotMismatch(f"its header is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        fmt = data.get("format") if isinstance(data, dict) else None
        raise SnapshotMismatch(f"it is of format {fmt!r}, this version reads {SNAPSHOT_FORMAT}")
    seq = data.get("seq")
    if not isinstance(seq, int) or not 0 <= seq <= last_seq:
        raise SnapshotMismatch(f"it stands at seq {seq!r}, the journal ends at {last_seq}")
    if data.get("fields") != list(_FIELDS):
        raise SnapshotMismatch("its commands have other fields than this version's")
    try:
        ids, still_open = data["ids"], data["open"]
        chunks: list[Chunk] = []
        lines: list[str] = []
        for cid in data["chunks"]:
            if cid not in stored:
                raise ValueError(f"its chunk {cid!r} is not in the file")
            body, sha = stored[cid]
            if hashlib.sha256(body.encode()).hexdigest() != sha:
                raise ValueError(f"the sha256 of its chunk {cid} does not match its content")
            part = body.split("\n")
            chunks.append((cid, part))
            lines += part
        if len(lines) != len(ids) or not all(type(cid) is str for cid in ids):
            raise ValueError(f"{len(ids)} ids and {len(lines)} record lines")
        records = dict(zip(ids, map(_record, lines), strict=True))
        active = {ids[i]: records[ids[i]] for i in still_open}
        for rec in active.values():
            _build(rec)  # the open ones are read at once (marked UNKNOWN on reopening)
            if rec.state in TERMINAL:
                raise ValueError(f"record {rec.command_id!r} is listed open but is terminal")
        holders = {str(k): str(v) for k, v in data["holders"].items()}
        world_version, epoch = int(data["world_version"]), int(data["epoch"])
    except (KeyError, TypeError, ValueError, IndexError, LedgerError) as exc:
        raise SnapshotMismatch(f"its content does not read as a ledger: {exc!r:.300}") from None
    book.records.update(records)
    book.active.update(active)
    book.holders.update(holders)
    book.world_version, book.epoch = world_version, epoch
    return seq, chunks
