"""The harness process of a chaos run: a :class:`~harness_bt.run.runner.TaskRunner` over a
:class:`~runtime_bridge.zmq.ZmqBridge`, on a durable ledger, in real time.

``python -m runtime_bridge.testing.chaos harness --endpoint EP --task TASK --journal run.db
--run-id R`` runs the task once and prints one JSON line (the
:class:`~harness_bt.run.result.TaskResult`).
``--resume`` is for a harness that was killed: it reopens the ledger (every open command comes
back UNKNOWN), asks the runtime to stop each of them, settles each from the runtime's own record
(query), and only then runs the task again under a new run id (``R.r1``, ``R.r2``...): no
command of the dead process is ever sent again. The chart starts from its initial phase (a
resumed run re-observes the world and carries on from what it sees).

``TASK`` is a task file (``trees/pick_and_place.yaml``) or ``package.module:function``
returning ``(task, skills)`` (skills None: the installed ones).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.ledger import CommandState, Ledger, Verdict
from harness_bt.plugins import load_reference
from harness_bt.run.runner import TaskRunner
from harness_bt.run.settings import RunnerSettings, RunParts
from harness_bt.runtime.bridge import RuntimeState
from harness_bt.skill import SkillRegistry
from harness_bt.task import Task
from harness_bt.world import Perception, scripted_perception
from runtime_bridge.zmq.bridge import ZmqBridge, ZmqBridgeConfig

__all__ = ["load_workload", "main", "settle_open_commands"]


def load_workload(spec: str) -> tuple[Task, SkillRegistry | None, Perception]:
    """The task, its skills and its perception for ``spec`` (see the module docstring). A task
    file is perceived with the installed perception (the colour segmenter); a Python workload
    with the scripted perception."""
    if ":" in spec and not spec.endswith((".yaml", ".yml", ".json", ".xml", ".py")):
        made = load_reference(spec, "chaos workload")()
        task, skills = made
        return task, skills, scripted_perception
    from harness_bt.authoring import load_task
    from harness_bt.world import perception_registry

    registry = perception_registry(entry_points=True)
    names = registry.names()
    if len(names) != 1:
        raise DefinitionError("NO_PERCEPTION", f"{len(names)} perceptions installed "
                              f"({', '.join(names) or 'none'}); a chaos run needs exactly one",
                              fix="pip install -e . registers the colour perception")
    return load_task(spec), None, registry.get(names[0])()


def settle_open_commands(ledger: Ledger, bridge: ZmqBridge, clock: Clock, *,
                         timeout_s: float = 10.0) -> dict[str, str]:
    """Settle every open (UNKNOWN after a reopen) command from the runtime's record: ask the
    runtime to stop it, wait until its record is finished, replay its events, and settle it
    CANCELED (a stop was requested). Returns ``{command_id: runtime state}``; a command the
    runtime never answers for within ``timeout_s`` stays UNKNOWN (and holds its resources)."""
    settled: dict[str, str] = {}
    open_ids = [r.command_id for r in ledger.active()]
    bridge.follow(open_ids)
    deadline = clock.monotonic() + timeout_s
    for cid in open_ids:
        rec = ledger.get(cid)
        if rec.state is CommandState.UNKNOWN and not rec.stop_requested:
            ledger.cancel(cid, now=clock.monotonic())
        while clock.monotonic() < deadline:
            try:
                status = bridge.query(cid)
                if status.state in (RuntimeState.PENDING, RuntimeState.RUNNING):
                    bridge.cancel(cid)
                    status = bridge.query(cid)
            except BridgeError:
                clock.sleep(0.1)
                continue
            if not status.state.finished:
                clock.sleep(0.05)
                continue
            now = clock.monotonic()
            for ev in sorted(status.events, key=lambda e: e.seq):
                if ev.seq > ledger.get(cid).last_seq:
                    ledger.apply(ev, now=now)
            rec = ledger.get(cid)
            if rec.state is CommandState.UNKNOWN:
                ledger.reconcile(cid, now=now, note=f"resume: runtime reports {status.state}")
            if rec.state is CommandState.RECONCILING:
                ledger.verdict(cid, Verdict.CANCELED, now=now, evidence=[
                    f"runtime query: {status.state} ({status.reason})"])
            settled[cid] = status.state.value
            break
    return settled


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m runtime_bridge.testing.chaos harness",
                                description="run a task against a ZeroMQ runtime")
    p.add_argument("--endpoint", required=True)
    p.add_argument("--task", required=True)
    p.add_argument("--journal", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--telemetry", default=None, help="the runtime's PUB endpoint (default: "
                   "ask the runtime)")
    p.add_argument("--epoch", type=int, default=1)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tick-s", type=float, default=1.0 / 30.0)
    p.add_argument("--max-time-s", type=float, default=120.0)
    p.add_argument("--timeout-s", type=float, default=0.5, help="bridge request timeout")
    p.add_argument("--trace", default=None, help="write the run's trace (JSONL) here")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    clock = SystemClock()
    task, skills, perception = load_workload(args.task)
    ledger = Ledger.open(args.journal)
    ledger.epoch = max(ledger.epoch, args.epoch)
    bridge = ZmqBridge(ZmqBridgeConfig(endpoint=args.endpoint, epoch=ledger.epoch,
                                             telemetry=args.telemetry,
                                             timeout_s=args.timeout_s), clock=clock)
    run_id = args.run_id
    settled: dict[str, str] = {}
    began = time.monotonic()
    try:
        if args.resume:
            settled = settle_open_commands(ledger, bridge, clock)
            prior = {r.command_id.split("/", 1)[0] for r in ledger.records()}
            n = 1
            while f"{args.run_id}.r{n}" in prior:
                n += 1
            run_id = f"{args.run_id}.r{n}"
        runner = TaskRunner(task, bridge=bridge, clock=clock, skills=skills, run_id=run_id,
                            trace=args.trace,
                            settings=RunnerSettings(seed=args.seed, tick_period_s=args.tick_s),
                            parts=RunParts(ledger=ledger, perception=perception))
        result = runner.run(timeout_s=args.max_time_s)
        runner.close()
        print(json.dumps({"result": result.to_dict(), "settled": settled, "run_id": run_id,
                          "wall_s": round(time.monotonic() - began, 3)}), flush=True)
    finally:
        bridge.close()
        ledger.close()
    return 0 if result.succeeded else 1
