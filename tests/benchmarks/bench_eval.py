"""Evaluation benchmark: what ``harness eval`` gets out of more workers, Ray against local
processes, and what the driver itself costs per episode.

1. Episodes per minute with 1 and 2 local worker processes, the same seeds (real episodes of
   ``trees/pick_cube.yaml`` on the built-in simulator, seeds from 1000; the tests never use
   them). Target on a 2-core machine: 2 workers at least 1.7x one.
2. Ray tasks (a local Ray instance, started inside the timing: what ``--ray`` costs) against
   processes at the same number of workers. Target: at least 0.85x.
3. The driver's cost per episode (store writes and bookkeeping, measured inside the driver),
   the bytes of one result row, and the results store's write limit: rows committed per second
   one at a time (``synchronous=FULL``, as the driver writes them), the rate a cluster's results
   would have to stay under.

    python tests/benchmarks/bench_eval.py                 # 8 episodes per configuration
    python tests/benchmarks/bench_eval.py --episodes 4    # a quicker look
    python tests/benchmarks/bench_eval.py --no-ray
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

from harness_bt.eval.plan import EpisodeSpec  # noqa: E402
from harness_bt.eval.session import EvalConfig, run_evaluation  # noqa: E402
from harness_bt.eval.store import ResultsStore  # noqa: E402
from harness_bt.testing.eval_rigs import quick_episode  # noqa: E402

TASK = ROOT / "trees" / "pick_cube.yaml"


def timed(name: str, episodes: int, workers: int, ray: str | None,
          out: Path) -> tuple[float, dict[int, str], float]:
    config = EvalConfig(tasks=(TASK,), out=out / name, episodes=episodes, seed=1000,
                        workers=workers, ray=ray, traces=False)
    began = time.perf_counter()
    result = run_evaluation(config)
    wall = time.perf_counter() - began
    per_min = 60.0 * len(result.rows) / wall
    outcomes = {r["seed"]: r["outcome"] for r in result.rows}
    driver = result.run.driver_s / max(1, result.run.recorded)
    print(f"  {name:<14} {len(result.rows)} episodes in {wall:6.1f} s: {per_min:5.2f} "
          f"episodes/min; driver {1000 * driver:.2f} ms per episode", flush=True)
    return per_min, outcomes, driver


def store_limit(rows: int = 400) -> tuple[float, int]:
    """Rows committed per second, one commit per row as the driver does, and a row's bytes."""
    spec = EpisodeSpec(task="pick_cube", task_file=str(TASK), digest="d" * 64,
                       condition="slip=0.3,nudge=0.3,occlude=0.2", seed=0)
    row: dict[str, Any] = quick_episode(spec)
    row["trace"] = "/data/eval/traces/pick_cube.0123abcd.slip_0.3.1234.jsonl"
    size = len(json.dumps(row).encode())
    rates = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp, ResultsStore.in_dir(tmp) as store:
            began = time.perf_counter()
            for k in range(rows):
                store.record({**row, "episode": str(k), "seed": k})
            rates.append(rows / (time.perf_counter() - began))
    return statistics.median(rates), size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray comparison")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        print(f"{args.episodes} episodes of {TASK.name} per configuration, seeds from 1000")
        one, o1, d1 = timed("processes x1", args.episodes, 1, None, out)
        two, o2, d2 = timed("processes x2", args.episodes, 2, None, out)
        print(f"2 workers / 1 worker: {two / one:.2f}x (target >= 1.7x); same outcomes per "
              f"seed: {o1 == o2}")
        drivers = [d1, d2]
        if not args.no_ray:
            ray, o3, d3 = timed("ray x2", args.episodes, 2, "", out)
            drivers.append(d3)
            print(f"Ray / processes at 2 workers: {ray / two:.2f}x (target >= 0.85x); same "
                  f"outcomes per seed: {o3 == o1}")
    limit, size = store_limit()
    driver = statistics.median(drivers)
    print(f"driver cost: {1000 * driver:.2f} ms per episode (median of the runs above); "
          f"a result row: {size} bytes")
    print(f"results store limit: {limit:.0f} rows/s committed one at a time; at "
          f"{one:.1f} episodes/min per worker, {limit * 60 / max(one, 1e-9):.0f} workers' "
          f"results would saturate it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
