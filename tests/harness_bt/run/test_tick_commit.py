"""The runner commits each tick's ledger entries together, and never lets the runtime act on an
entry that is not on disk yet."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from harness_bt import FakeClock, Ledger, TaskRunner
from harness_bt.run.settings import RunParts
from harness_bt.testing.example import example_runtime, example_skills, fetch_cup_task


def test_each_tick_is_one_commit_and_every_dispatch_is_on_disk_before_the_runtime_sees_it(
        tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    path = tmp_path / "run.db"
    ledger = Ledger.open(path, wall_clock=clock.wall, now=clock.monotonic())
    seen: list[tuple[str, int, int]] = []  # command id, its newest seq, the seq on disk
    dispatch = rt.dispatch

    def watched(command: Any, **kwargs: Any) -> Any:
        on_disk = sqlite3.connect(path)  # what a crash right now would leave
        try:
            (disk,) = on_disk.execute("SELECT MAX(seq) FROM ledger_journal").fetchone()
        finally:
            on_disk.close()
        seen.append((command.command_id, ledger.get(command.command_id).events[-1].seq, disk))
        return dispatch(command, **kwargs)

    rt.dispatch = watched  # type: ignore[method-assign]
    runner = TaskRunner(fetch_cup_task(), bridge=rt, clock=clock, skills=example_skills(),
                        run_id="r1", parts=RunParts(ledger=ledger))
    commits_per_tick = []
    for _ in range(400):
        before = ledger.durable_seq
        runner.tick()
        newest = max((h.seq for h in ledger.history()), default=0)
        assert ledger.durable_seq == newest  # nothing of the tick is left in memory only
        commits_per_tick.append(newest - before)
        if runner.phase == "finished":
            break
        clock.advance(0.05)
    assert runner.result is not None and runner.result.succeeded
    assert [cid.split("/")[1] for cid, _, _ in seen] == [
        "navigate.1", "grasp.1", "grasp.1", "grasp.1", "place.1"]
    assert all(disk >= newest for _, newest, disk in seen), seen
    assert max(commits_per_tick) > 1  # some ticks carried several entries in their one commit
    runner.close()
    ledger.close()
