"""The ledger's durable journal: an append-only SQLite table in WAL mode.

Outside a group, each public ledger call appends its entries in one transaction and commits
before the call returns, so a writer killed at any moment leaves every returned call on disk.
Inside a group (:meth:`LedgerJournal.hold` ... :meth:`LedgerJournal.release`, what
``Ledger.group()`` uses for one tick) the entries wait in memory and are committed together by
:meth:`LedgerJournal.flush` or at the end of the group: what has been flushed is on disk, what
has not may be lost with the process. ``synchronous`` ``NORMAL`` (the default) survives a killed
process; ``FULL`` also survives power loss at the price of an fsync per commit.

Beside the entries, the file keeps the newest snapshot of the ledger's state
(:mod:`harness_bt.ledger.snapshot`: a header row and its record lines in chunks, a chunk shared
by consecutive snapshots while its lines do not change), so a reopen replays only the entries
after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import orjson

from harness_bt.ledger.errors import LedgerCode, LedgerError

__all__ = ["FORMAT_VERSION", "LedgerJournal"]

FORMAT_VERSION = "1"
_INSERT = "INSERT INTO ledger_journal(seq, body) VALUES (?, ?)"
_ONE_STATEMENT = 16  # up to this many rows are written by one multi-row INSERT
_INSERTS = {n: "INSERT INTO ledger_journal(seq, body) VALUES " + ",".join(["(?, ?)"] * n)
            for n in range(1, _ONE_STATEMENT + 1)}
_WRITE_FIX = ("the call did not take effect: free disk space or fix permissions, then retry "
              "the call")
_DUMPS = json.JSONEncoder(separators=(",", ":")).encode
_ORJSON = orjson.dumps


def encode_entry(entry: dict[str, Any]) -> str:
    """One entry as compact JSON. orjson (an order of magnitude faster) where it writes what
    :mod:`json` would read back equal; json where it would not: evidence may hold NaN or
    infinities (orjson writes them as null), and orjson refuses ints past 64 bits."""
    try:
        text = _ORJSON(entry).decode()
    except TypeError:
        return _DUMPS(entry)
    if "ev" in entry and "null" in text:  # maybe a NaN made null (or a real null: either way)
        return _DUMPS(entry)
    return text


def decode_json(text: str) -> Any:
    """orjson's reading where it gives json's answer, else json's: orjson refuses NaN and
    Infinity literals, and reads an integer of 19 or more digits as a float."""
    if _LONG_RUN not in text.encode().translate(_DIGITS):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))  # digits -> "0", else " "
_LONG_RUN = b"0" * 19


class _Transaction:
    """:meth:`LedgerJournal._transaction` (a plain class: a generator-based context manager
    costs several times as much, and a journal write is on every ledger call's path)."""

    __slots__ = ("begin", "fix", "journal", "what")

    def __init__(self, journal: LedgerJournal, what: str, fix: str, begin: bool) -> None:
        self.journal, self.what, self.fix, self.begin = journal, what, fix, begin

    def __enter__(self) -> sqlite3.Connection:
        db = self.journal._db
        if self.begin:
            self._run(db, "BEGIN")
        return db

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        db = self.journal._db
        if kind is None:
            if self.begin:
                self._run(db, "COMMIT")
        elif isinstance(exc, sqlite3.DatabaseError):
            self._fail(db, exc)

    def _run(self, db: sqlite3.Connection, sql: str) -> None:
        try:
            db.execute(sql)
        except sqlite3.DatabaseError as exc:
            self._fail(db, exc)

    def _fail(self, db: sqlite3.Connection, exc: sqlite3.DatabaseError) -> None:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise LedgerError(LedgerCode.JOURNAL_FAILED,
                          f"cannot {self.what} the journal {self.journal.path}: {exc}",
                          fix=self.fix) from exc


class LedgerJournal:
    """Append-only journal of ledger entries (JSON objects) in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        self._held = 0
        self._owner = 0
        self._pending: list[tuple[int, str]] = []
        #: Set when a held write failed: memory is then ahead of the file (see :meth:`flush`).
        self.failed: LedgerError | None = None
        if synchronous.upper() not in {"NORMAL", "FULL", "EXTRA"}:
            raise LedgerError(
                LedgerCode.INVALID_COMMAND,
                f"synchronous={synchronous!r} is not one of NORMAL, FULL, EXTRA",
                field="synchronous",
            )
        self.path = os.fspath(path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS ledger_journal "
                "(seq INTEGER PRIMARY KEY, body TEXT NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS ledger_info (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS ledger_snapshots "
                "(seq INTEGER PRIMARY KEY, sha256 TEXT NOT NULL, body TEXT NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS ledger_snapshot_chunks "
                "(id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL, body TEXT NOT NULL)"
            )
            row = self._db.execute(
                "SELECT value FROM ledger_info WHERE key='format'"
            ).fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO ledger_info(key, value) VALUES ('format', ?)", (FORMAT_VERSION,)
                )
            elif row[0] != FORMAT_VERSION:
                raise LedgerError(
                    LedgerCode.JOURNAL_FAILED,
                    f"{self.path} is a ledger journal of format {row[0]}, this version reads "
                    f"format {FORMAT_VERSION}",
                    fix="open it with the harness-bt version that wrote it",
                )
        except sqlite3.DatabaseError as exc:
            raise LedgerError(
                LedgerCode.JOURNAL_FAILED,
                f"cannot open the journal {self.path}: {exc}",
                fix="check the path, its permissions, and that it is a harness-bt journal",
            ) from exc
        last = self._db.execute("SELECT MAX(seq) FROM ledger_journal").fetchone()[0]
        #: The newest entry on disk (entries held in a group are not counted until flushed).
        self.last_seq: int = int(last) if last is not None else 0
        row = self._db.execute("SELECT MAX(seq) FROM ledger_snapshots").fetchone()
        #: The seq of the newest snapshot (0: none).
        self.snapshot_seq: int = int(row[0]) if row[0] is not None else 0
        row = self._db.execute("SELECT MAX(id) FROM ledger_snapshot_chunks").fetchone()
        #: The id the next snapshot chunk written gets.
        self.next_chunk_id: int = int(row[0]) + 1 if row[0] is not None else 1
        #: The chunks of the newest snapshot as ``(id, lines)``, once it was read or written:
        #: the next snapshot stores again only the chunks whose lines changed.
        self.snapshot_chunks: list[tuple[int, list[str]]] = []

    def read(self, after: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every entry with a seq above ``after``, in order, as ``(seq, body)``."""
        try:
            cursor = self._db.execute(
                "SELECT seq, body FROM ledger_journal WHERE seq > ? ORDER BY seq", (after,))
            while True:
                rows = cursor.fetchmany(50_000)
                if not rows:
                    break
                # one parse per chunk: far cheaper than a json.loads call per row
                bodies = decode_json("[" + ",".join(body for _, body in rows) + "]")
                for (seq, _), body in zip(rows, bodies, strict=True):
                    yield seq, body
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise LedgerError(
                LedgerCode.JOURNAL_FAILED, f"cannot read the journal {self.path}: {exc}"
            ) from exc

    def append(self, rows: list[tuple[int, str]]) -> None:
        """Journal entries as ``(seq, JSON text)`` (:func:`encode_entry`): committed now, or
        held until :meth:`flush` / the end of the group when one is open."""
        if self._held:
            self._pending.extend(rows)
            if threading.get_ident() != self._owner:
                self.flush()  # another thread's call: committed before it returns, as always
            return
        self._write(rows)

    def hold(self) -> None:
        """Open a group (groups nest) for the calling thread: its entries wait in memory until
        :meth:`flush`. Entries from other threads meanwhile are committed at once (with the
        held ones before them, keeping the journal in order)."""
        if self._held and threading.get_ident() != self._owner:
            raise LedgerError(LedgerCode.INVALID_TRANSITION,
                              "a ledger group is already open in another thread",
                              fix="group one thread's calls (the runner's tick) at a time")
        self._owner = threading.get_ident()
        self._held += 1

    def release(self) -> None:
        """Close a group; closing the outermost one flushes."""
        self._held -= 1
        if not self._held:
            self._owner = 0
            self.flush()

    @property
    def pending(self) -> int:
        """Entries held in memory, not yet on disk."""
        return len(self._pending)

    def flush(self) -> int:
        """Commit every held entry in one transaction; returns the newest seq on disk.

        If the write fails, the entries already took effect in memory: the journal marks itself
        failed (:attr:`failed`) and every later call is refused until the ledger is reopened,
        which recovers exactly what is on disk."""
        if self.failed is not None:
            raise self.failed
        if self._pending:
            rows, self._pending = self._pending, []
            try:
                self._write(rows)
            except LedgerError as exc:
                self.failed = LedgerError(
                    LedgerCode.JOURNAL_FAILED,
                    f"cannot write to the journal {self.path}: {exc.__cause__}; entries "
                    f"{rows[0][0]}..{rows[-1][0]} took effect in memory but are not on disk "
                    "(nothing outside was told of them)",
                    fix="close this ledger and open the journal again (it recovers what is on "
                        "disk), after freeing disk space or fixing permissions")
                raise self.failed from exc
        return self.last_seq

    def _transaction(self, what: str, fix: str, *, begin: bool = True) -> _Transaction:
        """``with self._transaction(what, fix) as db:`` runs the block in ``BEGIN`` ... ``COMMIT``
        (``begin=False``: the block is one statement, its own implicit transaction); on a SQLite
        error, ``ROLLBACK`` and ``JOURNAL_FAILED``: ``cannot {what} the journal <path>: <error>``
        with ``fix``."""
        return _Transaction(self, what, fix, begin)

    def _write(self, rows: list[tuple[int, str]]) -> None:
        one = len(rows) <= _ONE_STATEMENT  # one prepared statement, one implicit transaction
        with self._transaction("write to", _WRITE_FIX, begin=not one) as db:
            if one:
                db.execute(_INSERTS[len(rows)], [v for row in rows for v in row])
            else:
                db.executemany(_INSERT, rows)
        self.last_seq = rows[-1][0]

    def newest_snapshot(self) -> tuple[str, str, dict[int, tuple[str, str]]] | None:
        """The newest snapshot as ``(header, its sha256, {chunk id: (body, sha256)})``, or
        None."""
        try:
            row = self._db.execute(
                "SELECT body, sha256 FROM ledger_snapshots ORDER BY seq DESC LIMIT 1").fetchone()
            if row is None:
                return None
            chunks = {cid: (body, sha) for cid, sha, body in self._db.execute(
                "SELECT id, sha256, body FROM ledger_snapshot_chunks")}
        except sqlite3.DatabaseError as exc:
            raise LedgerError(
                LedgerCode.JOURNAL_FAILED, f"cannot read the journal {self.path}: {exc}"
            ) from exc
        return row[0], row[1], chunks

    def write_snapshot(self, seq: int, head: str, sha256: str, chunks: list[int],
                       new: list[tuple[int, str, str]]) -> None:
        """Store a snapshot at ``seq`` (entries up to it must be on disk): its header, the ids
        of the chunks it is made of and those not stored yet (``(id, body, sha256)``); older
        snapshots and the chunks only they used are dropped, in the same transaction."""
        if seq > self.last_seq:
            raise LedgerError(LedgerCode.JOURNAL_FAILED,
                              f"internal: snapshot at seq {seq} is past the journal's end "
                              f"{self.last_seq}", fix="flush before writing a snapshot")
        with self._transaction("write a snapshot to", "free disk space or fix permissions; "
                               "the journal itself is intact") as db:
            db.executemany("INSERT OR REPLACE INTO ledger_snapshot_chunks(id, body, sha256) "
                           "VALUES (?, ?, ?)", new)
            db.execute("INSERT OR REPLACE INTO ledger_snapshots(seq, sha256, body) "
                       "VALUES (?, ?, ?)", (seq, sha256, head))
            db.execute("DELETE FROM ledger_snapshots WHERE seq < ?", (seq,))
            keep = set(chunks)
            db.executemany("DELETE FROM ledger_snapshot_chunks WHERE id = ?", [
                row for row in db.execute("SELECT id FROM ledger_snapshot_chunks")
                if row[0] not in keep])
        self.snapshot_seq = seq
        if new:
            self.next_chunk_id = max(self.next_chunk_id, new[-1][0] + 1)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.DatabaseError):
            self._db.close()
