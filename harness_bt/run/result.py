"""How a run ended: :class:`TaskResult`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskResult"]


@dataclass(frozen=True)
class TaskResult:
    """How a run ended.

    ``outcome``: ``succeeded`` (final reason ``done``), ``aborted`` (a final ``aborted_<why>``
    state, or the runner stopped a stalled / budget-exhausted chart), ``timeout`` or
    ``max_ticks``. ``reason``: the final state's reason (``done``, ``aborted_<why>``) or the
    runner's. ``commands``: every command of the run with its final state; ``unknowns``: those
    left UNKNOWN (their resources stay held until reconciled).
    """

    task_id: str
    run_id: str
    outcome: str
    reason: str
    phases_visited: tuple[str, ...]
    commands: Mapping[str, str]
    command_reasons: Mapping[str, str]
    retries: int
    recoveries: int
    replans: int
    unknowns: tuple[str, ...]
    unknown_verdicts: int
    durations: Mapping[str, float]
    ticks: int
    decision_latency_s: tuple[float, ...] = ()
    protection_latency_s: tuple[float | None, ...] = ()
    trace_path: str | None = None
    final_state: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.outcome == "succeeded"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
