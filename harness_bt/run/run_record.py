"""The run record: what ``harness resume`` needs besides the ledger, in the same SQLite file.

``harness run TASK --runtime URL --journal run.db`` writes three things to ``run.db``:

- the **ledger** (:meth:`harness_bt.ledger.Ledger.open`: every command transition, committed
  before it takes effect outside);
- a **header**: the format version, the task file and a digest of its content, the run id
  (part of every command id), the runtime and the options the run was started with;
- **checkpoints** of the run's progress, one after the start and one after every tick in which
  the chart changed configuration: the active configuration and the history states, each atomic
  phase's activation number (part of its command ids), the blackboard, the task budget's
  retries used, the counters, the phases visited, the control epoch, the world memory; plus
  the time used so far and the world memory as it is now (rewritten about once a second, and
  as soon as an object appears or goes: the newest checkpoint takes it on resume).

Resume granularity is the phase: a resumed run restores the last checkpoint and re-enters the
active phase(s) with their trees reset and their activation numbers as they were, so every leaf
re-derives the command id it had; an id already in the ledger is never sent again (its record
stands: SUCCEEDED and FAILED ones replay their result, UNKNOWN ones are reconciled with the
runtime). See :mod:`harness_bt.run.resume`.

Blackboard values are journaled when they are plain JSON data (str, numbers, bools, None,
lists, dicts with str keys); values made from the world model (a plan's world snapshot, a
derived pose) go with the world model itself into the checkpoint's world memory
(:mod:`harness_bt.run.memory`: objects, poses, versions, when each was seen); any other value
is left out and listed in the checkpoint's ``dropped`` keys. A checkpoint written before world
memory existed has none (``world`` None): the resumed run says so and observes again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import socket
import sqlite3
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = [
    "FORMAT_VERSION",
    "RunCheckpoint",
    "RunHeader",
    "RunRecord",
    "file_digest",
    "journalable",
]

FORMAT_VERSION = 1
_TABLES = ("run_meta", "run_checkpoints")


def _cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return None


def file_digest(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes (the task file a journal was written for)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def journalable(value: Any) -> bool:
    """Plain JSON data only (finite numbers, str-keyed dicts, lists and tuples of such)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(journalable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and journalable(v) for k, v in value.items())
    return False


@dataclass(frozen=True)
class RunHeader:
    """What a journaled run was: enough to start it again the same way."""

    task_file: str
    task_digest: str
    task_name: str
    run_id: str
    bridge: str
    runtime_url: str | None = None
    perception: str | None = None
    trace: str | None = None
    created_wall: float = 0.0
    harness_version: str = ""
    format: int = FORMAT_VERSION
    #: the task's parameter values the run was started with (resume builds the same task)
    params: Mapping[str, Any] = field(default_factory=dict)
    scene: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunHeader:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class RunCheckpoint:
    """The run's progress at a chart configuration (see the module docstring). ``seq`` is
    assigned by the run record."""

    configuration: tuple[str, ...]
    activations: Mapping[str, int]
    blackboard: Mapping[str, Any]
    retries_used: int
    counters: Mapping[str, int]
    plan_version: int
    visited: tuple[str, ...]
    epoch: int
    elapsed_s: float
    ticks: int
    history: Mapping[str, list[str]] = field(default_factory=dict)
    durations: Mapping[str, float] = field(default_factory=dict)
    handed_over: Mapping[str, str] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()
    reason: str = "transition"
    #: the world model (:func:`harness_bt.run.memory.remember`); None in a checkpoint written
    #: before world memory existed
    world: Mapping[str, Any] | None = None
    #: blackboard values made from the world (key -> :func:`~harness_bt.run.memory.encode_value`)
    world_values: Mapping[str, Any] = field(default_factory=dict)
    seq: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("seq")
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], seq: int = 0) -> RunCheckpoint:
        return cls(
            configuration=tuple(data["configuration"]),
            activations={str(k): int(v) for k, v in data["activations"].items()},
            blackboard=dict(data["blackboard"]), retries_used=int(data["retries_used"]),
            counters={str(k): int(v) for k, v in data["counters"].items()},
            plan_version=int(data["plan_version"]), visited=tuple(data["visited"]),
            epoch=int(data["epoch"]), elapsed_s=float(data["elapsed_s"]),
            ticks=int(data["ticks"]), history={k: list(v) for k, v in data["history"].items()},
            durations={k: float(v) for k, v in data["durations"].items()},
            handed_over=dict(data["handed_over"]), dropped=tuple(data["dropped"]),
            reason=str(data["reason"]),
            world=None if data.get("world") is None else dict(data["world"]),
            world_values=dict(data.get("world_values") or {}), seq=seq)


class RunRecord:
    """The run's record: its header, checkpoints and status in a SQLite file (WAL). Build with
    :meth:`create` (a new run) or :meth:`open` (resume); errors name the file and the fix."""

    def __init__(self, path: str, db: sqlite3.Connection, header: RunHeader) -> None:
        self.path = path
        self._db = db
        self.header = header

    # ------------------------------------------------------------------ construction

    @staticmethod
    def check_new(path: str | os.PathLike[str]) -> None:
        """Refuse a path that already holds something (checked before a run connects)."""
        where = os.fspath(path)
        if os.path.exists(where) and os.path.getsize(where) > 0:
            raise DefinitionError(
                "RUN_JOURNAL_EXISTS", f"{where} already exists; a new run needs its own journal",
                where=where, fix=f"resume it with: harness resume {where}; or pass another "
                "--journal path (or delete this one)")

    @classmethod
    def create(cls, path: str | os.PathLike[str], header: RunHeader) -> RunRecord:
        """Start the record of a new run; refuses a file that already holds a run."""
        where = os.fspath(path)
        cls.check_new(where)
        db = cls._connect(where)
        try:
            db.execute("CREATE TABLE run_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("CREATE TABLE run_checkpoints (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                       "wall REAL NOT NULL, body TEXT NOT NULL)")
            db.execute("BEGIN")
            db.executemany("INSERT INTO run_meta(key, value) VALUES (?, ?)", [
                ("format", str(FORMAT_VERSION)), ("header", json.dumps(asdict(header))),
                ("status", "running")])
            db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            db.close()
            raise DefinitionError("RUN_JOURNAL_FAILED", f"cannot write the run journal "
                                  f"{where}: {exc}", where=where,
                                  fix="check the path and its permissions") from exc
        return cls(where, db, header)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunRecord:
        """Open the record of an earlier run (checks it before anything is built)."""
        where = os.fspath(path)
        if not os.path.isfile(where):
            raise DefinitionError(
                "RUN_JOURNAL_MISSING", f"no run journal at {where}", where=where,
                fix="pass the file given to harness run --journal (it is written there)")
        db = cls._connect(where)
        try:
            tables = {r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if not set(_TABLES) <= tables:
                what = ("a ledger journal without a run" if "ledger_journal" in tables
                        else "a runtime journal" if "runtime_commands" in tables
                        else "an SQLite file of something else")
                raise DefinitionError(
                    "RUN_JOURNAL_INVALID", f"{where} is {what}, not the journal of a harness "
                    "run", where=where,
                    fix="pass the file that harness run --runtime URL --journal FILE wrote")
            meta = dict(db.execute("SELECT key, value FROM run_meta").fetchall())
            fmt = meta.get("format")
            if fmt != str(FORMAT_VERSION):
                raise DefinitionError(
                    "RUN_JOURNAL_VERSION", f"{where} is a run journal of format {fmt}; this "
                    f"harness-bt reads format {FORMAT_VERSION}", where=where,
                    fix="resume it with the harness-bt version that wrote it")
            header = RunHeader.from_dict(json.loads(meta["header"]))
        except DefinitionError:
            db.close()
            raise
        except (sqlite3.DatabaseError, KeyError, ValueError, TypeError) as exc:
            db.close()
            raise DefinitionError(
                "RUN_JOURNAL_CORRUPT", f"{where} cannot be read as a run journal: "
                f"{type(exc).__name__}: {exc}", where=where,
                fix="the file is damaged or not a harness-bt journal; nothing can be resumed "
                "from it") from exc
        return cls(where, db, header)

    @staticmethod
    def _connect(where: str) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(where, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            raise DefinitionError(
                "RUN_JOURNAL_CORRUPT", f"{where} is not an SQLite database: {exc}", where=where,
                fix="pass the file that harness run --journal wrote") from exc
        return db

    # ------------------------------------------------------------------ reading

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM run_meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    @property
    def status(self) -> str:
        return self._meta("status") or "running"

    def result(self) -> dict[str, Any] | None:
        """The finished run's result (``TaskResult.to_dict()``), None while running."""
        text = self._meta("result")
        return None if text is None else dict(json.loads(text))

    def progress(self) -> dict[str, Any]:
        """``{"elapsed_s", "ticks", "epoch"}`` as last written (empty before the first)."""
        text = self._meta("progress")
        return {} if text is None else dict(json.loads(text))

    def latest(self) -> RunCheckpoint | None:
        """The newest checkpoint, with the newest time used folded in."""
        try:
            row = self._db.execute(
                "SELECT seq, body FROM run_checkpoints ORDER BY seq DESC LIMIT 1").fetchone()
            if row is None:
                return None
            cp = RunCheckpoint.from_dict(json.loads(row[1]), seq=int(row[0]))
            progress = self.progress()
        except (sqlite3.DatabaseError, KeyError, ValueError, TypeError) as exc:
            raise DefinitionError(
                "RUN_JOURNAL_CORRUPT", f"the last checkpoint in {self.path} cannot be read: "
                f"{type(exc).__name__}: {exc}", where=self.path,
                fix="the file is damaged; nothing can be resumed from it") from exc
        elapsed = float(progress.get("elapsed_s", cp.elapsed_s))
        if elapsed > cp.elapsed_s:
            cp = replace(cp, elapsed_s=elapsed)
        try:
            since = json.loads(self._meta("world") or "null")
        except (sqlite3.DatabaseError, ValueError) as exc:  # refused when checked (memory.py)
            return replace(cp, world={"unreadable": f"{type(exc).__name__}: {exc}"})
        if isinstance(since, dict) and since.get("checkpoint") == cp.seq:
            cp = replace(cp, world=since.get("world"))  # written after the checkpoint
        return cp

    def checkpoints(self) -> list[RunCheckpoint]:
        rows = self._db.execute("SELECT seq, body FROM run_checkpoints ORDER BY seq").fetchall()
        return [RunCheckpoint.from_dict(json.loads(body), seq=int(seq)) for seq, body in rows]

    # ------------------------------------------------------------------ writing

    def checkpoint(self, cp: RunCheckpoint, *, wall: float) -> int:
        """Append a checkpoint (one committed transaction, with the progress it implies)."""
        body = json.dumps(cp.to_dict(), separators=(",", ":"))
        progress = json.dumps({"elapsed_s": cp.elapsed_s, "ticks": cp.ticks,
                               "epoch": cp.epoch})
        self._db.execute("BEGIN")
        try:
            cur = self._db.execute("INSERT INTO run_checkpoints(wall, body) VALUES (?, ?)",
                                   (wall, body))
            self._db.execute("INSERT OR REPLACE INTO run_meta(key, value) VALUES "
                             "('progress', ?)", (progress,))
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return int(cur.lastrowid or 0)

    def progress_update(self, *, elapsed_s: float, ticks: int, epoch: int,
                        world: Mapping[str, Any] | None = None, checkpoint: int = 0) -> None:
        """The time used so far and (``world``) the world memory now, newer than checkpoint
        ``checkpoint`` (one committed transaction)."""
        self._db.execute("BEGIN")
        try:
            self._db.execute("INSERT OR REPLACE INTO run_meta(key, value) VALUES "
                             "('progress', ?)", (json.dumps(
                                 {"elapsed_s": elapsed_s, "ticks": ticks, "epoch": epoch}),))
            if world is not None:
                self._db.execute("INSERT OR REPLACE INTO run_meta(key, value) VALUES "
                                 "('world', ?)", (json.dumps(
                                     {"checkpoint": checkpoint, "world": world},
                                     separators=(",", ":")),))
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def claim(self) -> None:
        """Record this process as the run's owner (pid, host), so a second process refuses to
        resume a run whose harness is still alive."""
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "cmd": _cmdline(os.getpid())}
        self._db.execute("INSERT OR REPLACE INTO run_meta(key, value) VALUES ('owner', ?)",
                         (json.dumps(owner),))

    def live_owner(self) -> int | None:
        """The pid of the process that owns this run, if it is still alive on this host."""
        text = self._meta("owner")
        if text is None:
            return None
        owner = json.loads(text)
        pid = int(owner.get("pid", 0))
        if owner.get("host") != socket.gethostname() or pid <= 0 or pid == os.getpid():
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:  # alive, someone else's
            return pid
        cmd = _cmdline(pid)  # a reused pid runs something else
        return pid if cmd is None or cmd == owner.get("cmd") else None

    def set_epoch(self, epoch: int) -> None:
        """Record a newly taken control epoch before any command is sent under it."""
        progress = self.progress()
        progress["epoch"] = int(epoch)
        self._db.execute("INSERT OR REPLACE INTO run_meta(key, value) VALUES ('progress', ?)",
                         (json.dumps(progress),))

    def finish(self, result: Mapping[str, Any]) -> None:
        self._db.execute("BEGIN")
        self._db.execute("INSERT OR REPLACE INTO run_meta(key, value) VALUES ('result', ?)",
                         (json.dumps(dict(result), default=str),))
        self._db.execute("INSERT OR REPLACE INTO run_meta(key, value) VALUES "
                         "('status', 'finished')")
        self._db.execute("COMMIT")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.DatabaseError):
            self._db.close()

    def __enter__(self) -> RunRecord:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
