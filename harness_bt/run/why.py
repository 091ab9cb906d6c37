"""Why a run did not end ``done``, read from its trace: what a summary prints beside the
reason, so that the evidence (``{"blue_cube": "never seen"}``) is not only in the trace.

- A task that reached an ``aborted_<why>`` final: the outcome that raised the chart's last
  failing event (its phase, the event, the reason, the node, the command, and the node's
  evidence, e.g. the objects an observation missed, or the verdict's evidence).
- A run the runner stopped (the simulator ended the episode, the budget ran out, the chart
  stalled, a time or tick limit): the stop, with what made it (the ``episode_ended`` notice,
  the ``budget`` or ``stalled`` event).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["why_not_done"]

#: trace event kinds that explain a stop of the runner, by the stop's reason
_STOP_EVIDENCE = {"aborted_episode_ended": "notice", "aborted_budget_exhausted": "budget",
                  "aborted_stalled": "stalled"}


def why_not_done(events: Iterable[Mapping[str, Any]], reason: str,
                 command_reasons: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The explanation of a run that ended with ``reason`` (None when it is ``done``, or the
    trace holds nothing that explains it). ``command_reasons``: command id -> its final
    reason (a verdict's evidence), added when the failing outcome names a command."""
    if reason == "done":
        return None
    stop: Mapping[str, Any] | None = None
    failing: Mapping[str, Any] | None = None
    last: dict[str, Mapping[str, Any]] = {}
    for event in events:
        kind = event.get("kind")
        data = event.get("data") or {}
        if kind == "stop":
            stop = data
        elif kind == "outcome" and (data.get("outcome") or {}).get("kind") != "succeeded":
            failing = data
        elif kind in ("budget", "stalled") or (kind == "notice"
                                               and data.get("kind") == "episode_ended"):
            last[str(kind)] = data
    if stop is not None and stop.get("reason") == reason:
        out: dict[str, Any] = {"stopped": reason}
        evidence = last.get(_STOP_EVIDENCE.get(reason, ""))
        if evidence is not None:
            out["evidence"] = dict(evidence.get("notice") or evidence)
        return out
    if failing is None:
        return None
    outcome = failing.get("outcome") or {}
    out = {"phase": failing.get("phase"), "event": failing.get("event"),
           "reason": outcome.get("reason"), "node": outcome.get("node_path")}
    cid = outcome.get("command_id")
    if cid:
        out["command"] = cid
        if command_reasons and command_reasons.get(cid):
            out["command_reason"] = command_reasons[cid]
    evidence = dict(outcome.get("details") or {})
    if len(evidence) == 1:  # {"missing": {...}} -> {...}
        (evidence_value,) = evidence.values()
        out["evidence"] = evidence_value
    elif evidence:
        out["evidence"] = evidence
    cause = outcome.get("cause")
    if isinstance(cause, Mapping) and cause.get("reason"):
        out["cause"] = cause["reason"]
    return {k: v for k, v in out.items() if v not in (None, "")}
