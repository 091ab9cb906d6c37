"""Ledger throughput and recovery, against a raw SQLite baseline measured in the same run.

Prints: full lifecycles per second (submit, dispatch, started, control_done, verdict) in memory
and durable (WAL, synchronous=NORMAL: one commit per call), the reopen time of a journal of
100,000 events, and a raw SQLite baseline (one committed INSERT per row, same row size).
Targets: >= 20,000 lifecycles/s in memory, >= 2,000/s durable, reopen <= 1 s.
Usage: python tests/benchmarks/bench_ledger.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from harness_bt.ledger import Command, CommandEvent, Ledger

CALLS_PER_LIFECYCLE = 5


def lifecycles(ledger: Ledger, n: int, offset: int = 0) -> float:
    apply, verdict = ledger.apply, ledger.verdict
    t0 = time.perf_counter()
    for i in range(offset, offset + n):
        cid = f"cmd-{i}"
        cmd = Command(command_id=cid, task_id="bench", robot_id="r1", skill="grasp",
                      params={"object": "red_cube", "force_n": 20.0}, resources=("gripper",),
                      start_within_ms=500, execution_timeout_ms=10_000)
        ledger.submit(cmd, now=0.0)
        ledger.dispatch(cid, now=0.0)
        apply(CommandEvent(cid, 1, "started"), now=0.0)
        apply(CommandEvent(cid, 2, "control_done"), now=0.0)
        verdict(cid, "SUCCEEDED", evidence=["finger gap 0.041 m"], now=0.0)
    return n / (time.perf_counter() - t0)


def raw_sqlite(path: Path, n: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    body = json.dumps({"op": "move", "id": "cmd-000000", "t": 0.0, "to": "RUNNING",
                       "reason": "STARTED", "src": "event", "rseq": 1, "kind": "started",
                       "seq": 0, "w": 1.7e9})
    t0 = time.perf_counter()
    for i in range(n):
        db.execute("INSERT INTO t(seq, body) VALUES (?, ?)", (i, body))
    rate = n / (time.perf_counter() - t0)
    db.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    mem, disk, raw, reopen = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            mem.append(lifecycles(Ledger(), 20_000))
            led = Ledger.open(Path(tmp) / f"durable-{r}.db")
            disk.append(lifecycles(led, 4_000))
            led.close()
            raw.append(raw_sqlite(Path(tmp) / f"raw-{r}.db", 20_000))
        # a journal of 100,000 events: 20,000 lifecycles x 5 calls (+1 dispatch mark each)
        big = Path(tmp) / "big.db"
        led = Ledger.open(big)
        lifecycles(led, 100_000 // CALLS_PER_LIFECYCLE)
        events = len(led.history())
        led.close()
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            again = Ledger.open(big)
            reopen.append(time.perf_counter() - t0)
            assert len(again) == 100_000 // CALLS_PER_LIFECYCLE
            again.close()
    m, d, q, o = (statistics.median(x) for x in (mem, disk, raw, reopen))
    print(f"repeats: {args.repeats} (medians below)")
    print(f"in-memory lifecycles/s:  {m:10,.0f}   target >= 20,000  ({m / 20_000:.2f}x target)")
    print(f"durable lifecycles/s:    {d:10,.0f}   target >=  2,000  ({d / 2_000:.2f}x target)")
    print(f"raw SQLite commits/s:    {q:10,.0f}   (one committed INSERT per row, same DB settings)")
    print(f"durable ledger calls/s:  {d * CALLS_PER_LIFECYCLE:10,.0f}   "
          f"= {d * CALLS_PER_LIFECYCLE / q:.2f}x the raw SQLite commit rate")
    print(f"reopen of {events:,} events: {o:.3f} s   target <= 1 s")


if __name__ == "__main__":
    main()
