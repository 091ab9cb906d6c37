"""Crash-resume with an object no camera sees any more: a runtime that hides objects on
request, and the scenario it serves (the test of world memory and its demonstration,
``tests/benchmarks/resume_memory.py``).

- :func:`main` (``python -m runtime_bridge.testing.hiding --scene pick_and_place --seed 0
  --journal rt.db``) serves a ZeroMQ runtime over the built-in simulator (one front camera,
  as ``harness runtime serve --backend sim``), prints one JSON line with its endpoints once
  ready, and then reads commands on stdin: ``hide NAME`` makes object NAME invisible to the
  cameras from the next control step on (it stays where it is and acts as before:
  :meth:`SimEnv.hide <runtime_bridge.sim.env.SimEnv.hide>`), ``show NAME`` makes it visible
  again; each is answered by one JSON line. It stops at the end of its input or on SIGTERM.
- :func:`occluded_resume` runs the scenario for real: the runtime above, ``harness run TASK
  --runtime URL --journal run.db`` in its own process, the object hidden once the harness has
  seen it and a given command is done, the harness killed with SIGKILL a moment later, then
  ``harness resume run.db`` (with ``--forget-world`` when asked) to its end, the object shown
  again once the resumed run has started a given skill (the step that acts on the memory);
  what ran is read from the runtime's own journal.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_bt.errors import BridgeError
from harness_bt.runtime.executor import load_executors
from runtime_bridge.backends import backend_from_spec
from runtime_bridge.host import HostConfig
from runtime_bridge.host.record_log import read_rows
from runtime_bridge.zmq.server import RuntimeServer, RuntimeServerConfig

__all__ = ["Occluded", "Scenario", "main", "occluded_resume", "runtime_records"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime_bridge.testing.hiding")
    parser.add_argument("--scene", default="pick_and_place")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--lease-ms", type=float, default=30_000.0)
    parser.add_argument("--control-hz", type=float, default=30.0)
    args = parser.parse_args(argv)
    backend = backend_from_spec("sim", dt=1.0 / args.control_hz, sim_scene=args.scene,
                                seed=args.seed)
    server = RuntimeServer(backend, load_executors(None), RuntimeServerConfig(
        bind="tcp://127.0.0.1:*", telemetry="tcp://127.0.0.1:*", journal=args.journal,
        host=HostConfig(lease_s=args.lease_ms / 1000.0 if args.lease_ms > 0 else None)))
    signal.signal(signal.SIGTERM, lambda *_: sys.stdin.close())
    try:
        print(json.dumps({"ready": True, **server.start()}), flush=True)
        for line in sys.stdin:
            print(json.dumps(_command(backend, line.split())), flush=True)
    except (ValueError, OSError):  # stdin closed by SIGTERM
        pass
    finally:
        server.stop()
        backend.close()
    return 1 if server.failure is not None else 0


def _command(backend: Any, words: list[str]) -> dict[str, Any]:
    if len(words) != 2 or words[0] not in ("hide", "show"):
        return {"error": f"unknown command {' '.join(words)!r}; known: hide NAME, show NAME"}
    try:
        backend.env.hide(words[1], words[0] == "hide")
    except BridgeError as exc:
        return {"error": exc.to_dict()}
    return {"hidden" if words[0] == "hide" else "shown": words[1]}


def runtime_records(path: str | Path) -> list[dict[str, Any]]:
    """The runtime journal's rows: command id, skill, state, event kinds."""
    return [{"command_id": cid, "skill": json.loads(cmd)["skill"] if cmd else None,
             "state": state, "events": [e["kind"] for e in json.loads(events)]}
            for cid, cmd, _, state, _, _, _, _, events in read_rows(str(path)).values()]


@dataclass(frozen=True)
class Scenario:
    """What :func:`occluded_resume` runs: the task file, the object to hide, and when: once a
    command of skill ``hide_after`` is done in the runtime; the harness is killed
    ``kill_after_s`` later (it keeps observing the scene without the object meanwhile). The
    object is shown again once the resumed run has started a command of skill ``show_after``
    (None: never)."""

    task: str
    hide: str = "tray"
    hide_after: str = "lift"
    kill_after_s: float = 0.5
    show_after: str | None = "move_ee_to"
    scene: str = "pick_and_place"
    seed: int = 0
    forget_world: bool = False
    timeout_s: float = 240.0


@dataclass(frozen=True)
class Occluded:
    """What happened: the resumed run's report and its trace's events, the runtime's records,
    and the wall times of the first run (to the kill) and of the resume."""

    report: dict[str, Any]
    trace: list[dict[str, Any]]
    records: list[dict[str, Any]]
    killed_during: list[str]
    first_s: float
    resume_s: float
    resume_stderr: str

    @property
    def episode(self) -> dict[str, Any]:
        return dict(self.report["episodes"][0])

    def started_twice(self) -> dict[str, int]:
        started = Counter(r["command_id"] for r in self.records for k in r["events"]
                          if k == "started")
        return {cid: n for cid, n in started.items() if n > 1}


Start = Callable[..., "subprocess.Popen[str]"]


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness_bt.cli", *args]


def occluded_resume(scenario: Scenario, workdir: Path, start: Start) -> Occluded:
    """Run ``scenario`` in ``workdir`` (see the module docstring). ``start(*argv, stdin=...,
    stdout=...)`` starts a child process (the caller kills and reaps whatever is left)."""
    runtime = start(sys.executable, "-m", "runtime_bridge.testing.hiding", "--scene",
                    scenario.scene, "--seed", str(scenario.seed), "--journal",
                    str(workdir / "runtime.db"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        ready = _ready(runtime)
        return _run(scenario, workdir, start, runtime, ready)
    finally:
        if runtime.stdin is not None and not runtime.stdin.closed:
            runtime.stdin.close()
        try:
            runtime.wait(20)
        except subprocess.TimeoutExpired:
            runtime.kill()
            runtime.wait()


def _ready(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            return dict(json.loads(line))
    raise RuntimeError(f"the hiding runtime exited with {proc.wait()} before it was ready")


def _run(scenario: Scenario, workdir: Path, start: Start, runtime: subprocess.Popen[str],
         ready: dict[str, Any]) -> Occluded:
    journal, trace = workdir / "run.db", workdir / "run.jsonl"
    began = time.monotonic()
    first = start(*_harness("run", scenario.task, "--runtime", ready["bind"], "--journal",
                            str(journal), "--trace", str(trace), "--json"),
                  stdout=subprocess.DEVNULL)
    deadline = began + scenario.timeout_s
    while not any(r["skill"] == scenario.hide_after and r["state"] == "CONTROL_DONE"
                  for r in runtime_records(ready["journal"])):
        if first.poll() is not None:
            raise RuntimeError(f"the harness ended ({first.returncode}) before "
                               f"{scenario.hide_after} was done")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {scenario.hide_after} was done within "
                               f"{scenario.timeout_s} s")
        time.sleep(0.02)
    _tell(runtime, "hide", scenario.hide)
    time.sleep(scenario.kill_after_s)
    first.send_signal(signal.SIGKILL)
    first.wait(20)
    first_s = time.monotonic() - began
    before = runtime_records(ready["journal"])
    killed_during = sorted(r["skill"] for r in before if r["state"] == "RUNNING")
    began = time.monotonic()
    resumed = start(*_harness("resume", str(journal), "--json",
                              *(["--forget-world"] if scenario.forget_world else [])),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    known = {r["command_id"] for r in before}
    while scenario.show_after is not None and resumed.poll() is None:
        if any(r["skill"] == scenario.show_after and r["command_id"] not in known
               for r in runtime_records(ready["journal"])):
            _tell(runtime, "show", scenario.hide)
            break
        if time.monotonic() > began + scenario.timeout_s:
            break
        time.sleep(0.02)
    out, err = _communicate(resumed, scenario.timeout_s)
    resume_s = time.monotonic() - began
    if not out.strip():
        raise RuntimeError(f"harness resume printed no report (exit {resumed.returncode}): "
                           f"{err[-3000:]}")
    events = [json.loads(line) for line in (workdir / "run.resumed.jsonl").open()]
    return Occluded(json.loads(out), events, runtime_records(ready["journal"]), killed_during,
                    first_s, resume_s, err)


def _tell(runtime: subprocess.Popen[str], verb: str, name: str) -> None:
    assert runtime.stdin is not None and runtime.stdout is not None
    runtime.stdin.write(f"{verb} {name}\n")
    runtime.stdin.flush()
    answer = json.loads(runtime.stdout.readline())
    if answer.get("hidden" if verb == "hide" else "shown") != name:
        raise RuntimeError(f"the runtime did not {verb} {name}: {answer}")


def _communicate(proc: subprocess.Popen[str], timeout_s: float) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"harness resume did not end within {timeout_s} s") from None


if __name__ == "__main__":
    sys.exit(main())
