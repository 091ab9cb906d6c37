"""Why a run did not end ``done``, read from its trace: what a summary prints beside the
reason, so that the evidence (``{"blue_cube": "never seen"}``) is not only in the trace.

- A task that reached an ``aborted_<why>`` final: the outcome that raised the chart's last
  failing event (its phase, the event, the reason, the node, the command, and the node's
  evidence, e.g. the objects an observation missed, or the verdict's evidence).
- A run the runner stopped (the simulator ended the episode, the budget ran out, the chart
  stalled, a time or tick limit): the stop, with what made it (the ``episode_ended`` notice,
  the ``budget`` or ``stalled`` event); a stop asked for from the console: the stop and who
  asked (``by``: source, control, client, peer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness_bt.events import (
    BudgetEvent,
    Event,
    NoticeEvent,
    OutcomeEvent,
    StalledEvent,
    StopEvent,
    parse_event,
)

__all__ = ["why_not_done"]

#: the record type of the event that explains a stop of the runner, by the stop's reason
_STOP_EVIDENCE: dict[str, type[Event]] = {"aborted_episode_ended": NoticeEvent,
                                          "aborted_budget_exhausted": BudgetEvent,
                                          "aborted_stalled": StalledEvent}


def why_not_done(events: Iterable[Event | Mapping[str, Any]], reason: str,
                 command_reasons: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The explanation of a run that ended with ``reason`` (None when it is ``done``, or the
    trace holds nothing that explains it). ``events``: the trace (records or the dicts it
    holds); ``command_reasons``: command id -> its final reason (a verdict's evidence), added
    when the failing outcome names a command."""
    if reason == "done":
        return None
    stop: StopEvent | None = None
    failing: OutcomeEvent | None = None
    last: dict[type[Event], Event] = {}
    for event in events:
        match e := parse_event(event):
            case StopEvent():
                stop = e
            case OutcomeEvent() if e.outcome.kind != "succeeded":
                failing = e
            case BudgetEvent() | StalledEvent() | NoticeEvent(notice_kind="episode_ended"):
                last[type(e)] = e
    if stop is not None and stop.reason == reason:
        out: dict[str, Any] = {"stopped": reason}
        if stop.by:  # asked for from outside the runner (the console): who and how
            out["by"] = dict(stop.by)
        kind = _STOP_EVIDENCE.get(reason)
        evidence = last.get(kind) if kind is not None else None
        if evidence is not None:
            out["evidence"] = dict(evidence.notice if isinstance(evidence, NoticeEvent)
                                   and evidence.notice else evidence.data)
        return out
    if failing is None:
        return None
    outcome = failing.outcome
    out = {"phase": failing.phase, "event": failing.event, "reason": outcome.reason,
           "node": outcome.node_path}
    cid = outcome.command_id
    if cid:
        out["command"] = cid
        if command_reasons and command_reasons.get(cid):
            out["command_reason"] = command_reasons[cid]
    details = dict(outcome.details)
    if len(details) == 1:  # {"missing": {...}} -> {...}
        (only,) = details.values()
        out["evidence"] = only
    elif details:
        out["evidence"] = details
    if outcome.cause is not None and outcome.cause.reason:
        out["cause"] = outcome.cause.reason
    return {k: v for k, v in out.items() if v not in (None, "")}
