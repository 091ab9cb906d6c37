"""Episode functions for testing evaluations (``harness eval --episode-fn``): the product never
calls them.

- :func:`quick_episode`: a result row computed from the seed alone, in milliseconds (seeds
  divisible by 3 fail), so the driver, the store and the pools can be tested without a
  simulator. With ``HARNESS_EVAL_RIG_GATE=PATH`` (or ``extra["gate"]``) in the worker's
  environment, episodes from seed ``HARNESS_EVAL_RIG_GATE_FROM`` (default 2) wait until PATH
  exists: a driver can be killed while they are in flight. The task named by
  ``HARNESS_EVAL_RIG_WORSE`` (or ``extra["worse"]``) also fails every even seed.
- :func:`crashing_episode`: kills its own worker process (SIGKILL) mid-episode. Seeds in
  ``extra["crash_once"]`` do it on their first attempt only (a marker file in
  ``extra["marker_dir"]`` remembers it, across processes and Ray workers), seeds in
  ``extra["crash_always"]`` every time; every other seed is a :func:`quick_episode`.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from harness_bt.eval.plan import EpisodeSpec

__all__ = ["crashing_episode", "quick_episode"]


def quick_episode(spec: EpisodeSpec) -> dict[str, Any]:
    """See the module docstring."""
    gate = spec.extra.get("gate") or os.environ.get("HARNESS_EVAL_RIG_GATE")
    gate_from = int(spec.extra.get("gate_from", os.environ.get("HARNESS_EVAL_RIG_GATE_FROM",
                                                                2)))
    if gate and spec.seed >= gate_from:
        while not Path(gate).exists():
            time.sleep(0.02)  # a worker waiting for its test to let it go
    worse = spec.extra.get("worse") or os.environ.get("HARNESS_EVAL_RIG_WORSE")
    ok = spec.seed % 3 != 0 and not (worse == spec.task and spec.seed % 2 == 0)
    return {
        "task": spec.task, "digest": spec.digest, "condition": spec.condition,
        "episode": str(spec.seed), "seed": spec.seed, "scene": spec.scene,
        "outcome": "succeeded" if ok else "aborted",
        "reason": "done" if ok else "aborted_grasp_failed",
        "last_phase": "evaluate" if ok else "grasp", "sim_success": ok,
        "sim_ended_by": "success" if ok else "timeout", "false_success": False,
        "unknown": False, "retries": spec.seed % 2, "recoveries": spec.seed % 2,
        "commands": 4, "sim_steps": 100 + spec.seed, "phase_times": {"grasp": 1.5,
                                                                   "evaluate": 0.5},
        "decision_latency_p50_ms": 1.0, "decision_latency_p99_ms": 2.0,
        "sim_time_s": 3.0, "wall_s": 0.01, "trace": None, "worker": str(os.getpid()),
    }


def crashing_episode(spec: EpisodeSpec) -> dict[str, Any]:
    """See the module docstring."""
    if spec.seed in spec.extra.get("crash_always", ()):
        os.kill(os.getpid(), signal.SIGKILL)
    if spec.seed in spec.extra.get("crash_once", ()):
        marker = Path(spec.extra["marker_dir"]) / f"crashed-{spec.task}-{spec.seed}"
        if not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
    return quick_episode(spec)
