"""Tick overhead of the harness against a raw py_trees tick of the same tree shape.

The tree: a root sequence (no memory, so every tick visits every node) of 9 sequences of
leaves; every leaf succeeds except the very last, which keeps the tree RUNNING. 100 nodes =
1 + 9 + 9 x 10; 1,000 nodes = 1 + 9 + 9 x 110.

The harness tick is ``TaskRunner.tick()`` on a one-phase task bound to that tree, against an
idle FakeRuntime (one poll, no command, no observation) on a FakeClock, tracing to memory:
poll, ledger deadlines, reconciliation, the tree tick, the status-change scan, chart events.
The baseline is ``root.tick_once()`` on an identical tree. Both are timed in the same process,
interleaved, as the median over repeated batches. Run: ``python tests/benchmarks/bench_tick.py``.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

import py_trees

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness_bt import FakeClock, Final, Phase, Task, TaskRunner, on
from harness_bt.testing import FakeRuntime


def shape(total: int) -> py_trees.behaviour.Behaviour:
    groups = 9
    leaves = (total - 1 - groups) // groups
    assert 1 + groups + groups * leaves == total, total
    children = []
    for g in range(groups):
        kids: list[py_trees.behaviour.Behaviour] = [
            py_trees.behaviours.Success(f"l{g}_{i}") for i in range(leaves)]
        if g == groups - 1:
            kids[-1] = py_trees.behaviours.Running(f"l{g}_{leaves - 1}")
        children.append(py_trees.composites.Sequence(f"g{g}", memory=False, children=kids))
    return py_trees.composites.Sequence("root", memory=False, children=children)


def harness_runner(total: int) -> TaskRunner:
    clock = FakeClock()
    task = Task("bench", [Phase("work", lambda: shape(total),
                                transitions=[on("succeeded", "done"), on("failed", "done")]),
                          Final("done")])
    runner = TaskRunner(task, bridge=FakeRuntime(clock, observe=False), clock=clock,
                        run_id="bench")
    runner.tick()  # start the chart; the first tick traces every node's first status
    return runner


def per_tick(fn, ticks: int) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    for _ in range(ticks):
        fn()
    return (time.perf_counter() - t0) / ticks


def measure(total: int, *, ticks: int, repeats: int) -> tuple[float, float]:
    raw_root = shape(total)
    raw_root.tick_once()
    runner = harness_runner(total)
    raw, harness = [], []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            raw.append(per_tick(raw_root.tick_once, ticks))
            harness.append(per_tick(runner.tick, ticks))
    finally:
        gc.enable()
    assert runner.phase == "running" and raw_root.status is py_trees.common.Status.RUNNING
    assert runner.tree("work").status is py_trees.common.Status.RUNNING
    return statistics.median(raw), statistics.median(harness)


def main() -> None:
    ratios = []
    for total, ticks in ((100, 400), (1000, 60)):
        raw, harness = measure(total, ticks=ticks, repeats=15)
        ratio = harness / raw
        ratios.append(ratio)
        print(f"{total:5d} nodes: py_trees {raw * 1e6:9.1f} us/tick, harness "
              f"{harness * 1e6:9.1f} us/tick, overhead {(harness - raw) * 1e6:7.1f} us "
              f"({ratio:.3f} x)")
    print(f"tick overhead vs py_trees: {ratios[0]:.2f} x (100 nodes), "
          f"{ratios[1]:.2f} x (1000 nodes)")


if __name__ == "__main__":
    main()
