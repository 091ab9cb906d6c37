"""Journaled runs and ``harness resume``: one SQLite file holds the ledger and the run record.

:func:`start_durable` (``harness run TASK --runtime URL --journal run.db``) creates the file:
the run record's header (task file and digest, run id, runtime, options), then the ledger in
the same file. :func:`open_durable` (``harness resume run.db``) checks the file before anything
is built (missing, corrupt, wrong version, not a run, already finished, task file changed),
reopens the ledger (every command the dead harness left open becomes UNKNOWN, reason
``RESTARTED``) and hands back the last checkpoint, its world memory checked
(:mod:`harness_bt.run.memory`; ``forget_world`` leaves the memory out instead).

A runtime opened for such a run takes a new control epoch (the ``zmq`` runtime: one more than
the runtime's and the record's); :meth:`DurableRun.take_epoch` writes it to the ledger and the
run record before any command goes out under it, so the dead harness's commands are fenced off.

How a resumed run proceeds is described in :mod:`harness_bt.run.run_record` (granularity: the
phase) and :mod:`harness_bt.run.reconcile` (following and settling what was in flight).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_bt._version import __version__
from harness_bt.errors import DefinitionError
from harness_bt.ledger import Ledger, LedgerError
from harness_bt.run.checkpoint import check_memory, forget_world
from harness_bt.run.run_record import RunCheckpoint, RunHeader, RunRecord, file_digest
from harness_bt.runtime.episodes import RunOptions

__all__ = ["FORGOTTEN", "DurableRun", "open_durable", "start_durable"]


@dataclass
class DurableRun:
    """The ledger and run record of one journaled run (both in ``path``)."""

    path: str
    record: RunRecord
    ledger: Ledger
    checkpoint: RunCheckpoint | None = None

    @property
    def header(self) -> RunHeader:
        return self.record.header

    @property
    def run_id(self) -> str:
        return self.header.run_id

    def take_epoch(self, runtime: Any) -> int:
        """Adopt the control epoch the runtime took (``runtime.epoch``), journaled first."""
        epoch = getattr(runtime, "epoch", None)
        if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch > self.ledger.epoch:
            self.record.set_epoch(epoch)
            self.ledger.epoch = epoch
        return self.ledger.epoch

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ledger.close()
        self.record.close()


def start_durable(path: str | os.PathLike[str], *, task_file: str | os.PathLike[str],
                  options: RunOptions) -> DurableRun:
    """Create the record of a new run of ``options`` at ``path`` (refuses an existing
    file); its header keeps what a resume needs: the task file, the runtime, the perception,
    the trace, the task's parameter values and the scene."""
    where = os.fspath(path)
    trace = options.trace
    header = RunHeader(task_file=str(Path(task_file).resolve()),
                       task_digest=file_digest(task_file), task_name=options.task,
                       run_id=uuid.uuid4().hex[:8], bridge=options.bridge,
                       runtime_url=options.runtime_url, perception=options.perception,
                       trace=None if trace is None else str(Path(trace).resolve()),
                       created_wall=time.time(), harness_version=__version__,
                       params=dict(options.params), scene=options.scene)
    record = RunRecord.create(where, header)
    record.claim()
    try:
        ledger = Ledger.open(where)
    except LedgerError:
        record.close()
        raise
    return DurableRun(where, record, ledger)


#: why a run resumed with ``--forget-world`` remembers no object
FORGOTTEN = "harness resume --forget-world: every object is observed again"


def open_durable(path: str | os.PathLike[str], *, forget: bool = False) -> DurableRun:
    """Open the record of an interrupted run for ``harness resume`` (see the module
    docstring); every check runs before the ledger is reopened. ``forget``: resume without
    the checkpoint's world memory (the world may have changed while the harness was dead)."""
    where = os.fspath(path)
    record = RunRecord.open(where)
    try:
        header = record.header
        if record.status == "finished":
            result = record.result() or {}
            raise DefinitionError(
                "RUN_FINISHED", f"the run in {where} already finished: "
                f"{result.get('outcome', '?')} ({result.get('reason', '?')}); nothing to "
                "resume", where=where,
                fix=f"start a new run: harness run {header.task_file} --runtime URL "
                "--journal NEW.db")
        pid = record.live_owner()
        if pid is not None:
            raise DefinitionError(
                "RUN_STILL_ALIVE", f"the harness running {where} is still alive (pid {pid}); "
                "two harnesses must not drive one run", where=where,
                fix=f"stop it first (kill {pid}), or wait for it to end")
        if not os.path.isfile(header.task_file):
            raise DefinitionError(
                "TASK_MISSING", f"the run's task file {header.task_file} is gone",
                where=where, fix="put the task file back where the run was started from")
        if file_digest(header.task_file) != header.task_digest:
            raise DefinitionError(
                "TASK_CHANGED", f"the task file {header.task_file} changed since the run "
                "started (its digest differs); resuming would replay a different task",
                where=where, fix="restore the file as it was, or start a new run")
        checkpoint = record.latest()
        if checkpoint is not None and forget:
            checkpoint = forget_world(checkpoint, FORGOTTEN)
        elif checkpoint is not None:
            check_memory(checkpoint, f"{where}: checkpoint {checkpoint.seq}")
        record.claim()
        ledger = Ledger.open(where)
    except BaseException:
        record.close()
        raise
    return DurableRun(where, record, ledger, checkpoint)
