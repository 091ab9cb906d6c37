"""What actually happened in a chaos run, from the records, not from the harness's belief.

- **starts** come from the exec log the runtime writes at each executor's first step (every
  boot of the runtime appends to the same file); a command id started more than once is a
  **double execution**. The runtime journal's own ``started`` events are counted too.
- **lost**: a command the harness dispatched (its ledger says so) that the runtime has no
  record of, and that the harness did not end as REJECTED or settle by reconciliation.
- **regressions**: a terminal state that later changed: in the harness's ledger history (an
  applied entry that leaves SUCCEEDED / FAILED / CANCELED / REJECTED), or in the runtime's
  record (a lifecycle event after its final one).
- **protection latency**: for each command the runtime held because its lease ran out, the time
  from the lease's expiry to the control step that held it, 0 when that step came before the
  expiry (recorded by the runtime's host).

Journals are read from a consistent copy (SQLite backup), so a file left by a killed process is
read as it was, and never changed.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_bt.errors import HarnessError, reason_code
from harness_bt.ledger import CommandRecord, CommandState, EventKind, HistoryEntry, Ledger
from harness_bt.ledger.states import TERMINAL
from runtime_bridge.host.record import RuntimeReason, RuntimeRecord
from runtime_bridge.host.record_log import read_rows

__all__ = ["RunTruth", "audit", "read_exec_log", "read_ledger", "read_runtime_journal"]

_FINAL_KINDS = frozenset({EventKind.CONTROL_DONE, EventKind.ABORTED, EventKind.STOPPED,
                          EventKind.REJECTED})


def read_exec_log(path: str | os.PathLike[str]) -> Counter[str]:
    """Executor starts per command id (every boot of the runtime)."""
    starts: Counter[str] = Counter()
    if not os.path.exists(path):
        return starts
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if parts:
                starts[parts[0]] += 1
    return starts


def _copy(path: str | os.PathLike[str], into: str) -> str:
    """A consistent copy of a SQLite file (its WAL included), so reading never changes it."""
    dst = os.path.join(into, os.path.basename(os.fspath(path)) + ".copy")
    src = sqlite3.connect(f"file:{os.fspath(path)}?mode=ro", uri=True)
    out = sqlite3.connect(dst)
    try:
        src.backup(out)
    finally:
        src.close()
        out.close()
    return dst


def read_runtime_journal(path: str | os.PathLike[str]) -> dict[str, RuntimeRecord]:
    """Every record in a runtime journal, by command id (its append log included; read
    without changing anything)."""
    return {cid: RuntimeRecord.from_row(row) for cid, row in read_rows(path).items()}


def read_ledger(path: str | os.PathLike[str]) -> tuple[dict[str, CommandRecord],
                                                        list[HistoryEntry]]:
    """The harness ledger's records and full history (from a copy: reopening it marks the
    open commands UNKNOWN in the copy only)."""
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger.open(_copy(path, tmp))
        try:
            return {r.command_id: r for r in ledger.records()}, ledger.history()
        finally:
            ledger.close()


@dataclass
class RunTruth:
    """One run's audit (see the module docstring)."""

    starts: Counter[str] = field(default_factory=Counter)
    journal_starts: Counter[str] = field(default_factory=Counter)
    double_executions: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    protection_latency_s: list[float] = field(default_factory=list)
    stale_epoch_refusals: list[str] = field(default_factory=list)
    dispatched: int = 0
    runtime_records: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def max_protection_latency_s(self) -> float | None:
        return max(self.protection_latency_s) if self.protection_latency_s else None

    def to_dict(self) -> dict[str, Any]:
        return {"double_executions": self.double_executions, "lost": self.lost,
                "regressions": self.regressions,
                "protection_latency_s": self.protection_latency_s,
                "stale_epoch_refusals": self.stale_epoch_refusals,
                "dispatched": self.dispatched, "runtime_records": self.runtime_records,
                "starts": dict(self.starts), "notes": self.notes}


def _runtime_regressions(rec: RuntimeRecord) -> list[str]:
    lifecycle = [e for e in rec.events if e.kind is not EventKind.PROGRESS]
    for i, ev in enumerate(lifecycle):
        if ev.kind in _FINAL_KINDS and i + 1 < len(lifecycle):
            after = lifecycle[i + 1]
            return [f"runtime {rec.command_id}: {ev.kind} (seq {ev.seq}) then "
                    f"{after.kind} (seq {after.seq})"]
    return []


def _ledger_regressions(history: Iterable[HistoryEntry]) -> list[str]:
    out = []
    for h in sorted(history, key=lambda h: h.seq):
        if (h.applied and h.state_before in TERMINAL and h.state_after != h.state_before):
            out.append(f"ledger seq {h.seq}: {h.state_before} -> {h.state_after} ({h.op}, "
                       f"{h.reason})")
    return out


def audit(*, runtime_journal: str | os.PathLike[str], exec_log: str | os.PathLike[str],
          ledgers: Sequence[str | os.PathLike[str]]) -> RunTruth:
    """Audit one run: the runtime's journal and exec log against every harness ledger that
    commanded it."""
    truth = RunTruth()
    truth.starts = read_exec_log(exec_log)
    runtime = read_runtime_journal(runtime_journal) if os.path.exists(runtime_journal) else {}
    truth.runtime_records = len(runtime)
    for cid, rec in runtime.items():
        n = sum(1 for e in rec.events if e.kind is EventKind.STARTED)
        if n:
            truth.journal_starts[cid] = n
        truth.regressions.extend(_runtime_regressions(rec))
        for ev in rec.events:
            if (ev.kind is EventKind.STOPPED and ev.data.get("held")
                    and reason_code(str(ev.reason)) == RuntimeReason.LEASE_EXPIRED
                    and ev.data.get("protection_latency_s") is not None):
                truth.protection_latency_s.append(float(ev.data["protection_latency_s"]))
        if reason_code(rec.reason) == RuntimeReason.STALE_EPOCH:
            truth.stale_epoch_refusals.append(cid)
    truth.double_executions = sorted(
        cid for cid in set(truth.starts) | set(truth.journal_starts)
        if max(truth.starts.get(cid, 0), truth.journal_starts.get(cid, 0)) > 1)
    for path in ledgers:
        if not os.path.exists(path):
            truth.notes.append(f"no ledger at {path}")
            continue
        try:
            records, history = read_ledger(path)
        except HarnessError as exc:
            truth.notes.append(f"unreadable ledger {path}: {exc}")
            continue
        truth.regressions.extend(_ledger_regressions(history))
        for cid, mine in records.items():
            if mine.dispatched_at is None:
                continue
            truth.dispatched += 1
            if cid in runtime:
                continue
            ops = {h.op for h in mine.events}
            if mine.state is CommandState.REJECTED or "reconcile" in ops:
                continue
            truth.lost.append(f"{cid} ({mine.state.value}: {mine.reason})")
    truth.protection_latency_s.sort()
    return truth
