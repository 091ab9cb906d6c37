"""What listing every episode costs the evaluation report: ``build_report`` + ``write_report``
(JSON, the page with its three matplotlib plots, the text) for N stored rows, against a
baseline measured in the same run: writing the same rows as plain JSON (the least any report
of every episode does). Medians of ``--rounds`` rounds; rows from the quick rig (no
simulator), half of them with a trace file on disk.

    python tests/benchmarks/bench_report.py --rows 200 2000 --rounds 3
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
sys.path.insert(0, str(ROOT))

from harness_bt.eval.plan import EpisodeSpec  # noqa: E402
from harness_bt.eval.report import build_report, write_report  # noqa: E402
from harness_bt.testing.eval_rigs import quick_episode  # noqa: E402


def rows(n: int, out: Path) -> list[dict[str, Any]]:
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    made = []
    for seed in range(n):
        spec = EpisodeSpec(task="pick", task_file="pick.yaml", digest="d" * 64,
                           condition="slip=0.3", seed=seed)
        row = quick_episode(spec)
        row["phase_times"] = {"observe": 0.1, "approach": 1.0, "grasp": 2.5, "evaluate": 0.4}
        if seed % 2:
            trace = traces / f"pick.{seed}.jsonl"
            trace.write_text("{}\n")
            row["trace"] = str(trace)
        made.append(row)
    return made


def median_s(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        write_report(build_report(rows(4, out / "warm"), title="warm-up",
                                  out_dir=out / "warm"), out / "warm")  # imports, fonts
        measured: list[tuple[int, float]] = []
        for n in args.rows:
            data = rows(n, out / str(n))

            def baseline(data: list[dict[str, Any]] = data, n: int = n) -> None:
                (out / str(n) / "rows.json").write_text(json.dumps(data))

            def report(data: list[dict[str, Any]] = data, n: int = n) -> None:
                where = out / str(n)
                write_report(build_report(data, title="bench", out_dir=where), where)

            base = median_s(baseline, args.rounds)
            full = median_s(report, args.rounds)
            page = (out / str(n) / "report.html").stat().st_size
            measured.append((n, full))
            print(f"{n:6d} episodes: report {1000 * full:8.1f} ms ({1000 * full / n:.3f} ms "
                  f"per episode), plain JSON {1000 * base:6.1f} ms; report / JSON "
                  f"{full / base:6.1f}x; page {page / 1024:.0f} KiB", flush=True)
        if len(measured) > 1:
            (n0, t0), (n1, t1) = measured[0], measured[-1]
            print(f"each episode past {n0} adds {1000 * (t1 - t0) / (n1 - n0):.3f} ms; the rest "
                  f"({1000 * (t0 - n0 * (t1 - t0) / (n1 - n0)):.0f} ms) is fixed (plots, files)")


if __name__ == "__main__":
    main()
