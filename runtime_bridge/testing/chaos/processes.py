"""The processes of a chaos run: what it executes (:class:`Workload`), its runtime and harness
processes (:class:`Proc`), and the files and processes of one run (:class:`Run`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness_bt.errors import BridgeError
from runtime_bridge.testing.chaos.truth import read_exec_log, read_runtime_journal

__all__ = ["PICK_AND_PLACE", "ROOT", "Proc", "Run", "Workload"]

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Workload:
    """What a run executes. ``task``: the harness's ``--task``; ``backend`` / ``executors``:
    the runtime's; ``kill_at``: the executor start (1-based) after which a mid-command fault
    fires; ``settle_s``: how long after that start (the command is running). ``harness``:
    ``chaos`` (``python -m runtime_bridge.testing.chaos harness``) or ``cli`` (``harness run
    --runtime --journal`` and ``harness resume``)."""

    task: str
    backend: str
    executors: str = ""
    control_hz: float = 30.0
    lease_ms: float = 1000.0
    max_time_s: float = 90.0
    kill_at: int = 2
    settle_s: float = 0.3
    tick_s: float = 1.0 / 30.0
    ready_timeout_s: float = 60.0
    harness: str = "chaos"


#: pick_and_place through ``harness run --runtime`` / ``harness resume`` (the real CLI).
PICK_AND_PLACE = Workload(task=str(ROOT / "trees" / "pick_and_place.yaml"),
                          backend="pick_and_place", harness="cli")


class Proc:
    """A child process whose stderr goes to a file; killed and reaped on ``close``."""

    def __init__(self, args: list[str], log: Path, *,
                 module: str = "runtime_bridge.testing.chaos") -> None:
        self.name = args[0]
        self.log = log
        self._err: IO[bytes] = open(log, "ab")  # noqa: SIM115 - closed in close()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.proc = subprocess.Popen([sys.executable, "-m", module, *args],
                                     stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     env=env, cwd=ROOT)

    def line(self, timeout_s: float) -> dict[str, Any]:
        """The next JSON line on stdout, skipping what native libraries print there (raises
        BridgeError when the process exits or stays silent past ``timeout_s``)."""
        out: list[str] = []

        def read() -> None:
            stream = self.proc.stdout
            while stream is not None:
                text = stream.readline()
                if not text or text.lstrip().startswith("{"):
                    out.append(text)
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not out or not out[0]:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise BridgeError("CHAOS_PROCESS_FAILED", f"{self.name} process gave no "
                              f"answer in {timeout_s} s (exit {self.proc.poll()}); stderr "
                              f"tail: {tail}", where=str(self.log))
        return dict(json.loads(out[0]))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout_s: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(10)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._err.close()


@dataclass
class Run:
    """The files and processes of one run. ``telemetry``: the PUB endpoint harnesses subscribe
    to (a telemetry fault proxy's; None: the runtime's own)."""

    workload: Workload
    dir: Path
    seed: int
    procs: list[Proc] = field(default_factory=list)
    runtime: Proc | None = None
    endpoints: dict[str, Any] = field(default_factory=dict)
    telemetry: str | None = None

    @property
    def runtime_journal(self) -> Path:
        return self.dir / "runtime.db"

    @property
    def exec_log(self) -> Path:
        return self.dir / "executions.log"

    def start_runtime(self, bind: str = "tcp://127.0.0.1:*",
                      telemetry: str = "tcp://127.0.0.1:*") -> dict[str, Any]:
        w = self.workload
        proc = Proc(["runtime", "--backend", w.backend, "--executors", w.executors,
                      "--bind", bind, "--telemetry", telemetry,
                      "--journal", str(self.runtime_journal), "--exec-log", str(self.exec_log),
                      "--control-hz", str(w.control_hz), "--lease-ms", str(w.lease_ms),
                      "--seed", str(self.seed)], self.dir / "runtime.log")
        self.procs.append(proc)
        self.runtime = proc
        self.endpoints = proc.line(w.ready_timeout_s)
        return self.endpoints

    def start_harness(self, endpoint: str, *, name: str = "harness", epoch: int = 1,
                      resume: bool = False) -> Proc:
        """A harness process on ``<name>.db``. ``epoch`` is for the chaos harness only (the
        ``harness`` command takes a new epoch from the runtime on connect)."""
        w = self.workload
        journal = str(self.dir / f"{name}.db")
        trace = str(self.dir / f"{name}{'.resumed' if resume else ''}.jsonl")
        telemetry = self.telemetry or str(self.endpoints["telemetry"])
        if w.harness == "cli":
            args = (["resume", journal, "--runtime", endpoint, "--json", "--trace", trace]
                    if resume else
                    ["run", w.task, "--runtime", endpoint, "--journal", journal, "--json",
                     "--seed", str(self.seed), "--trace", trace])
            if self.telemetry:
                args += ["--runtime-telemetry", self.telemetry]
            proc = Proc(args, self.dir / f"{name}.log", module="harness_bt.cli")
        else:
            args = ["harness", "--endpoint", endpoint, "--task", w.task,
                    "--telemetry", telemetry, "--journal", journal,
                    "--run-id", f"{name}-{self.seed}", "--epoch", str(epoch),
                    "--seed", str(self.seed), "--tick-s", str(w.tick_s),
                    "--max-time-s", str(w.max_time_s), "--trace", trace]
            proc = Proc([*args, "--resume"] if resume else args, self.dir / f"{name}.log")
        self.procs.append(proc)
        return proc

    def epoch_started(self, min_epoch: int) -> list[str]:
        """Command ids of at least ``min_epoch`` that the runtime has started."""
        return [cid for cid, r in read_runtime_journal(self.runtime_journal).items()
                if r.command is not None and r.command.epoch >= min_epoch
                and any(str(e.kind) == "started" for e in r.events)]

    def wait_for_epoch(self, min_epoch: int, timeout_s: float,
                       proc: Proc | None = None) -> list[str]:
        """Commands of at least ``min_epoch`` the runtime started (waiting up to
        ``timeout_s``, or until ``proc``, the harness that would send them, has exited)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (proc is None or proc.proc.poll() is None):
            found = self.epoch_started(min_epoch)
            if found:
                return found
            time.sleep(0.1)
        return []

    def wait_for_start(self, k: int, timeout_s: float, *, prefix: str = "",
                       running: Proc | None = None) -> bool:
        """Wait until the exec log shows ``k`` executor starts (of ids starting with
        ``prefix``); False after ``timeout_s``, or as soon as ``running`` has exited."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if running is not None and running.proc.poll() is not None:
                return False
            starts = read_exec_log(self.exec_log)
            if sum(n for cid, n in starts.items() if cid.startswith(prefix)) >= k:
                return True
            time.sleep(0.02)
        return False

    def result(self, proc: Proc) -> dict[str, Any]:
        return proc.line(self.workload.max_time_s + 60.0)

    def close(self) -> None:
        for proc in self.procs:
            proc.close()
