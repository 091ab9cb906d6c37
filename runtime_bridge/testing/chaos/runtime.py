"""The runtime process of a chaos run: a ZeroMQ runtime server that also publishes camera
frames, and counts every executor start in a file the harness never sees.

- :class:`TimedRuntimeServer` is a :class:`~runtime_bridge.zmq.RuntimeServer` (whose telemetry
  carries the camera frames the harness perceives) that also times its own control loop;
- :class:`CountingExecutors` wraps an executor factory and appends one line per executor start
  (``command_id pid monotonic``) to an exec log with ``O_APPEND`` writes, so the count survives
  a SIGKILL and covers every boot of the runtime: the ground truth for double executions;
- :func:`main` serves one runtime (``python -m runtime_bridge.testing.chaos runtime ...``) and
  prints one JSON line with its endpoints once it is ready.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

from harness_bt.ledger import Command
from harness_bt.runtime.backend import Backend
from harness_bt.runtime.executor import Executor, ExecutorFactory, ExecutorStep, load_executors
from harness_bt.runtime.observation import Observation
from runtime_bridge.backends import backend_from_spec
from runtime_bridge.host import HostConfig, StepResult
from runtime_bridge.zmq.server import RuntimeServer, RuntimeServerConfig
from runtime_bridge.zmq.wire import Limits

__all__ = ["LIMITS", "CountingExecutors", "TimedRuntimeServer", "main", "make_backend"]

#: The chaos runtime's message limits: arrays up to 4 MiB (a 256x192 camera frame is 150 kB),
#: so a frame past the socket's hard cap (about 4 MiB) is cheap for a hostile peer to send.
LIMITS = Limits(max_array_bytes=4 << 20)


class TimedRuntimeServer(RuntimeServer):
    """A runtime server that times its control loop (``loop_stats()``: the real period between
    control steps, which bounds how soon a hold can take effect)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last_step: float | None = None
        self._periods: list[float] = []

    def loop_stats(self) -> dict[str, float | int | None]:
        periods = sorted(self._periods)
        if not periods:
            return {"steps": 0, "period_p50_ms": None, "period_p99_ms": None,
                    "period_max_ms": None, "late_steps": 0}
        nominal = self.backend.control_period_s
        return {"steps": len(periods) + 1,
                "period_p50_ms": round(1000 * periods[len(periods) // 2], 1),
                "period_p99_ms": round(1000 * periods[int(0.99 * (len(periods) - 1))], 1),
                "period_max_ms": round(1000 * periods[-1], 1),
                "late_steps": sum(p > 1.5 * nominal for p in periods)}

    def _publish(self, result: StepResult) -> None:
        now = time.monotonic()
        if self._last_step is not None:
            self._periods.append(now - self._last_step)
        self._last_step = now
        super()._publish(result)


class _Counted:
    """An executor whose first step is written to the exec log before it runs."""

    def __init__(self, inner: Executor, command_id: str, log_fd: int) -> None:
        self.command = inner.command
        self._inner = inner
        self._cid = command_id
        self._fd = log_fd
        self._started = False

    def step(self, observation: Observation) -> ExecutorStep:
        if not self._started:
            self._started = True
            line = f"{self._cid} {os.getpid()} {time.monotonic():.6f}\n"
            os.write(self._fd, line.encode())
        return self._inner.step(observation)

    def request_stop(self) -> None:
        self._inner.request_stop()


class CountingExecutors:
    """Wraps ``inner``; every executor start is appended to ``exec_log`` (see the module
    docstring). Read the log with :func:`runtime_bridge.testing.chaos.truth.read_exec_log`."""

    def __init__(self, inner: ExecutorFactory, exec_log: str) -> None:
        self.inner = inner
        self.exec_log = exec_log
        self._fd = os.open(exec_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, command: Command) -> Executor:
        return _Counted(self.inner(command), command.command_id, self._fd)

    def close(self) -> None:
        os.close(self._fd)


def make_backend(spec: str, *, dt: float, seed: int) -> Backend:
    """``pick_and_place``: the built-in simulator's pick-and-place scene (seeded), one episode
    that never ends on its own, a front and a front-left camera rendered in turn; anything
    else goes to :func:`runtime_bridge.backends.backend_from_spec` (``kinematic``, ``sim``,
    a URL, ``package.module:factory``)."""
    if spec != "pick_and_place":
        return backend_from_spec(spec, dt=dt)
    from runtime_bridge.inproc.open import DEFAULT_CAMERAS
    from runtime_bridge.sim.backend import make_backend as sim_backend

    return sim_backend(dt, scene="pick_and_place", seed=seed, cameras=DEFAULT_CAMERAS,
                       render="round_robin")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m runtime_bridge.testing.chaos runtime",
                                description="serve a chaos run's runtime")
    p.add_argument("--backend", default="pick_and_place")
    p.add_argument("--executors", default="", help="package.module:factory (default: the "
                   "harness_bt.executors entry point)")
    p.add_argument("--bind", default="tcp://127.0.0.1:*")
    p.add_argument("--telemetry", default="tcp://127.0.0.1:*")
    p.add_argument("--journal", required=True)
    p.add_argument("--exec-log", required=True)
    p.add_argument("--control-hz", type=float, default=30.0)
    p.add_argument("--lease-ms", type=float, default=1000.0)
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    dt = 1.0 / args.control_hz
    executors = CountingExecutors(load_executors(args.executors or None), args.exec_log)
    server = TimedRuntimeServer(
        make_backend(args.backend, dt=dt, seed=args.seed), executors,
        RuntimeServerConfig(bind=args.bind, telemetry=args.telemetry or None,
                            journal=args.journal, limits=LIMITS,
                            host=HostConfig(lease_s=args.lease_ms / 1000.0
                                            if args.lease_ms > 0 else None)))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        ready = server.start()
        print(json.dumps({"ready": True, "pid": os.getpid(),
                          "control_period_s": dt, **ready}), flush=True)
        while not stop.is_set() and not server.wait(0):
            stop.wait(0.1)
    finally:
        server.stop()
        server.backend.close()
        executors.close()
    print(json.dumps({"loop": server.loop_stats()}), flush=True)
    return 1 if server.failure is not None else 0
