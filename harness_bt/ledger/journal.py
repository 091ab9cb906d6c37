"""The ledger's durable journal: an append-only SQLite table in WAL mode.

Each public ledger call appends its entries in one transaction and commits before the call
returns, so a writer killed at any moment leaves every returned call on disk. ``synchronous``
``NORMAL`` (the default) survives a killed process; ``FULL`` also survives power loss at the
price of an fsync per call.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from harness_bt.ledger.errors import LedgerCode, LedgerError

__all__ = ["FORMAT_VERSION", "LedgerJournal"]

FORMAT_VERSION = "1"


class LedgerJournal:
    """Append-only journal of ledger entries (JSON objects) in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
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
        self.last_seq: int = int(last) if last is not None else 0

    def read(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every entry in order, as ``(seq, body)``."""
        try:
            cursor = self._db.execute("SELECT seq, body FROM ledger_journal ORDER BY seq")
            while True:
                rows = cursor.fetchmany(50_000)
                if not rows:
                    break
                # one parse per chunk: far cheaper than a json.loads call per row
                bodies = json.loads("[" + ",".join(body for _, body in rows) + "]")
                for (seq, _), body in zip(rows, bodies, strict=True):
                    yield seq, body
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise LedgerError(
                LedgerCode.JOURNAL_FAILED, f"cannot read the journal {self.path}: {exc}"
            ) from exc

    def append(self, entries: Sequence[dict[str, Any]]) -> None:
        """Write the entries (they already carry their ``seq``) in one committed transaction."""
        dumps = json.dumps
        rows = [(e["seq"], dumps(e, separators=(",", ":"))) for e in entries]
        try:
            if len(rows) == 1:
                self._db.execute("INSERT INTO ledger_journal(seq, body) VALUES (?, ?)", rows[0])
            else:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT INTO ledger_journal(seq, body) VALUES (?, ?)", rows)
                self._db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise LedgerError(
                LedgerCode.JOURNAL_FAILED,
                f"cannot write to the journal {self.path}: {exc}; the call did not take effect",
                fix="free disk space or fix permissions, then retry the call",
            ) from exc
        self.last_seq = rows[-1][0]

    def close(self) -> None:
        with contextlib.suppress(sqlite3.DatabaseError):
            self._db.close()
