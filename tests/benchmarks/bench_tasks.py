"""Task benchmark: every task of the library on the built-in simulator, for every colour of
target of the parameterised ones, clean and with injected faults, through
``harness_bt.run.episodes.run_episodes`` (what ``harness run`` does).

For every (task, parameters, condition) it prints the task's own success rate beside the
simulator's metric, false successes (harness SUCCEEDED, simulator failed), unknowns, retries,
recoveries, time and decision latency, and the faults the simulator fired. The baseline,
measured in the same run on the same seeds, is the simulator's scripted oracle (it reads ground
truth and has no recovery) under the same fault rates: the ratio shows what perception,
evaluation and recovery cost or buy. Seeds start at 1000: the tests never use them.

Ground truth is read here only, after each run, to cross-check the simulator's verdict as the
runtime inferred it (episode ended early = success) against the simulator's own records.

    python tests/benchmarks/bench_tasks.py                   # 20 episodes per row, 2 jobs
    python tests/benchmarks/bench_tasks.py --episodes 3      # a quick look
    python tests/benchmarks/bench_tasks.py --tasks stack,sort --conditions clean
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

from harness_bt.authoring import load_task  # noqa: E402
from harness_bt.authoring.scenes import with_scene  # noqa: E402
from harness_bt.run.episodes import percentile, run_episodes  # noqa: E402
from harness_bt.runtime.episodes import RunOptions  # noqa: E402
from runtime_bridge.inproc import open_runtime  # noqa: E402
from runtime_bridge.sim import FaultRates, ScriptedPicker, SimConfig, SimEnv  # noqa: E402

FAULTS = {"slip": 0.3, "nudge": 0.3, "occlude": 0.2}
CUBES = ("red_cube", "green_cube", "blue_cube")
#: task -> the parameter sets of its rows (every colour of target)
ROWS: dict[str, list[dict[str, Any]]] = {
    "pick": [{"target": c} for c in CUBES],
    "pick_and_place": [{"target": c} for c in ("red_cube", "green_cube")],
    "stack": [{"top": t, "bottom": b} for t, b in zip(CUBES, CUBES[1:] + CUBES[:1],
                                                      strict=True)],
    "place_at": [{"target": c} for c in CUBES],
    "sort": [{}],
}
TARGETS = {("sort", "clean"): 0.80, ("sort", "faults"): 0.70}
DEFAULT_TARGET = {"clean": 0.90, "faults": 0.80}
SORT_SLOTS = ([-0.05, -0.05], [-0.05, 0.05], [0.03, 0.0])


def _jobs(task: str, params: dict[str, Any], truth: dict[str, Any]) -> list[Any] | None:
    """What the oracle moves where (TCP release points), from the ground truth."""
    objects = truth["objects"]
    if task == "pick":
        return [(params["target"], [])]
    if task == "pick_and_place":
        return None  # the picker's own: the target into the tray
    if task == "stack":
        bottom = objects[params["bottom"]]["position"]
        return [(params["top"], [bottom[0], bottom[1], bottom[2] + 0.042])]
    if task == "place_at":
        start = objects[params["target"]]["position"]
        return [(params["target"], [start[0], start[1] + 0.1, start[2] + 0.004])]
    tray = objects["tray"]["position"]
    reds = sorted(n for n in objects if n.startswith("red_cube"))
    return [(n, [tray[0] + dx, tray[1] + dy, None]) for n, (dx, dy) in zip(reds, SORT_SLOTS,
                                                                           strict=False)]


def oracle(task: str, params: dict[str, Any], episodes: int, seed: int,
           faults: dict[str, float]) -> float:
    """Success rate of the scripted ground-truth picker (no recovery) on the same scene, seeds
    and fault rates (no cameras, so occlusion does not apply)."""
    scene = load_task(ROOT / "trees" / f"{task}.yaml", params=params).scene
    cfg = SimConfig(scenes=(scene,), params=params, episodes=episodes, seed=seed, cameras=(),
                    num_steps=1200, faults=FaultRates(**faults))
    with SimEnv(cfg) as env:
        entry = env.reset()
        while entry["obs"] is not None:
            truth = env.ground_truth()
            picker = ScriptedPicker(place=task == "pick_and_place")
            picker.start(entry["obs"]["ee_pose_state"], truth, _jobs(task, params, truth))
            episode = env.episode
            while entry["obs"] is not None and env.episode is episode:
                entry = env.step(picker.action())
        return float(np.mean([r["success"] or 0.0 for r in env.results()["episodes"]]))


def _kinds(faults: list[dict[str, Any]]) -> dict[str, int]:
    """How many faults of each kind fired (an occluded camera fires every few steps)."""
    out: dict[str, int] = {}
    for f in faults:
        out[f["kind"]] = out.get(f["kind"], 0) + 1
    return out


def row(task: str, params: dict[str, Any], condition: str, episodes: int,
        seed: int) -> dict[str, Any]:
    """One row: the harness's run and the oracle's, on the same seeds."""
    faults = FAULTS if condition == "faults" else {}
    base = oracle(task, params, episodes, seed, faults)
    loaded = load_task(ROOT / "trees" / f"{task}.yaml", params=params)
    options = with_scene(RunOptions(task=task, scene=loaded.scene, params=loaded.params,
                                    episodes=episodes, seed=seed, faults=faults))
    began = time.perf_counter()
    runtime = open_runtime(options)
    try:
        report = run_episodes(loaded, options, runtime=runtime)
        truth = runtime.backend.env.results()  # type: ignore[attr-defined]
    finally:
        runtime.close()
    wall = time.perf_counter() - began
    recorded = {r["index"]: r for r in truth["episodes"]}
    mismatch = sum(
        1 for e in report.episodes if e.sim_success is not None and e.index in recorded
        and bool((recorded[e.index]["success"] or 0.0) >= 1.0) != e.sim_success)
    fired: dict[str, int] = {}
    for r in truth["episodes"]:
        for kind in {f["kind"] for f in r["faults"]}:
            fired[kind] = fired.get(kind, 0) + 1
    lat = [v * 1000 for v in report.decision_latency_s()]
    n = len(report.episodes)
    failures = [
        f"{task} {params}/{condition} ep {e.index} (seed {e.seed}): harness {e.reason}, "
        f"simulator {e.sim_success} ({e.sim_ended_by}); faults "
        f"{_kinds(recorded.get(e.index, {}).get('faults') or [])}; not succeeded: "
        f"{e.details.get('command_reasons')}"
        for e in report.episodes if not e.succeeded or e.false_success or e.sim_success is not True]
    return {
        "task": task, "params": ",".join(str(v).replace("_cube", "") for v in params.values())
        or "-", "condition": condition, "n": n,
        "success": report.success_rate or 0.0, "sim": report.sim_success_rate or 0.0,
        "oracle": base, "false": report.false_success_count,
        "unknown": report.unknown_count / max(n, 1),
        "looks": sum(e.unknown_verdicts for e in report.episodes) / max(n, 1),
        "retries": sum(e.retries for e in report.episodes) / max(n, 1),
        "recoveries": sum(e.recoveries for e in report.episodes) / max(n, 1),
        "sim_s": sum(e.sim_time_s for e in report.episodes) / max(n, 1),
        "wall_s": wall / max(n, 1), "p50": percentile(lat, 50), "p99": percentile(lat, 99),
        "fired": fired, "mismatch": mismatch, "failures": failures,
        "target": TARGETS.get((task, condition), DEFAULT_TARGET[condition]),
    }


def _row(args: tuple[str, dict[str, Any], str, int, int]) -> dict[str, Any]:
    return row(*args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--tasks", default=",".join(ROWS))
    parser.add_argument("--conditions", default="clean,faults")
    parser.add_argument("--jobs", type=int, default=2, help="rows run side by side")
    parser.add_argument("--faults", default=None,
                        help="fault rates of the 'faults' condition (default "
                             "slip=0.3,nudge=0.3,occlude=0.2)")
    args = parser.parse_args()
    if args.faults:
        FAULTS.clear()
        FAULTS.update({k: float(v) for k, v in (p.split("=") for p in args.faults.split(","))})
    work = [(task, params, condition, args.episodes, args.seed)
            for task in args.tasks.split(",") for params in ROWS[task]
            for condition in args.conditions.split(",")]
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = []
        for r in pool.map(_row, work):
            rows.append(r)
            print(f"  {r['task']} {r['params']}/{r['condition']}: {r['n']} episodes, "
                  f"{r['success']:.0%}", file=sys.stderr)
    failures = [f for r in rows for f in r["failures"]]
    header = (f"{'task':15} {'params':12} {'cond':6} {'n':>3} {'success':>8} {'sim':>6} "
              f"{'oracle':>7} {'ratio':>6} {'false':>5} {'unknown':>7} {'unk.v':>6} {'retry':>6} "
              f"{'recov':>6} {'sim s':>6} {'wall s':>6} {'p50 ms':>7} {'p99 ms':>7}  "
              "faults fired / target")
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
            met = r["sim"] >= r["target"] and r["false"] == 0
            ok &= met
            verdict = f"sim >= {r['target']:.0%}, 0 false: {'met' if met else 'NOT MET'}"
        print(f"{r['task']:15} {r['params']:12} {r['condition']:6} {r['n']:>3} "
              f"{r['success']:>8.0%} "
              f"{r['sim']:>6.0%} {r['oracle']:>7.0%} {ratio:>6.2f} {r['false']:>5} "
              f"{r['unknown']:>7.0%} {r['looks']:>6.2f} {r['retries']:>6.2f} "
              f"{r['recoveries']:>6.2f} "
              f"{r['sim_s']:>6.1f} {r['wall_s']:>6.1f} {r['p50'] or 0:>7.2f} "
              f"{r['p99'] or 0:>7.2f}  {r['fired'] or '-'} {verdict}"
              + (f" [{r['mismatch']} inferred simulator verdicts differ from its records]"
                 if r["mismatch"] else ""))
    print(legend)
    print(f"{len(rows)} rows in {time.perf_counter() - began:.0f} s wall ({args.jobs} jobs)")
    if failures:
        print("\nepisodes that did not succeed (or whose simulator verdict is not success):")
        for f in failures:
            print("  " + f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
