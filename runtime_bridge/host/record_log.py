"""A runtime journal whose commit is one append to a log file, folded into SQLite later.

A runtime answers a dispatch only after its record is durable. Committing each record into
SQLite costs tens of microseconds of the answering thread's time (a B-tree update, a WAL frame,
the GIL taken back afterwards); an ``os.write`` of a checksummed frame to an append-only file
costs one or two, and it is exactly as durable as SQLite's ``synchronous=NORMAL``: once the call
returns, the bytes are in the kernel and survive the process being killed (with ``FULL`` both
also sync to disk, surviving power loss). :class:`LoggedRuntimeJournal` therefore

- **writes** by appending one frame (``length u32 | crc32 u32 | JSON [rows, meta]``) to the
  current log segment ``<journal>-hbtlog.<n>`` and keeping the rows in memory until folded;
- **folds** (``fold()``, from a thread of the caller's choosing) by starting a new segment,
  writing the rows of the old one into SQLite in one transaction, and deleting the old segment
  only after that commit, so every record is, at every moment, in a segment or in SQLite;
- **reads** from memory first (rows not folded yet), then SQLite;
- **recovers** on opening: the segments left by a killed process are replayed into SQLite in
  order, then deleted. A frame cut short at the end of the last segment is a write the process
  died in (its answer never left) and is dropped with a warning; a bad frame anywhere else is
  corruption and opening fails, naming the file and offset, rather than guess.

One process writes a journal at a time (as for :class:`SqliteRuntimeJournal`). Readers in other
processes see the complete state through :func:`read_rows`, which overlays the segments on the
SQLite rows without changing anything.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import orjson

from harness_bt.errors import BridgeError
from runtime_bridge.host.record import RuntimeRecord
from runtime_bridge.host.record_store import _COLUMNS, SqliteRuntimeJournal

__all__ = ["LoggedRuntimeJournal", "read_rows", "segments"]

log = logging.getLogger(__name__)

SEGMENT_MAGIC = b"HBTLOG1\n"
_FRAME = struct.Struct("<II")  # payload length, crc32 of the payload
_MAX_FRAME = 256 << 20
_SEGMENT = re.compile(r"-hbtlog\.(\d{1,12})$")

Row = tuple[Any, ...]
T = TypeVar("T")


def segments(path: str | os.PathLike[str]) -> list[Path]:
    """The log segments of the journal at ``path``, oldest first."""
    base = Path(path)
    found = []
    for p in base.parent.glob(base.name + "-hbtlog.*"):
        m = _SEGMENT.search(p.name)
        if m is not None and p.name == f"{base.name}-hbtlog.{m.group(1)}":
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def _dumps(rows: list[Row], meta: Mapping[str, str]) -> bytes:
    try:
        return orjson.dumps([rows, meta])
    except TypeError as exc:  # a lone surrogate: SQLite could not store it either
        raise BridgeError("JOURNAL_FAILED", f"a record cannot be journaled: {exc}",
                          fix="command ids, reasons and texts must be valid Unicode") from exc


def _loads(payload: bytes) -> tuple[list[Row], dict[str, str]]:
    rows, meta = orjson.loads(payload)
    return [tuple(r) for r in rows], meta


def _frames(path: Path, *, last: bool) -> Iterator[bytes]:
    """The payloads of one segment, checked. A short or bad frame that reaches the end of the
    last segment is a torn write (dropped); anything else wrong raises JOURNAL_FAILED."""
    data = path.read_bytes()
    if len(data) < len(SEGMENT_MAGIC):
        if last and SEGMENT_MAGIC.startswith(data):
            return  # created, and the process died before its header was complete
        raise _corrupt(path, 0, "the file is too short for a log segment header")
    if not data.startswith(SEGMENT_MAGIC):
        raise _corrupt(path, 0, f"it does not start with {SEGMENT_MAGIC!r}")
    pos = len(SEGMENT_MAGIC)
    while pos < len(data):
        problem = None
        if pos + _FRAME.size > len(data):
            problem = "a frame header is cut short"
            end = len(data)
        else:
            size, crc = _FRAME.unpack_from(data, pos)
            end = pos + _FRAME.size + size
            if size > _MAX_FRAME:
                problem = f"a frame claims {size} bytes"
            elif end > len(data):
                problem = f"a frame of {size} bytes is cut short at {len(data) - pos} bytes"
            elif zlib.crc32(memoryview(data)[pos + _FRAME.size:end]) != crc:
                problem = "a frame's checksum does not match"
        if problem is not None:
            if last and end >= len(data):
                log.warning("%s: dropped %d bytes at offset %d (%s): a write the runtime died "
                            "in; its answer was never sent", path, len(data) - pos, pos, problem)
                return
            raise _corrupt(path, pos, problem)
        yield data[pos + _FRAME.size:end]
        pos = end


def _corrupt(path: Path, offset: int, problem: str) -> BridgeError:
    return BridgeError("JOURNAL_FAILED", f"runtime journal log segment {path} is corrupt at "
                       f"offset {offset}: {problem}", where=str(path),
                       fix="keep the file for inspection; move it aside to open the journal "
                       "without the records it holds (their commands are then unknown to the "
                       "runtime)")


def _sqlite_rows(path: str | os.PathLike[str]) -> dict[str, Row]:
    out: dict[str, Row] = {}
    with contextlib.suppress(sqlite3.OperationalError):  # no file, or no table yet
        db = sqlite3.connect(f"file:{os.fspath(path)}?mode=ro", uri=True)
        try:
            for row in db.execute(f"SELECT {_COLUMNS} FROM runtime_commands"):
                out[row[0]] = tuple(row)
        finally:
            db.close()
    return out


def _last(found: list[Path]) -> str | None:
    return found[-1].name if found else None


_READ_ATTEMPTS = 200


def read_rows(path: str | os.PathLike[str]) -> dict[str, Row]:
    """Every record's latest row, by command id, as a reader in another process sees it: the
    SQLite rows with the log segments applied on top, changing nothing on disk. A missing
    journal reads as empty.

    The writer may fold while this reads (commit a segment's rows to SQLite, then delete the
    segment). A read is kept only if no fold can have slipped between its SQLite read and its
    segment reads: every segment listed before the SQLite read was still there to be read, and
    no segment was created meanwhile (each fold starts one). Otherwise it reads again."""
    for _ in range(_READ_ATTEMPTS):
        found = segments(path)
        out = _sqlite_rows(path)
        try:
            for i, seg in enumerate(found):
                for payload in _frames(seg, last=i == len(found) - 1):
                    for row in _loads(payload)[0]:
                        out[row[0]] = row
        except FileNotFoundError:  # folded after the SQLite read: read again
            continue
        if _last(segments(path)) == _last(found):
            return out
    raise BridgeError("JOURNAL_FAILED", f"the runtime journal {path} changed under every one "
                      f"of {_READ_ATTEMPTS} reads", where=os.fspath(path),
                      fix="read it again when its runtime is less busy, or stop the runtime")


class LoggedRuntimeJournal:
    """See the module docstring. ``synchronous``: ``NORMAL`` survives a killed process,
    ``FULL`` also power loss (each append is followed by ``fdatasync``)."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        self.path = os.fspath(path)
        self._sync = synchronous.upper() != "NORMAL"
        self._db = SqliteRuntimeJournal(path, synchronous=synchronous, autocheckpoint=False)
        self._lock = threading.Lock()  # the current segment and the rows not folded yet
        self._db_lock = threading.Lock()  # the SQLite connection
        self._fold_lock = threading.Lock()  # one fold at a time
        self._pending: dict[str, Row] = {}
        self._pending_meta: dict[str, str] = {}
        self._folding: dict[str, Row] = {}
        self._folding_meta: dict[str, str] = {}
        self._retired: list[Path] = []  # segments whose rows are in memory, not yet in SQLite
        self.commits = 0  # appends since opening
        self.folds = 0
        self._closed = False
        try:
            self.recovered = self._recover()
            self._fd, self._segment = self._new_segment(self._next_seq())
        except BaseException:
            self._db.close()
            raise

    # ------------------------------------------------------------------ opening

    def _recover(self) -> int:
        """Replay the segments a previous process left into SQLite; returns the rows applied."""
        found = segments(self.path)
        rows: dict[str, Row] = {}
        meta: dict[str, str] = {}
        for i, seg in enumerate(found):
            for payload in _frames(seg, last=i == len(found) - 1):
                r, m = _loads(payload)
                rows.update((row[0], row) for row in r)
                meta.update(m)
        if rows or meta:
            self._db.write_rows(list(rows.values()), meta)
            log.info("%s: replayed %d records from %d log segments", self.path, len(rows),
                     len(found))
        for seg in found:
            seg.unlink()
        last = _SEGMENT.search(found[-1].name) if found else None
        self._seq = int(last.group(1)) if last is not None else 0
        return len(rows)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _new_segment(self, seq: int) -> tuple[int, Path]:
        seg = Path(f"{self.path}-hbtlog.{seq:06d}")
        try:
            fd = os.open(seg, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            self._append(fd, SEGMENT_MAGIC)
            if self._sync:
                dfd = os.open(seg.parent, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        except OSError as exc:
            raise self._failed(f"create the log segment {seg}", exc) from exc
        return fd, seg

    def _append(self, fd: int, data: bytes) -> None:
        self._complete(fd, data, os.write(fd, data))

    def _complete(self, fd: int, data: bytes, written: int) -> None:
        """After ``written`` bytes of ``data`` went out in one write: the rest of a short
        write (a signal, a full disk), then the sync to disk with ``FULL``."""
        if written != len(data):
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view):]
        if self._sync:
            os.fdatasync(fd)

    # ------------------------------------------------------------------ the journal

    def write(self, records: Iterable[RuntimeRecord], meta: Mapping[str, str] | None = None
              ) -> None:
        rows = [r.to_row() for r in records]
        if not rows and not meta:
            return
        meta = meta or {}
        payload = _dumps(rows, meta)
        frame = _FRAME.pack(len(payload), zlib.crc32(payload)) + payload
        with self._lock:
            if self._closed:
                raise BridgeError("JOURNAL_FAILED", f"the runtime journal {self.path} is closed")
            try:
                written = os.write(self._fd, frame)
                if written != len(frame) or self._sync:
                    self._complete(self._fd, frame, written)
            except OSError as exc:
                raise self._failed("append to", exc) from exc
            for row in rows:
                self._pending[row[0]] = row
            self._pending_meta.update(meta)
            self.commits += 1

    def _unfolded(self, key: str, *, meta: bool) -> Any:
        """A row (or meta value) written and not yet in SQLite: the newest, else the one a fold
        is writing now; None if neither has it."""
        with self._lock:
            pending, folding = ((self._pending_meta, self._folding_meta) if meta
                                else (self._pending, self._folding))
            value = pending.get(key)
            return folding.get(key) if value is None else value

    def get(self, command_id: str) -> RuntimeRecord | None:
        row = self._unfolded(command_id, meta=False)
        if row is not None:
            return RuntimeRecord.from_row(row)
        if not self._db.knows(command_id):  # a new id: no need to ask SQLite
            return None
        with self._db_lock:
            return self._db.get(command_id)

    def meta(self, key: str) -> str | None:
        value = self._unfolded(key, meta=True)
        if value is not None:
            return value
        with self._db_lock:
            return self._db.meta(key)

    def unfinished(self) -> list[RuntimeRecord]:
        return self._folded(lambda db: db.unfinished())

    def purge(self, finished_before_wall: float) -> int:
        # folded first: nothing purged may come back from a segment replayed later
        return self._folded(lambda db: db.purge(finished_before_wall))

    def _folded(self, use: Callable[[SqliteRuntimeJournal], T]) -> T:
        """Fold what is written, then ``use`` SQLite, which then holds every record."""
        with self._fold_lock:
            self._fold()
            with self._db_lock:
                return use(self._db)

    def fold(self) -> int:
        """Move the rows written since the last fold into SQLite (one transaction) and delete
        the segments that held them; returns how many rows. Writers are not held up: they
        append to a new segment meanwhile."""
        with self._fold_lock:
            return self._fold()

    def _fold(self) -> int:
        with self._lock:
            if self._closed or (not self._pending and not self._pending_meta):
                return 0
            fd, segment = self._new_segment(self._next_seq())  # raises before any change
            os.close(self._fd)
            self._retired.append(self._segment)
            self._fd, self._segment = fd, segment
            batch, meta = self._pending, self._pending_meta
            self._pending, self._pending_meta = {}, {}
            self._folding, self._folding_meta = batch, meta
        try:
            with self._db_lock:
                self._db.write_rows(list(batch.values()), meta)
        except Exception:
            with self._lock:  # back to pending (never over a newer row); segments stay
                for cid, row in batch.items():
                    self._pending.setdefault(cid, row)
                for key, value in meta.items():
                    self._pending_meta.setdefault(key, value)
                self._folding, self._folding_meta = {}, {}
            raise
        with self._lock:
            retired, self._retired = self._retired, []
            self._folding, self._folding_meta = {}, {}
        for seg in retired:
            with contextlib.suppress(FileNotFoundError):
                seg.unlink()
        self.folds += 1
        return len(batch)

    def checkpoint(self) -> tuple[int, int]:
        """SQLite's own WAL checkpoint (see :meth:`SqliteRuntimeJournal.checkpoint`)."""
        return self._db.checkpoint()

    def command_ids(self) -> list[str]:
        return self._folded(lambda db: db.command_ids())

    def close(self) -> None:
        """Fold what is left, close SQLite and delete the (then empty) segment."""
        with self._fold_lock:
            if self._closed:
                return
            try:
                self._fold()
            finally:  # a failed fold leaves its segments for the next opening to replay
                with self._lock:
                    self._closed = True
                    os.close(self._fd)
                    if not self._pending and not self._pending_meta and not self._retired:
                        with contextlib.suppress(FileNotFoundError):
                            self._segment.unlink()
                with self._db_lock:
                    self._db.close()

    def _failed(self, what: str, exc: OSError) -> BridgeError:
        return BridgeError("JOURNAL_FAILED", f"cannot {what} the runtime journal {self.path}: "
                           f"{exc}", where=self.path,
                           fix="check the disk (space, permissions); until then the runtime "
                           "refuses what it cannot record, and its control loop stops")
