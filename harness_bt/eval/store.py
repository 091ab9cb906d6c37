"""The results store: one SQLite file (``DIR/results.sqlite``), one row per finished episode.

The driver is the only writer. Each row is committed the moment its episode's result arrives
(WAL, ``synchronous=FULL``), under the primary key (task digest, condition, episode id): a
second result for a recorded episode is ignored, so an episode is recorded exactly once however
often it ran. A rerun of the same evaluation asks :meth:`ResultsStore.recorded` and runs only
what is missing; a driver killed mid-run loses at most the episodes in flight.

Schema version 2 added each episode's injected faults (``faults``, ``faults_asked``,
``faults_note``); a version-1 store is migrated when opened (its episodes' faults read as None:
not recorded). A store of any other version is refused.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.eval.plan import EpisodeKey

__all__ = ["COLUMNS", "SCHEMA_VERSION", "STORE_NAME", "ResultsStore"]

SCHEMA_VERSION = 2
STORE_NAME = "results.sqlite"

#: column -> SQL type, in order; JSON columns hold text.
COLUMNS: dict[str, str] = {
    "digest": "TEXT NOT NULL", "condition": "TEXT NOT NULL", "episode": "TEXT NOT NULL",
    "task": "TEXT NOT NULL", "seed": "INTEGER", "scene": "TEXT", "outcome": "TEXT NOT NULL",
    "reason": "TEXT NOT NULL", "last_phase": "TEXT", "sim_success": "INTEGER",
    "sim_ended_by": "TEXT", "false_success": "INTEGER NOT NULL", "unknown": "INTEGER NOT NULL",
    "retries": "INTEGER", "recoveries": "INTEGER", "commands": "INTEGER",
    "sim_steps": "INTEGER", "phase_times": "TEXT", "decision_latency_p50_ms": "REAL",
    "decision_latency_p99_ms": "REAL", "sim_time_s": "REAL", "wall_s": "REAL", "trace": "TEXT",
    "worker": "TEXT", "attempts": "INTEGER NOT NULL", "error": "TEXT",
    "recorded_at": "REAL NOT NULL",
    # version 2: the injected faults that fired (a JSON list, harness_bt.run.faults), the
    # fault rates asked for (a JSON object) and the note when asked-for faults never fired;
    # NULL in an episode recorded before (its faults were not recorded, which is not "none")
    "faults": "TEXT", "faults_asked": "TEXT", "faults_note": "TEXT",
}
#: the columns each schema version added to the one before (how an older store is migrated)
_ADDED: dict[int, tuple[str, ...]] = {2: ("faults", "faults_asked", "faults_note")}
_JSON = ("phase_times",)  # {phase: seconds} in the order the episode first entered them
_JSON_OR_NULL = ("faults", "faults_asked")
_BOOL = ("sim_success", "false_success", "unknown")


class ResultsStore:
    """See the module docstring. ``clock`` stamps ``recorded_at`` (wall time by default).
    ``read_only``: open an existing store to read it (``harness compare DIR_A DIR_B``): nothing
    is created where there is no store, and nothing in it changes (SQLite may add its
    ``-wal`` and ``-shm`` files beside it)."""

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time,
                 read_only: bool = False) -> None:
        self.path = Path(path)
        self._clock = clock
        if read_only:
            self._open_read_only()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._create()
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None

    @classmethod
    def in_dir(cls, directory: str | Path, **kwargs: Any) -> ResultsStore:
        return cls(Path(directory) / STORE_NAME, **kwargs)

    def _corrupt(self, exc: Exception) -> DefinitionError:
        return DefinitionError(
            "STORE_CORRUPT", f"the results store {self.path} cannot be read: {exc}",
            where=str(self.path),
            fix="move it aside (its episodes will run again), or point --out at another "
                "directory")

    def _open_read_only(self) -> None:
        if not self.path.is_file():
            raise DefinitionError("NO_STORE", f"there is no results store at {self.path}",
                                  where=str(self.path),
                                  fix=f"run harness eval TASK --out {self.path.parent} first")
        try:
            self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
            self._refuse_foreign()
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'"
                                   ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None
        if row is None or row[0] != str(SCHEMA_VERSION):
            self._db.close()
            raise DefinitionError(
                "STORE_VERSION", f"the results store {self.path} has schema version "
                f"{row[0] if row else 'none'}; this harness reads version {SCHEMA_VERSION}",
                where=str(self.path), fix="evaluate again into a new --out directory")

    def _create(self) -> None:
        self._refuse_foreign()
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            cols = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(f"CREATE TABLE IF NOT EXISTS episodes ({cols}, "
                             "PRIMARY KEY (digest, condition, episode))")
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
            self._db.execute("COMMIT")
        elif row[0] != str(SCHEMA_VERSION) and row[0] in {str(v - 1) for v in _ADDED}:
            self._migrate(int(row[0]))
        elif row[0] != str(SCHEMA_VERSION):
            raise DefinitionError(
                "STORE_VERSION", f"the results store {self.path} has schema version {row[0]}; "
                f"this harness writes version {SCHEMA_VERSION}", where=str(self.path),
                fix="evaluate into a new --out directory")

    def _migrate(self, version: int) -> None:
        """Bring a store of an older ``version`` to :data:`SCHEMA_VERSION` in one transaction:
        the columns added since, NULL in the rows already recorded."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            now = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if now is not None and now[0] == str(SCHEMA_VERSION):  # another driver migrated it
                self._db.execute("COMMIT")
                return
            for v in range(version + 1, SCHEMA_VERSION + 1):
                for name in _ADDED[v]:
                    self._db.execute(f"ALTER TABLE episodes ADD COLUMN {name} {COLUMNS[name]}")
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                             (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _refuse_foreign(self) -> None:
        """An SQLite file that is not a results store (tables, but no schema version of
        ours) is refused untouched, never written into."""
        tables = sorted(r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type='table'"))
        if not tables:
            return
        ours = False
        if "meta" in tables:
            try:
                ours = self._db.execute("SELECT value FROM meta WHERE key='schema_version'"
                                        ).fetchone() is not None
            except sqlite3.DatabaseError:
                ours = False
        if not ours:
            self._db.close()
            shown = ", ".join(tables[:8]) + (f" and {len(tables) - 8} more"
                                             if len(tables) > 8 else "")
            raise DefinitionError(
                "FOREIGN_STORE", f"{self.path} is an SQLite file of something else (tables: "
                f"{shown}), not a results store; it was left untouched", where=str(self.path),
                fix="point --out at a directory of its own, or move that file aside")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def recorded(self) -> set[EpisodeKey]:
        """Every episode recorded so far."""
        try:
            rows = self._db.execute("SELECT digest, condition, episode FROM episodes")
            return {EpisodeKey(*r) for r in rows}
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None

    def record(self, row: Mapping[str, Any], *, attempts: int = 1) -> bool:
        """Commit one finished episode; False (and nothing written) when it is recorded
        already."""
        values = dict(row)
        values["attempts"] = attempts
        values.setdefault("recorded_at", self._clock())
        for name in (*_JSON, *_JSON_OR_NULL):
            if name in values and not isinstance(values[name], str | None):
                values[name] = json.dumps(values[name])  # phase_times: in entry order
        for name in _BOOL:
            if name in values and values[name] is not None:
                values[name] = int(bool(values[name]))
        names = [n for n in COLUMNS if n in values]
        sql = (f"INSERT INTO episodes ({', '.join(names)}) "
               f"VALUES ({', '.join('?' for _ in names)}) "
               "ON CONFLICT (digest, condition, episode) DO NOTHING")
        try:
            cur = self._db.execute(sql, [values[n] for n in names])
        except sqlite3.IntegrityError as exc:
            raise DefinitionError("BAD_RESULT", f"a result row lacks a field: {exc}",
                                  fix="rows come from harness_bt.eval.episode") from None
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None
        return cur.rowcount == 1

    def rows(self, *, digests: Iterable[str] | None = None,
             condition: str | None = None) -> list[dict[str, Any]]:
        """Recorded episodes (optionally of some task digests and one condition), in a stable
        order (task, condition, seed, episode id)."""
        sql = f"SELECT {', '.join(COLUMNS)} FROM episodes"
        where: list[str] = []
        args: list[Any] = []
        if digests is not None:
            ds = list(digests)
            where.append(f"digest IN ({', '.join('?' for _ in ds)})")
            args.extend(ds)
        if condition is not None:
            where.append("condition = ?")
            args.append(condition)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY task, condition, seed, episode"
        try:
            raw = self._db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None
        out = []
        for values in raw:
            row = dict(zip(COLUMNS, values, strict=True))
            for name in _JSON:
                row[name] = json.loads(row[name]) if row[name] else {}
            for name in _JSON_OR_NULL:
                row[name] = None if row[name] is None else json.loads(row[name])
            for name in _BOOL:
                if row[name] is not None:
                    row[name] = bool(row[name])
            out.append(row)
        return out

    def count(self) -> int:
        try:
            return int(self._db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None
