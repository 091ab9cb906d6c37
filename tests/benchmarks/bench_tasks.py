"""Task benchmark: seeded episodes of pick_cube and pick_and_place on the built-in simulator,
clean and with injected faults, through ``harness_bt.run.episodes.run_episodes`` (what ``harness
run`` does).

For every (task, condition) it prints the task's own success rate beside the simulator's
metric, false successes (harness SUCCEEDED, simulator failed), unknowns, retries, recoveries,
time and decision latency, and the faults the simulator fired. The baseline, measured in the
same run on the same seeds, is the simulator's scripted oracle (it reads ground truth and has
no recovery) under the same fault rates: the ratio shows what perception, evaluation and
recovery cost or buy.

Ground truth is read here only, after each run, to cross-check the simulator's verdict as the
runtime inferred it (episode ended early = success) against the simulator's own records.

    python tests/benchmarks/bench_tasks.py                 # 20 episodes per task and condition
    python tests/benchmarks/bench_tasks.py --episodes 3    # a quick look
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

from harness_bt.run.episodes import RunReport, percentile, run_episodes  # noqa: E402
from harness_bt.runtime.episodes import RunOptions  # noqa: E402
from harness_bt.spec import load_task  # noqa: E402
from runtime_bridge.inproc import open_runtime  # noqa: E402
from runtime_bridge.sim import FaultRates, ScriptedPicker, SimConfig, SimEnv  # noqa: E402

FAULTS = {"slip": 0.3, "nudge": 0.3, "occlude": 0.2}
TARGETS = {("pick_cube", "clean"): 0.95, ("pick_and_place", "clean"): 0.90,
           ("pick_cube", "faults"): 0.80, ("pick_and_place", "faults"): 0.80}


def oracle(task: str, episodes: int, seed: int, faults: dict[str, float]) -> float:
    """Success rate of the scripted ground-truth picker (no recovery) on the same seeds and
    fault rates (no cameras, so occlusion does not apply)."""
    cfg = SimConfig(scenes=(task,), episodes=episodes, seed=seed, cameras=(),
                    faults=FaultRates(**faults))
    with SimEnv(cfg) as env:
        entry = env.reset()
        while entry["obs"] is not None:
            picker = ScriptedPicker(place=task == "pick_and_place")
            picker.start(entry["obs"]["ee_pose_state"], env.ground_truth())
            episode = env.episode
            while entry["obs"] is not None and env.episode is episode:
                entry = env.step(picker.action())
        return float(np.mean([r["success"] for r in env.results()["episodes"]]))


def run(task: str, condition: str, episodes: int, seed: int) -> tuple[RunReport, dict[str, Any]]:
    options = RunOptions(task=task, episodes=episodes, seed=seed,
                         faults=FAULTS if condition == "faults" else {})
    runtime = open_runtime(options)
    try:
        report = run_episodes(load_task(ROOT / "trees" / f"{task}.yaml"), options,
                              runtime=runtime)
        truth = runtime.backend.env.results()  # type: ignore[attr-defined]
    finally:
        runtime.close()
    return report, truth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", default="pick_cube,pick_and_place")
    parser.add_argument("--conditions", default="clean,faults")
    parser.add_argument("--faults", default=None,
                        help="fault rates of the 'faults' condition (default "
                             "slip=0.3,nudge=0.3,occlude=0.2)")
    args = parser.parse_args()
    if args.faults:
        FAULTS.clear()
        FAULTS.update({k: float(v) for k, v in (p.split("=") for p in args.faults.split(","))})
    rows = []
    failures = []
    for task in args.tasks.split(","):
        for condition in args.conditions.split(","):
            base = oracle(task, args.episodes, args.seed,
                          FAULTS if condition == "faults" else {})
            began = time.perf_counter()
            report, truth = run(task, condition, args.episodes, args.seed)
            wall = time.perf_counter() - began
            recorded = {r["index"]: r for r in truth["episodes"]}
            mismatch = sum(
                1 for e in report.episodes if e.sim_success is not None and e.index in recorded
                and bool(recorded[e.index]["success"] >= 1.0) != e.sim_success)
            fired: dict[str, int] = {}
            for r in truth["episodes"]:
                for kind in {f["kind"] for f in r["faults"]}:
                    fired[kind] = fired.get(kind, 0) + 1
            lat = [v * 1000 for v in report.decision_latency_s()]
            n = len(report.episodes)
            rows.append({
                "task": task, "condition": condition, "n": n,
                "success": report.success_rate or 0.0, "sim": report.sim_success_rate or 0.0,
                "oracle": base, "false": report.false_success_count,
                "unknown": report.unknown_count / max(n, 1),
                "looks": sum(e.unknown_verdicts for e in report.episodes) / max(n, 1),
                "retries": sum(e.retries for e in report.episodes) / max(n, 1),
                "recoveries": sum(e.recoveries for e in report.episodes) / max(n, 1),
                "sim_s": sum(e.sim_time_s for e in report.episodes) / max(n, 1),
                "wall_s": wall / max(n, 1), "p50": percentile(lat, 50), "p99": percentile(lat, 99),
                "fired": fired, "mismatch": mismatch,
                "target": TARGETS.get((task, condition)),
            })
            for e in report.episodes:
                if not e.succeeded or e.false_success or e.sim_success is not True:
                    failures.append(f"{task}/{condition} ep {e.index} (seed {e.seed}): harness "
                                    f"{e.reason}, simulator {e.sim_success} ({e.sim_ended_by}); "
                                    f"faults {recorded.get(e.index, {}).get('faults')}; "
                                    f"not succeeded: {e.details.get('command_reasons')}")
            print(f"  {task}/{condition}: {n} episodes in {wall:.0f} s", file=sys.stderr)
    header = (f"{'task':15} {'cond':6} {'n':>3} {'success':>8} {'sim':>6} {'oracle':>7} "
              f"{'ratio':>6} {'false':>5} {'unknown':>7} {'unk.v':>6} {'retry':>6} {'recov':>6} "
              f"{'sim s':>6} {'wall s':>6} {'p50 ms':>7} {'p99 ms':>7}  faults fired / target")
    print(header)
    print("-" * len(header))
    legend = ("success: the task's own evaluation; sim: the simulator's metric; oracle: the "
              "scripted ground-truth picker, no recovery, same seeds and fault rates (ratio = "
              "success / oracle); false: harness SUCCEEDED but simulator failed; unknown: "
              "episodes ending unknown; unk.v: UNKNOWN verdict looks per episode; retry / recov: "
              "per episode; sim s / wall s: per episode; p50 / p99: decision latency (wall)")
    ok = True
    for r in rows:
        ratio = r["success"] / r["oracle"] if r["oracle"] else float("nan")
        verdict = ""
        if r["target"] is not None:
            met = r["success"] >= r["target"] and r["false"] == 0
            ok &= met
            verdict = f"target >= {r['target']:.0%}: {'met' if met else 'NOT MET'}"
        print(f"{r['task']:15} {r['condition']:6} {r['n']:>3} {r['success']:>8.0%} "
              f"{r['sim']:>6.0%} {r['oracle']:>7.0%} {ratio:>6.2f} {r['false']:>5} "
              f"{r['unknown']:>7.0%} {r['looks']:>6.2f} {r['retries']:>6.2f} "
              f"{r['recoveries']:>6.2f} "
              f"{r['sim_s']:>6.1f} {r['wall_s']:>6.1f} {r['p50'] or 0:>7.2f} "
              f"{r['p99'] or 0:>7.2f}  {r['fired'] or '-'} {verdict}"
              + (f" [{r['mismatch']} inferred simulator verdicts differ from its records]"
                 if r["mismatch"] else ""))
    print(legend)
    if failures:
        print("\nepisodes that did not succeed (or whose simulator verdict is not success):")
        for f in failures:
            print("  " + f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
