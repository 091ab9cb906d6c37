"""Fault scenarios: one run of a task through a real runtime process while one fault class is
injected, audited from the runtime's records (:mod:`runtime_bridge.chaos.truth`).

Each run starts a runtime process (``python -m runtime_bridge.chaos runtime``) on a fresh
journal, a :class:`~runtime_bridge.zmq.faults.FaultProxy` in front of it, and a harness process
(``python -m runtime_bridge.chaos harness``) that talks to the runtime through the proxy.
Telemetry goes straight from the runtime to the harness. Faults that need a moment
"mid-command" wait for the ``k``-th executor start in the runtime's exec log.

Fault classes (:data:`FAULTS`): ``drop``, ``delay``, ``duplicate``, ``reorder`` (replies),
``runtime_kill`` (SIGKILL, restart on the same journal and ports), ``harness_kill`` (SIGKILL,
then ``--resume``), ``partition`` (longer than the lease), ``two_harnesses`` (a newer epoch
takes over; the older one's dispatch and cancel must be refused), ``hostile`` (malformed,
truncated and oversized frames: the harness's own requests and replies corrupted, and a hostile
peer talking to the runtime directly).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import zmq

from harness_bt.bridge import RuntimeState
from harness_bt.errors import BridgeError, HarnessError
from harness_bt.ledger import Command
from runtime_bridge.chaos.runtime import LIMITS
from runtime_bridge.chaos.truth import (
    RunTruth,
    audit,
    read_exec_log,
    read_ledger,
    read_runtime_journal,
)
from runtime_bridge.zmq.bridge import ZmqBridge, ZmqBridgeConfig
from runtime_bridge.zmq.faults import FaultProxy
from runtime_bridge.zmq.wire import Message, MessageType, decode, encode

__all__ = ["FAULTS", "PICK_AND_PLACE", "RunOutcome", "Workload", "run_once"]

FAULTS = ("none", "drop", "delay", "duplicate", "reorder", "runtime_kill", "harness_kill",
          "partition", "two_harnesses", "hostile")
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Workload:
    """What a run executes. ``task``: the harness's ``--task``; ``backend`` / ``executors``:
    the runtime's; ``kill_at``: the executor start (1-based) after which a mid-command fault
    fires; ``settle_s``: how long after that start (the command is running). ``harness``:
    ``chaos`` (``python -m runtime_bridge.chaos harness``) or ``cli`` (``harness run --runtime
    --journal`` and ``harness resume``)."""

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


@dataclass
class RunOutcome:
    """One run: the fault, whether the task completed, the audit, and the row-specific checks
    (``checks[name] = True`` when it held)."""

    fault: str
    seed: int
    completed: bool
    outcome: str
    truth: RunTruth
    wall_s: float
    checks: dict[str, bool] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"fault": self.fault, "seed": self.seed, "completed": self.completed,
                "outcome": self.outcome, "wall_s": round(self.wall_s, 2),
                "checks": self.checks, "truth": self.truth.to_dict(), "details": self.details}


# ---------------------------------------------------------------------- processes


class _Proc:
    """A child process whose stderr goes to a file; killed and reaped on ``close``."""

    def __init__(self, args: list[str], log: Path, *,
                 module: str = "runtime_bridge.chaos") -> None:
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
class _Run:
    """The files and processes of one run."""

    workload: Workload
    dir: Path
    seed: int
    procs: list[_Proc] = field(default_factory=list)
    runtime: _Proc | None = None
    endpoints: dict[str, Any] = field(default_factory=dict)

    @property
    def runtime_journal(self) -> Path:
        return self.dir / "runtime.db"

    @property
    def exec_log(self) -> Path:
        return self.dir / "executions.log"

    def start_runtime(self, bind: str = "tcp://127.0.0.1:*",
                      telemetry: str = "tcp://127.0.0.1:*") -> dict[str, Any]:
        w = self.workload
        proc = _Proc(["runtime", "--backend", w.backend, "--executors", w.executors,
                      "--bind", bind, "--telemetry", telemetry,
                      "--journal", str(self.runtime_journal), "--exec-log", str(self.exec_log),
                      "--control-hz", str(w.control_hz), "--lease-ms", str(w.lease_ms),
                      "--seed", str(self.seed)], self.dir / "runtime.log")
        self.procs.append(proc)
        self.runtime = proc
        self.endpoints = proc.line(w.ready_timeout_s)
        return self.endpoints

    def start_harness(self, endpoint: str, *, name: str = "harness", epoch: int = 1,
                      resume: bool = False) -> _Proc:
        """A harness process on ``<name>.db``. ``epoch`` is for the chaos harness only (the
        ``harness`` command takes a new epoch from the runtime on connect)."""
        w = self.workload
        journal = str(self.dir / f"{name}.db")
        trace = str(self.dir / f"{name}{'.resumed' if resume else ''}.jsonl")
        if w.harness == "cli":
            args = (["resume", journal, "--runtime", endpoint, "--json", "--trace", trace]
                    if resume else
                    ["run", w.task, "--runtime", endpoint, "--journal", journal, "--json",
                     "--seed", str(self.seed), "--trace", trace])
            proc = _Proc(args, self.dir / f"{name}.log", module="harness_bt.cli")
        else:
            args = ["harness", "--endpoint", endpoint, "--task", w.task,
                    "--telemetry", str(self.endpoints["telemetry"]), "--journal", journal,
                    "--run-id", f"{name}-{self.seed}", "--epoch", str(epoch),
                    "--seed", str(self.seed), "--tick-s", str(w.tick_s),
                    "--max-time-s", str(w.max_time_s), "--trace", trace]
            proc = _Proc([*args, "--resume"] if resume else args, self.dir / f"{name}.log")
        self.procs.append(proc)
        return proc

    def epoch_started(self, min_epoch: int) -> list[str]:
        """Command ids of at least ``min_epoch`` that the runtime has started."""
        return [cid for cid, r in read_runtime_journal(self.runtime_journal).items()
                if r.command is not None and r.command.epoch >= min_epoch
                and any(str(e.kind) == "started" for e in r.events)]

    def wait_for_epoch(self, min_epoch: int, timeout_s: float,
                       proc: _Proc | None = None) -> list[str]:
        """Commands of at least ``min_epoch`` the runtime started (waiting up to
        ``timeout_s``, or until ``proc``, the harness that would send them, has exited)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (proc is None or proc.proc.poll() is None):
            found = self.epoch_started(min_epoch)
            if found:
                return found
            time.sleep(0.1)
        return []

    def wait_for_start(self, k: int, timeout_s: float, *, prefix: str = "") -> bool:
        """Wait until the exec log shows ``k`` executor starts (of ids starting with
        ``prefix``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            starts = read_exec_log(self.exec_log)
            if sum(n for cid, n in starts.items() if cid.startswith(prefix)) >= k:
                return True
            time.sleep(0.02)
        return False

    def result(self, proc: _Proc) -> dict[str, Any]:
        return proc.line(self.workload.max_time_s + 60.0)

    def close(self) -> None:
        for proc in self.procs:
            proc.close()


# ---------------------------------------------------------------------- injectors


class _Injector:
    """Calls ``inject(rng)`` at seeded random intervals on its own thread until stopped."""

    def __init__(self, inject: Callable[[random.Random], None], seed: int,
                 every_s: tuple[float, float] = (0.2, 0.6)) -> None:
        self._inject = inject
        self._rng = random.Random(seed)
        self._every = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-injector", daemon=True)
        self.count = 0

    def __enter__(self) -> _Injector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.wait(self._rng.uniform(*self._every)):
            self._inject(self._rng)
            self.count += 1


class _HostilePeer:
    """Sends malformed, truncated, oversized and otherwise wrong frames straight to the
    runtime from raw sockets, on its own thread; counts the answers it gets."""

    def __init__(self, endpoint: str, seed: int, context: zmq.Context) -> None:
        self.endpoint = endpoint
        self.context = context
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-hostile", daemon=True)
        self.sent = 0
        self.error_replies = 0
        self.silent = 0
        self.dropped_connections = 0

    def __enter__(self) -> _HostilePeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10.0)

    def _frames(self) -> tuple[str, list[bytes]]:
        good = [bytes(f) for f in encode(Message(MessageType.QUERY, 7, "manip", "x",
                                                 {"n": 1}))]
        kind = self._rng.choice(["garbage", "truncated", "oversized_body", "bad_version",
                                 "unknown_type", "extra_frames", "empty_body", "bad_json",
                                 "no_such_service"] * 3 + ["huge_frame"])
        if kind == "garbage":
            return kind, [self._rng.randbytes(self._rng.randint(1, 64))]
        if kind == "truncated":
            return kind, [good[0][: self._rng.randint(1, len(good[0]) - 1)]]
        if kind == "oversized_body":
            return kind, [good[0], b'{"a":"' + b"x" * ((1 << 20) + 10) + b'"}']
        if kind == "huge_frame":  # past the socket's hard cap: ZeroMQ drops the connection
            return kind, [good[0], b"x" * (LIMITS.hard_cap_bytes + (1 << 16))]
        if kind == "bad_version":
            return kind, [good[0][:3] + bytes([99]) + good[0][4:], good[1]]
        if kind == "unknown_type":
            return kind, [good[0][:4] + bytes([250]) + good[0][5:], good[1]]
        if kind == "extra_frames":
            return kind, [*good, b"stray", b"more"]
        if kind == "empty_body":
            return kind, [good[0], b""]
        if kind == "bad_json":
            return kind, [good[0], b"{not json"]
        other = [bytes(f) for f in encode(Message(MessageType.QUERY, 9, "nope", "x"))]
        return kind, other

    def _run(self) -> None:
        while not self._stop.wait(self._rng.uniform(0.05, 0.2)):
            sock = self.context.socket(zmq.REQ)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RCVTIMEO, 2000)
            try:
                sock.connect(self.endpoint)
                kind, frames = self._frames()
                sock.send_multipart(frames)
                self.sent += 1
                try:
                    reply = decode(sock.recv_multipart())
                    if reply.type is MessageType.ERROR:
                        self.error_replies += 1
                except zmq.Again:
                    if kind == "huge_frame":
                        self.dropped_connections += 1
                    else:
                        self.silent += 1
            finally:
                sock.close(0)


# ---------------------------------------------------------------------- one run


def _outcome_of(answer: dict[str, Any]) -> tuple[bool, str]:
    """(succeeded, reason) from either harness's JSON answer."""
    if "episodes" in answer:  # harness run / resume --json
        episodes = answer.get("episodes") or [{}]
        last = episodes[-1]
        return last.get("outcome") == "succeeded", str(last.get("reason", "?"))
    result = answer.get("result") or {}
    return result.get("outcome") == "succeeded", str(result.get("reason", "?"))


def _commands_of(answer: dict[str, Any]) -> dict[str, str]:
    if "episodes" in answer:
        episodes = answer.get("episodes") or [{}]
        return dict((episodes[-1].get("details") or {}).get("command_reasons") or {})
    result = answer.get("result") or {}
    return {cid: f"{state} {result.get('command_reasons', {}).get(cid, '')}"
            for cid, state in (result.get("commands") or {}).items()}


def run_once(fault: str, seed: int, workdir: str | os.PathLike[str],
             workload: Workload = PICK_AND_PLACE) -> RunOutcome:
    """Run ``workload`` once under ``fault`` (one of :data:`FAULTS`) and audit it."""
    if fault not in FAULTS:
        raise BridgeError("INVALID_CONFIG", f"unknown fault {fault!r}; known: "
                          f"{', '.join(FAULTS)}", fix="pick one of the listed fault classes")
    run = _Run(workload, Path(workdir), seed)
    if run.dir.exists() and any(run.dir.iterdir()):
        raise BridgeError("INVALID_CONFIG", f"chaos run directory {run.dir} is not empty; its "
                          "journals and exec log would mix with this run's",
                          fix="give each run a new (or empty) directory")
    run.dir.mkdir(parents=True, exist_ok=True)
    context = zmq.Context()
    proxy: FaultProxy | None = None
    began = time.monotonic()
    checks: dict[str, bool] = {}
    details: dict[str, Any] = {}
    ledgers = [run.dir / "harness.db"]
    try:
        ready = run.start_runtime()
        proxy = FaultProxy(ready["bind"], context=context, seed=seed)
        endpoint = proxy.start()
        try:
            answer = _SCENARIOS[fault](run, proxy, endpoint, context, checks, details, ledgers)
        except HarnessError as exc:  # a process that failed or went silent: a failed run
            details["error"] = exc.to_dict()
            checks["ran_to_the_end"] = False
            answer = {}
        details["proxy"] = dataclasses.asdict(proxy.counts)
        alive = run.runtime is not None and run.runtime.proc.poll() is None
        checks["runtime_alive"] = alive
        if run.runtime is not None:
            code = run.runtime.terminate()
            checks["runtime_clean_exit"] = code == 0
            with contextlib.suppress(HarnessError, ValueError):
                details["runtime_loop"] = run.runtime.line(5.0).get("loop")
        completed, outcome = _outcome_of(answer)
        details["harness"] = _commands_of(answer)
    finally:
        if proxy is not None:
            proxy.stop()
        run.close()
        context.term()
    truth = audit(runtime_journal=run.runtime_journal, exec_log=run.exec_log, ledgers=ledgers)
    return RunOutcome(fault, seed, completed, outcome, truth, time.monotonic() - began,
                      checks, details)


_Scenario = Callable[[_Run, FaultProxy, str, zmq.Context, dict[str, bool], dict[str, Any],
                      list[Path]], dict[str, Any]]


def _with_rates(every_s: tuple[float, float] = (0.2, 0.6),
                inject: Callable[[FaultProxy, random.Random], None] | None = None,
                **rates: float) -> _Scenario:
    """A scenario that sets per-message fault ``rates`` on the proxy for the whole run (and
    calls ``inject`` at seeded random intervals, when given)."""
    def scenario(run: _Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                 checks: dict[str, bool], details: dict[str, Any],
                 ledgers: list[Path]) -> dict[str, Any]:
        proxy.set_rates(**rates)
        harness = run.start_harness(endpoint)
        if inject is None:
            return run.result(harness)
        with _Injector(lambda rng: inject(proxy, rng), run.seed, every_s) as injector:
            answer = run.result(harness)
        details["injections"] = injector.count
        return answer
    return scenario


def _delay(proxy: FaultProxy, rng: random.Random) -> None:
    # mostly under the poll timeout (late but answered), sometimes past every timeout (the
    # client gives up, resends on a new socket, and the late reply goes nowhere)
    proxy.delay_replies(rng.choice([0.05, 0.1, 0.2, 0.2, 0.7]))


def _reorder_hold(proxy: FaultProxy, rng: random.Random) -> None:
    # held replies wait for a later one to overtake them, or at most this long: under the
    # client's timeout (a late answer) or past it (the client has resent on a new socket)
    proxy.reorder_replies(0, hold_s=rng.choice([0.2, 0.8]))


def _hostile(run: _Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
             checks: dict[str, bool], details: dict[str, Any],
             ledgers: list[Path]) -> dict[str, Any]:
    proxy.set_rates(corrupt_requests=0.05, corrupt_replies=0.05)
    harness = run.start_harness(endpoint)
    with _HostilePeer(run.endpoints["bind"], run.seed, context) as peer:
        answer = run.result(harness)
    details["hostile"] = {"sent": peer.sent, "error_replies": peer.error_replies,
                          "silent": peer.silent, "dropped_connections": peer.dropped_connections}
    # everything answerable was answered (a frame past the hard cap drops the connection)
    checks["hostile_answered"] = peer.silent == 0 and peer.sent > 0
    return answer


def _runtime_kill(run: _Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                  checks: dict[str, bool], details: dict[str, Any],
                  ledgers: list[Path]) -> dict[str, Any]:
    harness = run.start_harness(endpoint)
    w = run.workload
    first = dict(run.endpoints)
    if run.wait_for_start(w.kill_at, w.max_time_s):
        time.sleep(w.settle_s)
        assert run.runtime is not None
        run.runtime.kill()
        details["killed_after_starts"] = dict(read_exec_log(run.exec_log))
        time.sleep(1.0)
        again = run.start_runtime(bind=first["bind"], telemetry=first["telemetry"])
        details["restarted"] = again.get("restarted")
        checks["restart_reported_in_flight"] = bool(again.get("restarted"))
    else:
        details["note"] = f"the task never reached executor start {w.kill_at}"
    return run.result(harness)


def _harness_kill(run: _Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                  checks: dict[str, bool], details: dict[str, Any],
                  ledgers: list[Path]) -> dict[str, Any]:
    harness = run.start_harness(endpoint)
    w = run.workload
    if not run.wait_for_start(w.kill_at, w.max_time_s):
        details["note"] = f"the task never reached executor start {w.kill_at}"
        return run.result(harness)
    time.sleep(w.settle_s)
    harness.kill()
    details["killed_after_starts"] = dict(read_exec_log(run.exec_log))
    # the runtime protects itself: the lease runs out and the running command is held
    time.sleep(w.lease_ms / 1000.0 + 0.5)
    resumed = run.start_harness(endpoint, resume=True)
    answer = run.result(resumed)
    # every command the dead harness had sent is settled (terminal) in the resumed ledger
    records, _ = read_ledger(run.dir / "harness.db")
    open_left = [cid for cid in details["killed_after_starts"]
                 if cid in records and not records[cid].terminal]
    details["left_open"] = open_left
    checks["in_flight_settled"] = not open_left
    return answer


def _partition(run: _Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
               checks: dict[str, bool], details: dict[str, Any],
               ledgers: list[Path]) -> dict[str, Any]:
    harness = run.start_harness(endpoint)
    w = run.workload
    if run.wait_for_start(w.kill_at, w.max_time_s):
        time.sleep(w.settle_s)
        proxy.partition(True)
        time.sleep(2.5 * w.lease_ms / 1000.0)
        proxy.partition(False)
        held = [r for r in read_runtime_journal(run.runtime_journal).values()
                if r.reason.startswith("LEASE_EXPIRED")]
        checks["held_on_lease_expiry"] = bool(held)
    return run.result(harness)


def _two_harnesses(run: _Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                   checks: dict[str, bool], details: dict[str, Any],
                   ledgers: list[Path]) -> dict[str, Any]:
    old = run.start_harness(endpoint, name="harness", epoch=1)
    w = run.workload
    ledgers.append(run.dir / "newer.db")
    if not run.wait_for_start(w.kill_at, w.max_time_s):
        details["note"] = f"the task never reached executor start {w.kill_at}"
        return run.result(old)
    time.sleep(w.settle_s)
    records = read_runtime_journal(run.runtime_journal)
    old_epoch = max((r.command.epoch for r in records.values() if r.command is not None),
                    default=1)
    newer = run.start_harness(endpoint, name="newer", epoch=old_epoch + 1)
    mine = run.wait_for_epoch(old_epoch + 1, w.max_time_s, newer)
    if mine:
        # the older epoch, by hand: a cancel of the newer harness's command and a dispatch of
        # a fresh command must both be refused
        records = read_runtime_journal(run.runtime_journal)
        running = [cid for cid in mine if records[cid].state is RuntimeState.RUNNING] or mine
        stale = ZmqBridge(ZmqBridgeConfig(endpoint=endpoint, epoch=old_epoch, telemetry=""),
                          context=context)
        try:  # refused whatever the target's state; a running one keeps running
            ack = stale.cancel(running[0])
            checks["stale_cancel_refused"] = not ack.accepted and "STALE_EPOCH" in ack.reason
            details["stale_cancel_target"] = {"command_id": running[0],
                                              "state": ack.state.value}
            probe = Command(command_id=f"stale-probe-{run.seed}", skill="home", params={},
                            epoch=old_epoch, start_within_ms=5000, execution_timeout_ms=5000)
            ack = stale.dispatch(probe)
            checks["stale_dispatch_refused"] = not ack.accepted and "STALE_EPOCH" in ack.reason
        except BridgeError as exc:
            details["stale_probe_error"] = exc.to_dict()
            checks["stale_probe_answered"] = False
        finally:
            stale.close()
    answer_old = run.result(old)
    answer_new = run.result(newer)
    # nothing of the older epoch was accepted once the runtime had seen the newer one (its
    # first command at the latest: a hello or heartbeat may have taken over sooner)
    records = read_runtime_journal(run.runtime_journal)
    newer_at = min((r.received_wall for r in records.values()
                    if r.command is not None and r.command.epoch > old_epoch), default=None)
    late = [cid for cid, r in records.items()
            if newer_at is not None and r.command is not None and r.command.epoch <= old_epoch
            and r.received_wall > newer_at and r.accepted]
    checks["no_stale_command_accepted"] = newer_at is not None and not late
    details["accepted_after_takeover"] = late
    details["older_outcome"] = _outcome_of(answer_old)
    return answer_new


_SCENARIOS: dict[str, _Scenario] = {
    "none": _with_rates(),
    "drop": _with_rates(drop_replies=0.15),
    "delay": _with_rates((0.5, 1.5), _delay),
    "duplicate": _with_rates(duplicate_replies=0.3),
    "reorder": _with_rates((0.5, 1.5), _reorder_hold, reorder_replies=0.15),
    "runtime_kill": _runtime_kill,
    "harness_kill": _harness_kill,
    "partition": _partition,
    "two_harnesses": _two_harnesses,
    "hostile": _hostile,
}
