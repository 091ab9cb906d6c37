"""Faults as data: the trace event of each fault a simulator injected, and what the run made
of it.

:func:`trace_fault` writes a ``fault_injected`` event as the runner polls the fault in: the
runtime says which commands it was executing in the step the fault fired, and the run
attributes the fault to the one of them its own tree sent (its phase, node path and skill).

:func:`fault_outcomes` reads one episode's trace afterwards: for each fault, the first retry
or recovery the tree drew after it and before the next fault (its ``response``), and whether
the episode then *recovered*: a retry or recovery followed the fault and the task still
succeeded (with the simulator not judging it failed). A fault with no response in a task
that succeeded was *tolerated* (nothing had to be redone). :func:`faults_note` says when a
run asked for faults that never fired, so "robust" and "never tested" read differently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness_bt.context import RunContext
from harness_bt.events import (
    BudgetEvent,
    FaultInjectedEvent,
    RecoveryEvent,
    TraceKind,
    parse_event,
)
from harness_bt.runtime.faults import FaultFired

__all__ = ["fault_counts", "fault_outcomes", "faults_note", "late_faults", "trace_fault"]

#: The budget draws that redo work: a retry, or a recovery's return to its attempt.
_REDO = ("retries", "recoveries")


def trace_fault(ctx: RunContext, fault: FaultFired, active_phases: Sequence[str]) -> None:
    """Trace ``fault`` (see the module docstring); with no command of this run executing, the
    phase is the first active one and node, command and skill are None."""
    mine = [c for c in fault.command_ids if c in ctx.command_phase]
    command = mine[0] if mine else None
    phase = ctx.command_phase[command] if command else (active_phases[0] if active_phases
                                                         else None)
    record = ctx.ledger.find(command) if command else None
    ctx.emit(TraceKind.FAULT_INJECTED, command_id=command, fault=fault.kind,
             timestep=fault.timestep, sim_time_s=fault.sim_time_s, worker_id=fault.worker_id,
             phase=phase, node_path=ctx.command_node.get(command) if command else None,
             skill=record.command.skill if record is not None else None,
             details=dict(fault.details), running=list(fault.command_ids))


def fault_outcomes(events: Iterable[Mapping[str, Any]], *, succeeded: bool,
                   sim_success: bool | None) -> list[dict[str, Any]]:
    """Each fault of one episode's trace, oldest first: kind, timestep, simulated time,
    phase, node, command, skill, details, the tree's ``response`` (the first retry or
    recovery after it and before the next fault: ``{"kind": "retry" | "recovery", "node",
    "after_s"}``, or None),
    ``recovered`` and ``tolerated`` (see the module docstring)."""
    ok = succeeded and sim_success is not False
    out: list[dict[str, Any]] = []
    waiting: list[tuple[dict[str, Any], float]] = []  # faults with no response yet
    for event in map(parse_event, events):
        match event:
            case FaultInjectedEvent():
                item = {"kind": event.fault, "timestep": event.timestep,
                        "sim_time_s": event.sim_time_s, "phase": event.phase,
                        "node": event.node_path, "command": event.command_id,
                        "skill": event.skill, "details": dict(event.details),
                        "response": None}
                out.append(item)
                waiting = [(item, event.mono)]  # an earlier fault's response came before it
            case RecoveryEvent() | BudgetEvent(granted=True) if waiting:
                if isinstance(event, BudgetEvent) and event.draw not in _REDO:
                    continue
                kind = "recovery" if isinstance(event, RecoveryEvent) or \
                    event.draw == "recoveries" else "retry"
                node = event.node_path
                for item, at in waiting:
                    item["response"] = {"kind": kind, "node": node,
                                        "after_s": round(event.mono - at, 3)}
                waiting = []
    for item in out:
        item["recovered"] = ok and item["response"] is not None
        item["tolerated"] = ok and item["response"] is None
    return out


def faults_note(asked: Mapping[str, float], fired: Sequence[Mapping[str, Any]]) -> str | None:
    """A line for a run that asked for faults: which kinds never fired in the episode
    (None when nothing was asked, or every kind asked for fired)."""
    wanted = {k: float(v) for k, v in asked.items() if float(v) > 0}
    if not wanted:
        return None
    seen = {str(f["kind"]) for f in fired}
    missing = [k for k in wanted if k not in seen]
    if not missing:
        return None
    asked_text = ",".join(f"{k}={v:g}" for k, v in wanted.items())
    if len(missing) == len(wanted):
        return f"asked {asked_text}; none fired in this episode"
    return f"asked {asked_text}; {', '.join(missing)} did not fire in this episode"


def late_faults(raw: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Faults that fired after the task ended (while the runtime held the robot still for the
    simulator's verdict; :class:`~harness_bt.runtime.faults.FaultFired` dicts), in the shape
    of :func:`fault_outcomes` with ``after_task`` True: nothing could respond to them."""
    return [{"kind": f["kind"], "timestep": f["timestep"], "sim_time_s": f.get("sim_time_s"),
             "phase": None, "node": None, "command": None, "skill": None,
             "details": dict(f.get("details") or {}), "response": None, "recovered": False,
             "tolerated": False, "after_task": True} for f in raw]


def fault_counts(episodes: Iterable[Sequence[Mapping[str, Any]] | None]
                 ) -> dict[str, dict[str, int]]:
    """Per fault kind over episodes (each its :func:`fault_outcomes` list; None: not
    recorded, skipped): ``fired``, ``recovered``, ``tolerated``, and ``episodes`` (how many
    episodes it fired in), kinds in name order."""
    out: dict[str, dict[str, int]] = {}
    for faults in episodes:
        seen: set[str] = set()
        for f in faults or ():
            kind = str(f["kind"])
            row = out.setdefault(kind, {"fired": 0, "recovered": 0, "tolerated": 0,
                                        "episodes": 0})
            row["fired"] += 1
            row["recovered"] += bool(f.get("recovered"))
            row["tolerated"] += bool(f.get("tolerated"))
            if kind not in seen:
                seen.add(kind)
                row["episodes"] += 1
    return dict(sorted(out.items()))
