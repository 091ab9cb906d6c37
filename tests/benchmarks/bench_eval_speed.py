"""Evaluation throughput: ``harness eval TASK --episodes N --workers 2`` as a whole command,
this tree against a baseline revision of the project, taking turns in the same run.

The baseline is a git revision (``--baseline``, default the commit before the simulator-speed
work) exported to a temporary folder and put first on ``PYTHONPATH``, so the same interpreter
and packages run the old code (its workers inherit the path). Each run is a fresh command
with its own results store; the script prints per run the wall time, the CPU seconds of the
command and its workers (user + system, from the children's resource usage), the CPU seconds
per episode, the task's and the simulator's success rates and false successes (from the
run's ``report.json``), the medians per side, the ratios new / baseline, and whether every
seed's episode came out the same on both sides (outcome, the simulator's verdict, steps and
simulated time, from the results stores). From the CPU per
episode it also prints what ``--episodes 100`` would take on 2 idle cores (CPU / 2: the two
workers each keep a core busy), an extrapolation, next to the measured wall time (which on a
shared machine depends on the load: ``uptime`` is printed before and after).

    python tests/benchmarks/bench_eval_speed.py                       # 10 episodes, 1 round
    python tests/benchmarks/bench_eval_speed.py --episodes 20 --rounds 2
    python tests/benchmarks/bench_eval_speed.py --no-baseline --episodes 100
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The last commit before frames on demand and the eval workers' kept worlds.
DEFAULT_BASELINE = "cfd4a13"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def export(revision: str, into: Path) -> Path:
    """The project's files at ``revision`` in ``into`` (git archive)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision],
                             check=True, capture_output=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def one_run(label: str, source: Path | None, task: Path, episodes: int, workers: int,
            out: Path) -> dict[str, Any]:
    """One ``harness eval`` command (``source``: the tree first on the path, None: this one)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep)
    cmd = [sys.executable, "-c", "import sys; from harness_bt.cli import main; "
           "sys.exit(main())", "eval", str(task), "--episodes", str(episodes),
           "--workers", str(workers), "--out", str(out)]
    cpu0, began = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=str(ROOT), capture_output=True, text=True)
    wall, cpu = time.perf_counter() - began, _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"{label}: harness eval failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    summary = json.loads((out / "report.json").read_text())["summary"][0]
    with contextlib.closing(sqlite3.connect(out / "results.sqlite")) as db:
        episodes = {str(seed): (outcome, sim_success, steps, sim_s) for seed, outcome,
                    sim_success, steps, sim_s in db.execute(
                        "SELECT seed, outcome, sim_success, sim_steps, sim_time_s "
                        "FROM episodes")}
    return {"label": label, "wall_s": wall, "cpu_s": cpu, "n": summary["n"],
            "success": summary["success_rate"], "sim_success": summary["sim_success_rate"],
            "false": summary["false_success_count"], "episodes": episodes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default=str(ROOT / "trees" / "pick_and_place.yaml"))
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help="a git revision")
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args(argv)
    from harness_bt.cli import main as _  # noqa: F401  (fails early if this tree is broken)

    print(f"{Path(args.task).name}: harness eval --episodes {args.episodes} --workers "
          f"{args.workers}, {args.rounds} round(s); {_load()}")
    rows: dict[str, list[dict[str, Any]]] = {"baseline": [], "now": []}
    with tempfile.TemporaryDirectory(prefix="hbt-evalspeed-") as tmp:
        base = None if args.no_baseline else export(args.baseline, Path(tmp) / "base")
        for r in range(args.rounds):
            sides = [("now", None)] if base is None else [("baseline", base), ("now", None)]
            for label, source in sides:
                row = one_run(label, source, Path(args.task), args.episodes, args.workers,
                              Path(tmp) / f"out-{label}-{r}")
                rows[label].append(row)
                print(f"  {label:<8} wall {row['wall_s']:7.1f} s, cpu {row['cpu_s']:7.1f} s "
                      f"({row['cpu_s'] / row['n']:5.2f} s per episode); task "
                      f"{row['success']:.0%}, simulator {row['sim_success']:.0%}, false "
                      f"{row['false']} of {row['n']}", flush=True)
    medians = {k: {f: statistics.median(r[f] for r in v) for f in ("wall_s", "cpu_s")}
               for k, v in rows.items() if v}
    for label, m in medians.items():
        per = m["cpu_s"] / args.episodes
        print(f"{label:<8} median wall {m['wall_s']:.1f} s, cpu per episode {per:.2f} s; "
              f"--episodes 100 on 2 idle cores would take ~{per * 100 / 2 / 60:.1f} min "
              "(extrapolated)")
    if rows["baseline"]:
        same = all(b["episodes"] == n["episodes"]
                   for b, n in zip(rows["baseline"], rows["now"], strict=True))
        print("per-seed outcomes (outcome, simulator's verdict, steps, simulated s) "
              + ("identical in every round" if same else "DIFFER between baseline and now"))
    if len(medians) == 2:
        base, now = medians["baseline"], medians["now"]
        print(f"now / baseline: wall {base['wall_s'] / now['wall_s']:.2f}x faster, cpu "
              f"{base['cpu_s'] / now['cpu_s']:.2f}x less")
    print(_load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
