"""``harness run`` against a served simulator beside the in-process run, in the same run. A
script that prints; nothing here is asserted.

The reference task (``trees/pick_and_place.yaml``) runs N episodes (seeds 0..N-1) twice: on
the built-in simulator in-process, and with ``--sim URL`` against ``harness sim serve --task
pick_and_place`` started with its default options (each in its own process, as a user runs
them; the two runs take turns for ``--rounds`` rounds, so a busy machine slows both alike).
It prints per mode the episodes that succeeded, the median wall time per episode (until the
task ended; and the whole episode, the simulator's success hold included), the decision
latency p50, and the served / in-process ratios.

Then where a step's time goes: the in-process simulator's step with the served defaults (two
256x192 cameras rendered in turn) and with upstream's one 640x480 camera every step (the
served default before), and a ``/step`` round trip to the server (the step plus the
transport).

    .venv/bin/python tests/benchmarks/bench_served.py [--episodes 5] [--rounds 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "trees" / "pick_and_place.yaml"
HARNESS = [sys.executable, "-m", "harness_bt.cli"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HOLD = {"control_type": "joint_position", "action": [0.0] * 7 + [0.04, 0.04]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(episodes: int) -> Iterator[str]:
    """``harness sim serve --task pick_and_place`` with its defaults (and enough episodes)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([*HARNESS, "sim", "serve", "--task", "pick_and_place", "--port",
                             str(port), "--episodes", str(max(10, episodes))], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/docs", timeout=2).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start on {url}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(episodes: int, url: str | None) -> dict[str, Any]:
    """One ``harness run --json``; its report and the command's own wall time."""
    argv = [*HARNESS, "run", str(TASK), "--episodes", str(episodes), "--json"]
    if url:
        argv += ["--sim", url]
    began = time.perf_counter()
    done = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=3600)
    report: dict[str, Any] = json.loads(done.stdout)
    report["command_s"] = time.perf_counter() - began
    return report


def summary(label: str, reports: list[dict[str, Any]]) -> dict[str, float]:
    eps = [e for r in reports for e in r["episodes"]]
    wall = statistics.median(e["wall_s"] for e in eps)
    whole = statistics.median(r["command_s"] / len(r["episodes"]) for r in reports)
    p50 = statistics.median(e["decision_latency_ms"]["p50"] for e in eps)
    ok = sum(e["succeeded"] for e in eps)
    reasons = sorted({e["reason"] for e in eps if not e["succeeded"]})
    failed = f" ({', '.join(reasons)})" if reasons else ""
    print(f"  {label:12s} {ok}/{len(eps)} succeeded{failed}; wall per episode: median "
          f"{wall:5.2f} s until the task ended, {whole:5.2f} s "
          f"with the success hold and start-up; decision latency p50 median {p50:5.1f} ms")
    return {"wall": wall, "whole": whole, "p50": p50}


def step_costs(url: str, n: int) -> None:
    from runtime_bridge.genmanip import GenManipClient
    from runtime_bridge.sim.config import DEFAULT_CAMERAS, SimConfig, parse_camera_spec
    from runtime_bridge.sim.env import SimEnv

    def env_ms(cams: tuple[str, ...], render: str) -> float:
        config = SimConfig(scenes=("pick_and_place",), num_steps=10_000, render=render,
                           cameras=tuple(parse_camera_spec(c) for c in cams))
        with SimEnv(config) as env:
            env.reset()
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                env.step(HOLD)
                times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1e3

    with GenManipClient(url, ["bench"]) as client:
        client.create_workers()
        client.reset()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            client.step({"bench": HOLD})
            times.append(time.perf_counter() - t0)
        with contextlib.suppress(Exception):
            client.kill()
        path = client.shm_status
    served_ms = statistics.median(times) * 1e3
    default_ms = env_ms(DEFAULT_CAMERAS, "round_robin")
    upstream_ms = env_ms(("front:640x480",), "all")
    print(f"where a step goes (median of {n} held steps):")
    print(f"  in-process step, 2 cameras 256x192 in turn (the defaults): {default_ms:6.1f} ms")
    print(f"  in-process step, 1 camera 640x480 every step (upstream's; the served default "
          f"before): {upstream_ms:6.1f} ms ({upstream_ms / default_ms:.1f}x)")
    print(f"  /step round trip to the default server: {served_ms:6.1f} ms "
          f"({served_ms - default_ms:+.1f} ms transport; {path})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=60, help="steps per step-cost figure")
    args = parser.parse_args()
    inproc: list[dict[str, Any]] = []
    remote: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        inproc.append(run(args.episodes, None))
        with served(args.episodes) as url:
            remote.append(run(args.episodes, url))
    print(f"harness run {TASK.relative_to(ROOT)}, {args.episodes} episodes x {args.rounds} "
          "round(s), same run:")
    a = summary("in-process", inproc)
    b = summary("served", remote)
    print(f"  served / in-process: wall per episode {b['wall'] / a['wall']:.2f}x until the task "
          f"ended, {b['whole'] / a['whole']:.2f}x whole; decision latency p50 "
          f"{b['p50'] / a['p50']:.2f}x")
    with served(1) as url:
        step_costs(url, args.steps)


if __name__ == "__main__":
    main()
