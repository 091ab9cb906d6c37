"""Where a runtime keeps its records: a SQLite file (WAL) that outlives the process, or memory.

Every change is written in one committed transaction before the runtime acts on it or answers
about it, so a runtime killed at any moment restarts knowing every command it acknowledged.
``synchronous=NORMAL`` survives a killed process; ``FULL`` also survives power loss.

A commit appends to the write-ahead log; a checkpoint copies the log into the database and, with
``NORMAL``, is where SQLite syncs to disk. By default SQLite checkpoints inside whichever commit
fills the log past 1000 pages, so that one commit (and the answer waiting for it) takes
milliseconds. A runtime that answers over the network opens its journal with
``autocheckpoint=False`` and calls :meth:`SqliteRuntimeJournal.checkpoint` from a thread of its
own; commits stay as durable as before.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from harness_bt.errors import BridgeError
from runtime_bridge.host.record import RuntimeRecord

__all__ = ["FORMAT_VERSION", "MemoryRuntimeJournal", "RuntimeJournal", "SqliteRuntimeJournal"]

FORMAT_VERSION = "1"
_COLUMNS = (
    "command_id, command, accepted, state, reason, received_wall, finished_wall, last_seq, events"
)

_FINISHED = 6  # the finished_wall column


@runtime_checkable
class RuntimeJournal(Protocol):
    """A runtime's durable store of :class:`RuntimeRecord` plus a few meta values (epoch)."""

    def get(self, command_id: str) -> RuntimeRecord | None: ...

    def unfinished(self) -> list[RuntimeRecord]: ...

    def write(
        self, records: Iterable[RuntimeRecord], meta: Mapping[str, str] | None = None
    ) -> None: ...

    def purge(self, finished_before_wall: float) -> int: ...

    def meta(self, key: str) -> str | None: ...

    def close(self) -> None: ...


class MemoryRuntimeJournal:
    """Records in a dict: for an in-process runtime that lives and dies with the harness."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[Any, ...]] = {}
        self._meta: dict[str, str] = {}

    def get(self, command_id: str) -> RuntimeRecord | None:
        row = self._rows.get(command_id)
        return None if row is None else RuntimeRecord.from_row(row)

    def unfinished(self) -> list[RuntimeRecord]:
        return [RuntimeRecord.from_row(r) for r in self._rows.values() if r[_FINISHED] is None]

    def write(
        self, records: Iterable[RuntimeRecord], meta: Mapping[str, str] | None = None
    ) -> None:
        for rec in records:
            self._rows[rec.command_id] = rec.to_row()
        self._meta.update(meta or {})

    def purge(self, finished_before_wall: float) -> int:
        old = [k for k, r in self._rows.items()
               if r[_FINISHED] is not None and r[_FINISHED] < finished_before_wall]
        for k in old:
            del self._rows[k]
        return len(old)

    def meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def close(self) -> None:
        pass


class SqliteRuntimeJournal:
    """The runtime's records in one SQLite file in WAL mode, one row per command id.

    It keeps the ids of its rows in memory (read at opening, kept up to date by ``write`` and
    ``purge``: this connection must be the file's only writer), so ``get`` answers a new id
    without a query; that costs some 100 bytes per retained record."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL",
                 autocheckpoint: bool = True) -> None:
        self.path = os.fspath(path)
        self.commits = 0  # committed writes since opening (a checkpointer compares it)
        self._checkpointer: sqlite3.Connection | None = None
        self._ids: set[str] = set()  # every command_id in the table
        if synchronous.upper() not in {"NORMAL", "FULL", "EXTRA"}:
            raise BridgeError(
                "INVALID_CONFIG",
                f"synchronous={synchronous!r} is not one of NORMAL, FULL, EXTRA",
                where=self.path,
            )
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            if not autocheckpoint:
                self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS runtime_commands (command_id TEXT PRIMARY KEY, "
                "digest TEXT, command TEXT, accepted INTEGER NOT NULL, state TEXT NOT NULL, "
                "reason TEXT NOT NULL, received_wall REAL NOT NULL, finished_wall REAL, "
                "last_seq INTEGER NOT NULL, events TEXT NOT NULL) WITHOUT ROWID"
            )
            # Only finished rows are indexed (purge reads them): a dispatch's commit writes its
            # row's page and not an index page too (a third fewer log frames per answer). An
            # older journal's index of every row is replaced; its format is unchanged.
            self._db.execute("DROP INDEX IF EXISTS runtime_commands_finished")
            self._db.execute(
                "CREATE INDEX IF NOT EXISTS runtime_commands_finished_only "
                "ON runtime_commands(finished_wall) WHERE finished_wall IS NOT NULL"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS runtime_meta "
                "(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            fmt = self.meta("format")
            if fmt is None:
                self.write((), {"format": FORMAT_VERSION})
            elif fmt != FORMAT_VERSION:
                raise BridgeError(
                    "JOURNAL_FAILED",
                    f"{self.path} is a runtime journal of format {fmt}; this version reads "
                    f"format {FORMAT_VERSION}",
                    where=self.path,
                    fix="open it with the harness-bt version that wrote it, or start a new one",
                )
            self._ids.update(row[0] for row in self._db.execute(
                "SELECT command_id FROM runtime_commands"))
        except sqlite3.DatabaseError as exc:
            raise BridgeError(
                "JOURNAL_FAILED",
                f"cannot open the runtime journal {self.path}: {exc}",
                where=self.path,
                fix="check the path and its permissions, and that it is a runtime journal",
            ) from exc

    def get(self, command_id: str) -> RuntimeRecord | None:
        if command_id not in self._ids:  # a new id: no need to ask SQLite
            return None
        row = self._query_one(
            f"SELECT {_COLUMNS} FROM runtime_commands WHERE command_id=?", (command_id,)
        )
        return None if row is None else RuntimeRecord.from_row(row)

    def unfinished(self) -> list[RuntimeRecord]:
        try:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM runtime_commands WHERE finished_wall IS NULL "
                "ORDER BY received_wall"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._failed("read", exc) from exc
        return [RuntimeRecord.from_row(r) for r in rows]

    def knows(self, command_id: str) -> bool:
        """Whether a row with this id is in the table (from memory, no query)."""
        return command_id in self._ids

    def write(
        self, records: Iterable[RuntimeRecord], meta: Mapping[str, str] | None = None
    ) -> None:
        self.write_rows([r.to_row() for r in records], meta)

    def write_rows(self, rows: list[tuple[Any, ...]], meta: Mapping[str, str] | None = None
                   ) -> None:
        """Rows as :meth:`RuntimeRecord.to_row` makes them, in one transaction."""
        if not rows and not meta:
            return
        try:
            if len(rows) == 1 and not meta:  # one statement is its own transaction
                self._db.execute(
                    f"INSERT OR REPLACE INTO runtime_commands ({_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows[0],
                )
                self.commits += 1
                self._ids.add(rows[0][0])
                return
            self._db.execute("BEGIN")
            if rows:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO runtime_commands ({_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
            if meta:
                self._db.executemany(
                    "INSERT OR REPLACE INTO runtime_meta (key, value) VALUES (?, ?)",
                    list((meta or {}).items()),
                )
            self._db.execute("COMMIT")
            self.commits += 1
            self._ids.update(row[0] for row in rows)
        except sqlite3.DatabaseError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise self._failed("write", exc) from exc

    def checkpoint(self) -> tuple[int, int]:
        """Copy the write-ahead log into the database without waiting for, or blocking, the
        writer (a PASSIVE checkpoint), on a connection of its own: call it from one thread
        other than the writers'. Returns (frames in the log, frames copied)."""
        try:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(self.path, isolation_level=None,
                                                     check_same_thread=False)
            row = self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._failed("checkpoint", exc) from exc
        return (int(row[1]), int(row[2])) if row else (0, 0)

    def purge(self, finished_before_wall: float) -> int:
        try:
            gone = self._db.execute(
                "DELETE FROM runtime_commands "
                "WHERE finished_wall IS NOT NULL AND finished_wall < ? RETURNING command_id",
                (finished_before_wall,),
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._failed("write", exc) from exc
        self._ids.difference_update(row[0] for row in gone)
        return len(gone)

    def meta(self, key: str) -> str | None:
        row = self._query_one("SELECT value FROM runtime_meta WHERE key=?", (key,))
        return None if row is None else str(row[0])

    def command_ids(self) -> list[str]:
        """Every command id on record, oldest receipt first (for audits and chaos runs)."""
        try:
            rows = self._db.execute(
                "SELECT command_id FROM runtime_commands ORDER BY received_wall").fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._failed("read", exc) from exc
        return [str(r[0]) for r in rows]

    def count(self) -> int:
        row = self._query_one("SELECT COUNT(*) FROM runtime_commands", ())
        return 0 if row is None else int(str(row[0]))

    def close(self) -> None:
        with contextlib.suppress(sqlite3.DatabaseError):
            if self._checkpointer is not None:
                self._checkpointer.close()
            self._db.close()

    def _query_one(self, sql: str, args: tuple[object, ...]) -> tuple[object, ...] | None:
        try:
            return self._db.execute(sql, args).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._failed("read", exc) from exc

    def _failed(self, what: str, exc: Exception) -> BridgeError:
        return BridgeError(
            "JOURNAL_FAILED",
            f"cannot {what} the runtime journal {self.path}: {exc}",
            where=self.path,
            fix="free disk space or fix permissions; the call did not take effect",
        )
