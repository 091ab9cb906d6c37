"""Structured values inside trace events: a node's outcome, a tree's status changes, the task
budget's limits; each with the check that reads it from the event's data."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness_bt.events.base import _Bad, flag, integer, mapping, number, optional, text

__all__ = ["OutcomeInfo", "budget_limits", "outcome_info", "status_changes"]

_int = optional(integer)
_num = optional(number)


@dataclasses.dataclass(frozen=True, slots=True)
class OutcomeInfo:
    """A node's or a tree's outcome as the trace writes it (``failure`` and ``outcome``
    events): ``kind`` (succeeded, failed, unknown, budget_exhausted, ...), the reason code,
    the node, the command, the evidence (``details``) and the outcome that caused it."""

    kind: str
    reason: str = ""
    node_path: str = ""
    retryable: bool = False
    command_id: str | None = None
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    cause: OutcomeInfo | None = None


def outcome_info(value: Any) -> OutcomeInfo:
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        raise _Bad("an outcome (an object with a string 'kind')")
    try:
        return OutcomeInfo(
            kind=value["kind"], reason=optional(text)(value.get("reason")) or "",
            node_path=optional(text)(value.get("node_path")) or "",
            retryable=bool(optional(flag)(value.get("retryable"))),
            command_id=optional(text)(value.get("command_id")),
            details=optional(mapping)(value.get("details")) or {},
            cause=None if value.get("cause") is None else outcome_info(value["cause"]))
    except _Bad as exc:
        raise _Bad(f"an outcome whose fields are well typed ({exc})") from None


def status_changes(value: Any) -> dict[str, tuple[str, str]]:
    """node path -> (status before, status after)."""
    if isinstance(value, dict) and all(
            isinstance(v, list | tuple) and len(v) == 2 and all(isinstance(s, str) for s in v)
            for v in value.values()):
        return {str(k): (v[0], v[1]) for k, v in value.items()}
    raise _Bad("an object of node path -> [status before, status after]")


def budget_limits(value: Any) -> dict[str, Any]:
    """The task budget's limits: ``max_retries`` and ``max_time_s`` (each may be null)."""
    if isinstance(value, dict):
        try:
            _int(value.get("max_retries"))
            _num(value.get("max_time_s"))
            return value
        except _Bad:
            pass
    raise _Bad("an object of max_retries (an integer or null) and max_time_s (a number or "
               "null)")
