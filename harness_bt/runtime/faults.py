"""A fault the simulator injected, as the runtime hands it to the harness.

A simulator that injects faults (the built-in one: ``--inject slip=0.3``) says in each step's
answer which ones fired in that step (``{"kind": "slip", "step": 212, ...}``, the rest of the
dict being the fault's details). The runtime reads them with :func:`faults_from_wire`, adds
the commands it was executing when the step ran, and hands them to the harness in
:attr:`~harness_bt.runtime.bridge.PollResult.faults`; the runner traces each as a
``fault_injected`` event attributed to the node that sent the command.

A fault is a record for the trace and the reports only: nothing judges a task from it (the
evaluators judge from observations).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness_bt.errors import BridgeError

__all__ = ["MAX_FAULTS_PER_STEP", "FaultFired", "faults_from_wire"]

#: The most fault records one step's answer may carry (more is a malformed answer).
MAX_FAULTS_PER_STEP = 16
_MAX_NAME = 64
_MAX_DETAILS = 16


@dataclass(frozen=True, slots=True)
class FaultFired:
    """One injected fault: ``kind`` (``slip``, ``nudge``, ``occlude``, ...), ``timestep`` (the
    simulator step of the episode it fired in), ``sim_time_s`` (that step's simulated time
    since the episode began; None when the step period is unknown), the GenManip
    ``worker_id``, its ``details`` (JSON-ready: the object, an offset, a camera) and
    ``command_ids``: the commands the runtime was executing in that step."""

    kind: str
    timestep: int
    sim_time_s: float | None = None
    worker_id: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    command_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "timestep": self.timestep, "sim_time_s": self.sim_time_s,
                "worker_id": self.worker_id, "details": dict(self.details),
                "command_ids": list(self.command_ids)}


def _scalar(value: Any) -> bool:
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return not isinstance(value, str) or len(value) <= 200
    return isinstance(value, float) and math.isfinite(value)


def _detail(value: Any) -> bool:
    """A detail value: a short scalar, or a short list of them."""
    if isinstance(value, list | tuple):
        return len(value) <= 8 and all(_scalar(v) for v in value)
    return _scalar(value)


def _bad(where: str, what: str, value: Any) -> BridgeError:
    shown = repr(value)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return BridgeError(
        "BAD_FAULT_RECORD", f"{where}: {what}, got {shown}", where=where,
        fix="a simulator reports each fault as {'kind': NAME, 'step': N, ...details} (short "
            "scalars or lists of them); check the server's version",
        details={"value": shown})


def faults_from_wire(raw: Any, *, worker_id: str = "", step_s: float | None = None,
                     where: str = "faults") -> list[FaultFired]:
    """The fault records of one step's answer (``raw``: its ``faults`` list, or None), each
    checked; ``step_s`` (the control period) gives their simulated time. A malformed list
    raises :class:`~harness_bt.errors.BridgeError` ``BAD_FAULT_RECORD`` naming the entry."""
    if raw is None:
        return []
    if not isinstance(raw, list | tuple) or len(raw) > MAX_FAULTS_PER_STEP:
        raise _bad(where, f"expected a list of at most {MAX_FAULTS_PER_STEP} fault records", raw)
    out = []
    for i, entry in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(entry, Mapping):
            raise _bad(at, "expected an object", entry)
        kind, step = entry.get("kind"), entry.get("step")
        if not isinstance(kind, str) or not kind or len(kind) > _MAX_NAME:
            raise _bad(at, f"'kind' must be a name of 1 to {_MAX_NAME} characters", kind)
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise _bad(at, "'step' must be an integer >= 0", step)
        details = {k: v for k, v in entry.items() if k not in ("kind", "step")}
        if len(details) > _MAX_DETAILS:
            raise _bad(at, f"more than {_MAX_DETAILS} details", sorted(details))
        for key, value in details.items():
            if not isinstance(key, str) or len(key) > _MAX_NAME or not _detail(value):
                raise _bad(f"{at}.{key}", "a detail must be a short scalar or a short list of "
                           "them", value)
        out.append(FaultFired(kind, step, None if step_s is None else round(step * step_s, 4),
                              worker_id, {k: list(v) if isinstance(v, tuple) else v
                                          for k, v in details.items()}))
    return out
