"""Orchestration benchmark: the same imperfect policy alone and inside a task that judges and
recovers, on paired seeds.

The built-in policy server (``harness policy serve --policy pick``) is tuned to miss its grasp
on about 40 % of its attempts (``--misgrasp-rate``) without noticing. ``harness compare``
then runs, on the same seeds of the built-in simulator:

- A, ``trees/policy_pick_alone.yaml``: one ``run_policy`` skill, no recovery, judged from
  observations;
- B, ``trees/policy_pick.yaml``: the same skill inside a task that judges each run from
  observations and, after a miss, lets go, backs off, looks again and runs the policy again
  (3 attempts);

and prints both success rates (the simulator's own check), the exact McNemar test on the
discordant pairs, and the false successes (the harness said succeeded, the simulator did
not). Target: B significantly better (p < 0.05 over >= 40 pairs), 0 false successes.

    python tests/benchmarks/bench_policy.py                      # 40 pairs, 2 workers
    python tests/benchmarks/bench_policy.py --episodes 60 --misgrasp-rate 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = [sys.executable, "-m", "harness_bt.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(port: int, misgrasp: float, noise: float, seed: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*HARNESS, "policy", "serve", "--policy", "pick", "--port", str(port),
         "--misgrasp-rate", str(misgrasp), "--pose-noise-m", str(noise), "--seed", str(seed)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"the policy server did not start (exit {proc.wait()})")
    print(f"policy server: {line.strip()}", flush=True)
    return proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--misgrasp-rate", type=float, default=0.45)
    parser.add_argument("--pose-noise-m", type=float, default=0.003)
    parser.add_argument("--policy-seed", type=int, default=7)
    args = parser.parse_args()
    port = free_port()
    server = serve(port, args.misgrasp_rate, args.pose_noise_m, args.policy_seed)
    began = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run(
                [*HARNESS, "compare", str(ROOT / "trees" / "policy_pick_alone.yaml"),
                 str(ROOT / "trees" / "policy_pick.yaml"), "--episodes", str(args.episodes),
                 "--seed", str(args.seed), "--workers", str(args.workers), "--set",
                 f"policy_url=ws://127.0.0.1:{port}", "--out", out, "--no-trace", "--json"],
                capture_output=True, text=True, cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)})
            if done.returncode not in (0, 1) or not done.stdout.strip():
                print(done.stderr[-4000:], file=sys.stderr)
                return 2
            report = json.loads(done.stdout)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
    wall = time.perf_counter() - began
    print(f"{'task':<20} {'n':>3} {'success':>8} {'sim':>6} {'95% interval':>15} {'false':>6}")
    for row in sorted(report["summary"], key=lambda r: r["task"] != report["a"]):
        lo, hi = row["sim_success_interval"]
        print(f"{row['task']:<20} {row['n']:>3} {row['success_rate']:>8.1%} "
              f"{row['sim_success_rate']:>6.1%} {f'[{lo:.2f}, {hi:.2f}]':>15} "
              f"{row['false_success_count']:>6}")
    false = sum(r["false_success_count"] for r in report["summary"])
    met = report["p_value"] < 0.05 and report["b_success"] > report["a_success"] and not false
    print(f"paired on {report['n']} seeds: B only {report['b_only']}, A only "
          f"{report['a_only']}; exact McNemar p = {report['p_value']:.2g} ({report['verdict']})")
    print(f"target: orchestrated significantly better (p < 0.05), 0 false successes: "
          f"{'met' if met else 'NOT MET'}")
    print(f"{args.episodes} pairs in {wall:.0f} s wall ({args.workers} workers); policy "
          f"misgrasp rate {args.misgrasp_rate}, pose noise {args.pose_noise_m} m")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
