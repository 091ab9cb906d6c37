"""Real worker processes (rig episodes, no simulator): a worker killed mid-episode has its
episode rerun with the same seed and recorded once; one killed twice is recorded
``worker_crashed``; a driver killed with SIGKILL takes its workers with it, and the same command
run again records every episode exactly once."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from harness_bt.errors import HarnessError
from harness_bt.eval.session import EvalConfig, run_evaluation
from tests.conftest import ROOT, Processes, python

pytestmark = pytest.mark.slow  # real episodes, processes or a notebook kernel

PICK = ROOT / "trees" / "pick_cube.yaml"
CRASHING = "harness_bt.testing.eval_rigs:crashing_episode"
QUICK = "harness_bt.testing.eval_rigs:quick_episode"


def test_a_worker_killed_mid_episode_reruns_it_once_and_twice_is_worker_crashed(
        tmp_path: Path) -> None:
    config = EvalConfig(tasks=(PICK,), out=tmp_path / "out", episodes=5, seed=0, workers=2,
                        traces=False, episode_fn=CRASHING,
                        extra={"crash_once": [1, 3], "crash_always": [4],
                               "marker_dir": str(tmp_path)})
    result = run_evaluation(config)
    by_seed = {r["seed"]: (r["outcome"], r["attempts"]) for r in result.rows}
    assert by_seed == {0: ("aborted", 1), 1: ("succeeded", 2), 2: ("succeeded", 1),
                       3: ("aborted", 2), 4: ("worker_crashed", 2)}
    assert (result.run.recorded, result.run.reruns, len(result.run.crashes)) == (5, 3, 4)
    assert "died (exit code -9)" in result.run.crashes[0]
    rerun = run_evaluation(config)
    assert (rerun.run.recorded, rerun.run.skipped) == (0, 5)
    assert len(rerun.rows) == 5


def test_an_episode_that_raises_in_a_worker_stops_the_evaluation(tmp_path: Path) -> None:
    config = EvalConfig(tasks=(PICK,), out=tmp_path, episodes=2, workers=1, traces=False,
                        episode_fn="harness_bt.testing.eval_rigs:no_such_function")
    with pytest.raises(HarnessError, match=r"EPISODE_ERROR: 1 episode.*UNKNOWN_EPISODE_FN"):
        run_evaluation(config)


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out.update(int(p) for p in (task / "children").read_text().split())
    return out


def _rows(store: Path) -> list[tuple[int, float, int]]:
    if not store.exists():
        return []
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT seed, recorded_at, attempts FROM episodes ORDER BY seed"
                          ).fetchall()
    except sqlite3.OperationalError:
        return []  # the table is not there yet
    finally:
        db.close()


def _until(check, what: str, limit_s: float = 120.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit_s
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)
    return value


def test_sigkill_of_the_driver_then_a_rerun_records_every_episode_exactly_once(
        tmp_path: Path, processes: Processes) -> None:
    gate = tmp_path / "gate"
    out = tmp_path / "out"
    argv = python("-m", "harness_bt.cli", "eval", str(PICK), "--episodes", "6", "--workers",
                  "2", "--out", str(out), "--no-trace", "--json", "--episode-fn", QUICK)
    driver = processes.start(*argv, env={"HARNESS_EVAL_RIG_GATE": str(gate)})
    store = out / "results.sqlite"
    _until(lambda: len(_rows(store)) == 2, "seeds 0 and 1 to be recorded")
    workers = _until(lambda: (w if len(w := _children(driver.pid)) >= 2 else None),
                     "both workers")
    before = _rows(store)
    driver.send_signal(signal.SIGKILL)
    assert driver.wait(30) == -signal.SIGKILL
    _until(lambda: not any(Path(f"/proc/{w}").exists() and
                           "zombie" not in Path(f"/proc/{w}/status").read_text()
                           for w in workers), "the workers to die with their driver")
    assert [seed for seed, _, _ in before] == [0, 1]
    assert _rows(store) == before  # the episodes in flight were lost, nothing else
    gate.touch()
    again = processes.start(*argv)
    stdout, _ = again.communicate(timeout=120)
    assert again.returncode == 0
    after = _rows(store)
    assert [seed for seed, _, _ in after] == [0, 1, 2, 3, 4, 5]
    assert after[:2] == before  # recorded before the kill: kept as they were
    assert [attempts for _, _, attempts in after] == [1] * 6
    report = orjson.loads(stdout)
    assert [e["seed"] for e in report["episodes"]] == [0, 1, 2, 3, 4, 5]
    assert report["summary"][0]["n"] == 6


def test_the_pool_leaves_no_process_behind(tmp_path: Path) -> None:
    from harness_bt.eval.plan import EpisodeSpec
    from harness_bt.eval.workers import ProcessPool

    pool = ProcessPool(2, episode_fn=QUICK)
    try:
        for seed in (1, 2):
            pool.submit(EpisodeSpec(task="t", task_file="t.yaml", digest="d",
                                    condition="clean", seed=seed))
        assert pool.free == 0
        events = []
        while len([e for e in events if e.kind == "done"]) < 2:
            events.extend(pool.wait())
        assert sorted(e.row["seed"] for e in events if e.kind == "row") == [1, 2]
        pids = pool.pids()
        assert len(pids) == 2 and os.getpid() not in pids
    finally:
        pool.close()
    assert pool.pids() == []
