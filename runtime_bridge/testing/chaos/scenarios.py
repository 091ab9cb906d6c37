"""Fault scenarios: one run of a task through a real runtime process while one fault class is
injected, audited from the runtime's records (:mod:`runtime_bridge.testing.chaos.truth`).

Each run starts a runtime process (``python -m runtime_bridge.testing.chaos runtime``) on a
fresh journal, a :class:`~runtime_bridge.testing.fault_proxy.FaultProxy` in front of it, and a
harness process (``harness run --runtime``, or ``python -m runtime_bridge.testing.chaos
harness``: see :class:`~runtime_bridge.testing.chaos.processes.Workload`) that talks to the
runtime through the proxy.
Telemetry goes through a :class:`~runtime_bridge.testing.telemetry_faults.TelemetryFaultProxy`
(faultless but in the telemetry rows). Faults that need a moment "mid-command" wait for the
``k``-th executor start in the runtime's exec log.

Fault classes (:data:`FAULTS`): ``none`` (the baseline), ``drop``, ``delay``, ``duplicate``,
``reorder`` (replies), ``runtime_kill`` (SIGKILL, restart on the same journal and ports),
``harness_kill`` (SIGKILL, then ``harness resume`` / ``--resume``), ``partition`` (longer than
the lease), ``two_harnesses`` (a newer epoch takes over; the older one's dispatch and cancel
must be refused), ``hostile`` (malformed, truncated and oversized frames: the harness's own
requests and replies corrupted, and a hostile peer talking to the runtime directly),
``telemetry_drop`` (most telemetry messages lost), ``telemetry_delay`` (telemetry delayed,
reordered and duplicated), ``telemetry_silence`` (no telemetry at all for longer than the lease,
mid-command, while the control channel works). Telemetry is liveness evidence only: its loss may
make a run slower, never wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from harness_bt.errors import BridgeError, HarnessError, reason_code
from harness_bt.ledger import Command
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.host.record import RuntimeReason
from runtime_bridge.testing.chaos.injectors import HostilePeer, Injector
from runtime_bridge.testing.chaos.processes import PICK_AND_PLACE, Proc, Run, Workload
from runtime_bridge.testing.chaos.truth import (
    RunTruth,
    audit,
    read_exec_log,
    read_ledger,
    read_runtime_journal,
)
from runtime_bridge.testing.fault_proxy import FaultProxy
from runtime_bridge.testing.telemetry_faults import TelemetryFaultProxy
from runtime_bridge.zmq.bridge import ZmqBridge, ZmqBridgeConfig

__all__ = ["FAULTS", "PICK_AND_PLACE", "RunOutcome", "Workload", "run_once"]

FAULTS = ("none", "drop", "delay", "duplicate", "reorder", "runtime_kill", "harness_kill",
          "partition", "two_harnesses", "hostile", "telemetry_drop", "telemetry_delay",
          "telemetry_silence")
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
    run = Run(workload, Path(workdir), seed)
    if run.dir.exists() and any(run.dir.iterdir()):
        raise BridgeError("INVALID_CONFIG", f"chaos run directory {run.dir} is not empty; its "
                          "journals and exec log would mix with this run's",
                          fix="give each run a new (or empty) directory")
    run.dir.mkdir(parents=True, exist_ok=True)
    context = zmq.Context()
    proxy: FaultProxy | None = None
    telemetry: TelemetryFaultProxy | None = None
    began = time.monotonic()
    checks: dict[str, bool] = {}
    details: dict[str, Any] = {}
    ledgers = [run.dir / "harness.db"]
    try:
        ready = run.start_runtime()
        proxy = FaultProxy(ready["bind"], context=context, seed=seed)
        endpoint = proxy.start()
        telemetry = TelemetryFaultProxy(ready["telemetry"], context=context, seed=seed)
        run.telemetry = telemetry.start()
        try:
            answer = _SCENARIOS[fault](run, proxy, endpoint, context, checks, details, ledgers,
                                       telemetry)
        except HarnessError as exc:  # a process that failed or went silent: a failed run
            details["error"] = exc.to_dict()
            checks["ran_to_the_end"] = False
            answer = {}
        details["proxy"] = dataclasses.asdict(proxy.counts)
        details["telemetry_proxy"] = dataclasses.asdict(telemetry.counts)
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
        if telemetry is not None:
            telemetry.stop()
        run.close()
        context.term()
    truth = audit(runtime_journal=run.runtime_journal, exec_log=run.exec_log, ledgers=ledgers)
    return RunOutcome(fault, seed, completed, outcome, truth, time.monotonic() - began,
                      checks, details)


_Scenario = Callable[[Run, FaultProxy, str, zmq.Context, dict[str, bool], dict[str, Any],
                      list[Path], TelemetryFaultProxy], dict[str, Any]]


def _with_rates(every_s: tuple[float, float] = (0.2, 0.6),
                inject: Callable[[FaultProxy, random.Random], None] | None = None,
                **rates: float) -> _Scenario:
    """A scenario that sets per-message fault ``rates`` on the proxy for the whole run (and
    calls ``inject`` at seeded random intervals, when given)."""
    def scenario(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                 checks: dict[str, bool], details: dict[str, Any],
                 ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
        proxy.set_rates(**rates)
        harness = run.start_harness(endpoint)
        if inject is None:
            return run.result(harness)
        with Injector(lambda rng: inject(proxy, rng), run.seed, every_s) as injector:
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


def _hostile(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
             checks: dict[str, bool], details: dict[str, Any],
             ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
    proxy.set_rates(corrupt_requests=0.05, corrupt_replies=0.05)
    harness = run.start_harness(endpoint)
    with HostilePeer(run.endpoints["bind"], run.seed, context) as peer:
        answer = run.result(harness)
    details["hostile"] = {"sent": peer.sent, "error_replies": peer.error_replies,
                          "silent": peer.silent, "dropped_connections": peer.dropped_connections}
    # everything answerable was answered (a frame past the hard cap drops the connection)
    checks["hostile_answered"] = peer.silent == 0 and peer.sent > 0
    return answer


def _runtime_kill(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                  checks: dict[str, bool], details: dict[str, Any],
                  ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
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


def _harness_kill(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                  checks: dict[str, bool], details: dict[str, Any],
                  ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
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


def _cut_mid_command(run: Run, endpoint: str, cut: Callable[[bool], None], *,
                     until: Callable[[], bool] | None = None, tries: int = 1
                     ) -> tuple[Proc, int]:
    """Start a harness; once executor ``kill_at`` runs, ``cut(True)`` for 2.5 leases, then
    ``cut(False)``. With ``until``, cut again at each next executor start (at most ``tries``
    cuts in all) until ``until()`` holds: a command may end before a lease runs out. Returns
    the harness and how many cuts were made."""
    harness = run.start_harness(endpoint)
    w = run.workload
    at, cuts = w.kill_at, 0
    while cuts < tries and run.wait_for_start(at, w.max_time_s, running=harness):
        time.sleep(w.settle_s)
        at = sum(read_exec_log(run.exec_log).values()) + 1  # the next command after this one
        cut(True)
        time.sleep(2.5 * w.lease_ms / 1000.0)
        cut(False)
        cuts += 1
        if until is None or until():
            break
    return harness, cuts


def _held_on_lease_expiry(run: Run) -> list[str]:
    return [cid for cid, r in read_runtime_journal(run.runtime_journal).items()
            if reason_code(r.reason) == RuntimeReason.LEASE_EXPIRED]


def _partition(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
               checks: dict[str, bool], details: dict[str, Any],
               ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
    # a short command can end before its lease runs out; then the next one is cut
    harness, cuts = _cut_mid_command(run, endpoint, proxy.partition, tries=3,
                                     until=lambda: bool(_held_on_lease_expiry(run)))
    details["partitions"] = cuts
    if cuts:
        checks["held_on_lease_expiry"] = bool(_held_on_lease_expiry(run))
    return run.result(harness)


def _two_harnesses(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                   checks: dict[str, bool], details: dict[str, Any],
                   ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
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


def _with_telemetry_faults(delay_s: float = 0.5, hold_s: float = 0.5,
                          **rates: float) -> _Scenario:
    """A scenario that sets per-message ``rates`` on the telemetry proxy for the whole run
    (the control channel is faultless)."""
    def scenario(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                 checks: dict[str, bool], details: dict[str, Any],
                 ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
        telemetry.delay_messages(delay_s)
        telemetry.reorder_hold(hold_s)
        telemetry.set_rates(**rates)
        answer = run.result(run.start_harness(endpoint))
        counts = telemetry.counts
        checks["telemetry_subscribed"] = counts.subscriptions > 0  # the harness used the proxy
        checks["telemetry_faulted"] = (counts.dropped + counts.delayed + counts.reordered
                                       + counts.duplicated) > 0
        return answer
    return scenario


def _telemetry_silence(run: Run, proxy: FaultProxy, endpoint: str, context: zmq.Context,
                       checks: dict[str, bool], details: dict[str, Any],
                       ledgers: list[Path], telemetry: TelemetryFaultProxy) -> dict[str, Any]:
    harness, cuts = _cut_mid_command(run, endpoint, telemetry.silence)
    if cuts:
        checks["telemetry_subscribed"] = telemetry.counts.subscriptions > 0
        checks["telemetry_silenced"] = telemetry.counts.silenced > 0
    else:
        details["note"] = f"the task never reached executor start {run.workload.kill_at}"
    answer = run.result(harness)
    # the control channel kept every lease: silent telemetry is no reason to hold a command
    held = _held_on_lease_expiry(run)
    details["held_on_lease_expiry"] = held
    checks["no_lease_expired"] = not held
    return answer


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
    "telemetry_drop": _with_telemetry_faults(drop=0.7),
    "telemetry_delay": _with_telemetry_faults(delay_s=1.5, hold_s=0.8, delay=0.3, reorder=0.2,
                                              duplicate=0.2),
    "telemetry_silence": _telemetry_silence,
}
