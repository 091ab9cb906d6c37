"""Chaos table: the pick-and-place task through a real ZeroMQ runtime process, one fault class
per row, audited from the runtime's own records (see ``runtime_bridge.testing.chaos``).

    python tests/benchmarks/chaos.py                       # 3 seeded runs of every fault class
    python tests/benchmarks/chaos.py --runs 1 --faults drop,runtime_kill --seed 7
    python tests/benchmarks/chaos.py --light               # the test suite's light workload
    python tests/benchmarks/chaos.py --harness chaos       # the chaos harness process instead of
                                                           # harness run --runtime / resume

Columns: runs; tasks completed; double executions (a command id whose executor started more
than once, from the runtime's exec log and journal); lost commands (dispatched by the harness,
never recorded by the runtime, not ended REJECTED or reconciled); terminal regressions (a
terminal state that later changed, in the harness's ledger history or the runtime's record);
max protection latency (lease expiry to the runtime's hold: a lease that ends before the next
control step is held at this one, so a hold is late only when the control loop is); the row's
own checks. The row
``none`` is the baseline measured in the same run. Targets: 0 / 0 / 0 in every row, every hold
within one control period, >= 95 % of resumed runs complete, every row check holds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runtime_bridge.testing.chaos import FAULTS, PICK_AND_PLACE, RunOutcome, Workload, run_once  # noqa: E402


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _row(fault: str, outcomes: list[RunOutcome], period_s: float) -> dict[str, object]:
    n = len(outcomes)
    completed = sum(o.completed for o in outcomes)
    doubles = sum(len(o.truth.double_executions) for o in outcomes)
    lost = sum(len(o.truth.lost) for o in outcomes)
    regressions = sum(len(o.truth.regressions) for o in outcomes)
    latencies = [v for o in outcomes for v in o.truth.protection_latency_s]
    loops = [o.details.get("runtime_loop") or {} for o in outcomes]
    loop_p99 = [float(x["period_p99_ms"]) for x in loops if x.get("period_p99_ms") is not None]
    checks = [(name, held) for o in outcomes for name, held in o.checks.items()]
    failed = sorted({name for name, held in checks if not held})
    missed = []
    if doubles or lost or regressions:
        missed.append("0/0/0")
    if latencies and max(latencies) > period_s:
        missed.append("hold within one period")
    if fault == "harness_kill" and n and completed / n < 0.95:
        missed.append(">=95% resumed complete")
    if failed:
        missed.append("checks: " + ", ".join(failed))
    return {
        "fault": fault, "runs": n, "completed": completed,
        "completion": completed / n if n else 0.0, "double": doubles, "lost": lost,
        "regressions": regressions,
        "max_protection_ms": None if not latencies else round(max(latencies) * 1000, 1),
        "median_protection_ms": None if not latencies else round(
            statistics.median(latencies) * 1000, 1),
        "holds": len(latencies),
        "loop_p99_ms": max(loop_p99) if loop_p99 else None,
        "checks": f"{sum(h for _, h in checks)}/{len(checks)}",
        "median_wall_s": round(statistics.median(o.wall_s for o in outcomes), 1) if n else None,
        "targets": "met" if not missed else "MISSED: " + "; ".join(missed),
    }


def _print_table(rows: list[dict[str, object]], period_s: float) -> None:
    head = (f"{'fault':<17} {'runs':>4} {'completed':>9} {'double':>6} {'lost':>4} "
            f"{'regress':>7} {'max prot ms':>11} {'med prot ms':>11} {'holds':>5} "
            f"{'loop p99 ms':>11} {'checks':>7} {'med wall s':>10}  targets")
    print(head)
    print("-" * len(head))
    for r in rows:
        mx, md = r["max_protection_ms"], r["median_protection_ms"]
        print(f"{r['fault']:<17} {r['runs']:>4} {r['completed']!s:>9} {r['double']:>6} "
              f"{r['lost']:>4} {r['regressions']:>7} {'-' if mx is None else mx:>11} "
              f"{'-' if md is None else md:>11} {r['holds']:>5} "
              f"{'-' if r['loop_p99_ms'] is None else r['loop_p99_ms']:>11} {r['checks']:>7} "
              f"{r['median_wall_s']!s:>10}  {r['targets']}")
    print(f"(one control period = {_ms(period_s)} ms; loop p99 = the runtime's real period "
          "between control steps, 99th percentile, worst run: a lease that ends before the next "
          "step is held at this one, so a hold is late only when a step is)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="seeded runs per fault class")
    p.add_argument("--faults", default=",".join(FAULTS),
                   help=f"comma-separated subset of {', '.join(FAULTS)}")
    p.add_argument("--seed", type=int, default=0, help="first seed (run i uses seed + i)")
    p.add_argument("--light", action="store_true", help="the test suite's light workload")
    p.add_argument("--harness", choices=("cli", "chaos"), default="cli",
                   help="cli: harness run --runtime / harness resume (default); chaos: the "
                   "chaos harness process (python -m runtime_bridge.testing.chaos harness)")
    p.add_argument("--keep", default=None, help="keep every run's files under this directory")
    p.add_argument("--json", default=None, help="also write every run's record here")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up children on TERM too
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        p.error(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    workload: Workload = dataclasses.replace(PICK_AND_PLACE, harness=args.harness)
    if args.light:
        from tests.runtime_bridge.testing.workload import LIGHT

        workload = LIGHT
    period_s = 1.0 / workload.control_hz
    began = time.monotonic()
    rows, records = [], []
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        for fault in faults:
            outcomes = []
            for i in range(args.runs):
                seed = args.seed + i
                outcome = run_once(fault, seed, base / f"{fault}-{seed}", workload)
                outcomes.append(outcome)
                records.append(outcome.to_dict())
                t = outcome.truth
                print(f"  {fault:<17} seed {seed:<3} {outcome.outcome:<26} "
                      f"double {len(t.double_executions)} lost {len(t.lost)} regress "
                      f"{len(t.regressions)} holds {len(t.protection_latency_s)} "
                      f"wall {outcome.wall_s:.1f}s", flush=True)
            rows.append(_row(fault, outcomes, period_s))
    wall = time.monotonic() - began
    print()
    print(f"chaos: task {Path(workload.task).name if '/' in workload.task else workload.task}, "
          f"harness {workload.harness}, {args.runs} run(s) per fault class, seeds "
          f"{args.seed}..{args.seed + args.runs - 1}")
    _print_table(rows, period_s)
    baseline = next((r for r in rows if r["fault"] == "none"), None)
    if baseline is not None:
        print(f"completion vs the fault-free baseline ({baseline['completion']:.0%}): "
              + ", ".join(f"{r['fault']} {r['completion']:.0%}" for r in rows
                          if r["fault"] != "none"))
    missed = [str(r["fault"]) for r in rows if r["targets"] != "met"]
    print(f"targets: {'all met' if not missed else 'MISSED in ' + ', '.join(missed)}")
    print(f"wall time: {wall:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "runs": records,
                                               "wall_s": round(wall, 1)}, indent=1))
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
