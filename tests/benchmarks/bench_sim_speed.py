"""Simulator speed: simulated time / wall time of a library task, with each speed switch off and
on, side by side in the same run, on one core.

Every mode runs the same seeded episodes of ``trees/pick_and_place.yaml`` (default) in-process
through ``harness_bt.run.episodes.run_episodes`` (what ``harness run`` does), the modes taking
turns episode by episode, so a busy machine slows them alike. Modes:

- ``round_robin``: every step renders one camera in turn, also the steps that hold an episode
  to its end (the default before frames on demand): the baseline;
- ``on_demand``: frames only for the steps someone reads (``runtime_bridge.inproc.frames``)
  at the default watch rate (``on_demand@HZ``: at another), one step per harness tick;
- ``batched``: frames on demand, and up to 15 steps per harness tick while nobody looks (what
  ``harness run`` does by default).

Per mode it prints the task's successes and the simulator's, false successes, the median
simulated / wall ratio until the task ended (what ``harness run`` reports as ``sim s`` and
``wall s``) and for the whole episode (the simulator's success hold included), the frames
rendered per step, and each mode's ratio against the baseline. Beside the wall-clock ratios
(which on a shared machine depend on what else runs on the core) it prints simulated time per
second of the process's own CPU (``sim/cpu``, from the first harness tick to the last, and for
the whole episode): what the episode gets from one core it has to itself. Nothing is
asserted.

    python tests/benchmarks/bench_sim_speed.py                      # 3 episodes per mode
    python tests/benchmarks/bench_sim_speed.py --episodes 5 --modes round_robin,batched@6
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

from harness_bt.authoring import load_task  # noqa: E402
from harness_bt.authoring.scenes import with_scene  # noqa: E402
from harness_bt.run.episodes import run_episodes  # noqa: E402
from harness_bt.runtime.episodes import RunOptions  # noqa: E402
from harness_bt.runtime.settings import RuntimeSettings  # noqa: E402
from runtime_bridge.inproc import open_runtime  # noqa: E402


def _extra(mode: str) -> dict[str, Any]:
    """``round_robin`` / ``all``; ``on_demand[@HZ]`` (one step per poll); ``batched[@HZ]``
    (frames on demand and up to 15 steps per poll while nobody looks: the defaults)."""
    base, _, hz = mode.partition("@")
    if base in ("round_robin", "all") and not hz:
        return {"render": base, "batch_steps": 1}
    if base not in ("on_demand", "batched"):
        raise SystemExit(f"unknown mode {mode!r}: use round_robin, all, on_demand[@HZ] or "
                         "batched[@HZ]")
    extra: dict[str, Any] = {"render": "on_demand", "batch_steps": 1 if base == "on_demand"
                             else 15}
    if hz:
        extra["frame_hz"] = float(hz)
    return extra


def one_episode(task_file: Path, mode: str, seed: int) -> dict[str, Any]:
    """One episode in ``mode``: its figures (wall from the runtime's start to its close)."""
    loaded = load_task(task_file)
    options = with_scene(RunOptions(task=loaded.name, scene=loaded.scene, params=loaded.params,
                                    episodes=1, seed=seed,
                                    runtime_settings=RuntimeSettings.from_mapping(_extra(mode))))
    began, cpu_began = time.perf_counter(), time.process_time()
    ticks: list[tuple[float, float]] = []  # (simulated s, cpu s) after each tick

    def tick(runner: Any, index: int, rt: Any) -> None:
        ticks.append((rt.steps * rt.control_period_s, time.process_time()))

    runtime = open_runtime(options)
    try:
        report = run_episodes(loaded, options, runtime=runtime, on_tick=tick)
        steps = runtime.steps
        frames = getattr(getattr(runtime.backend, "env", None), "frames", None)
        rendered = frames.rendered if frames is not None else None
        policy = getattr(runtime, "frames", None)
        counts = dict(policy.counts) if policy is not None else {}
    finally:
        runtime.close()
    whole, whole_cpu = time.perf_counter() - began, time.process_time() - cpu_began
    ep = report.episodes[0]
    # from the first tick to the last: simulated time per second of this process's CPU
    (sim0, cpu0), (sim1, cpu1) = ticks[0], ticks[-1]
    return {"succeeded": ep.succeeded, "sim_success": ep.sim_success,
            "false": ep.false_success, "sim_s": ep.sim_time_s, "wall_s": ep.wall_s,
            "steps": steps, "whole_s": whole, "whole_cpu_s": whole_cpu,
            "sim_per_cpu": (sim1 - sim0) / max(cpu1 - cpu0, 1e-9), "rendered": rendered,
            "reason": ep.reason,
            "counts": counts}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default=str(ROOT / "trees" / "pick_and_place.yaml"))
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--modes", default="round_robin,on_demand,batched")
    ap.add_argument("--cpu", type=int, default=0, help="pin to this core (-1: do not pin)")
    args = ap.parse_args(argv)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        _extra(m)
    task_file = Path(args.task)
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    one_episode(task_file, modes[0], args.seed)  # warm the caches (imports, meshes)
    for i in range(args.episodes):
        for m in modes:
            rows[m].append(one_episode(task_file, m, args.seed + i))
    print(f"{task_file.name}, {args.episodes} episode(s) per mode from seed {args.seed}, "
          f"modes taking turns, pinned to core {args.cpu}:")
    base: dict[str, float] = {}
    for m in modes:
        r = rows[m]
        ratio = statistics.median(e["sim_s"] / e["wall_s"] for e in r)
        whole = statistics.median(e["steps"] / 30.0 / e["whole_s"] for e in r)
        frames = [e["rendered"] / e["steps"] for e in r if e["rendered"] is not None]
        per_cpu = statistics.median(e["sim_per_cpu"] for e in r)
        whole_cpu = statistics.median(e["steps"] / 30.0 / e["whole_cpu_s"] for e in r)
        base = base or {"ratio": ratio, "whole": whole}
        print(f"  {m:<16} task {sum(e['succeeded'] for e in r)}/{len(r)}, sim "
              f"{sum(bool(e['sim_success']) for e in r)}/{len(r)}, false "
              f"{sum(e['false'] for e in r)}; sim/wall until the task ended: median "
              f"{ratio:5.2f}x ({ratio / base['ratio']:4.2f}x baseline); whole episode "
              f"{whole:5.2f}x ({whole / base['whole']:4.2f}x); frames per step "
              f"{statistics.median(frames) if frames else float('nan'):.2f}; wall s "
              + " ".join(f"{e['wall_s']:.2f}" for e in r))
        print(f"      sim/cpu (simulated s per s of this process's CPU: what one core of its "
              f"own gives): until the task ended {per_cpu:5.2f}x, whole episode "
              f"{whole_cpu:5.2f}x")
        if r[0]["counts"]:
            print("      frames per episode (before the step, after it, none): " + "; ".join(
                f"{e['counts']['before']}/{e['counts']['after']}/{e['counts']['none']}"
                for e in r))
        for e in r:
            if not e["succeeded"]:
                print(f"      not done: {e['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
