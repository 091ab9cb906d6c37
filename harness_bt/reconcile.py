"""Reconciliation: settle UNKNOWN commands from what the runtime's own record proves.

A command becomes UNKNOWN when its stop was never confirmed, when the harness restarted, or
when evidence was lost; it keeps its resources until reconciled. Every ``interval_s`` the
:class:`Reconciler` queries the runtime about each UNKNOWN command of the run, replays the
events the harness missed (the ledger applies each sequence number at most once), and settles
what the runtime's state proves: STOPPED / ABORTED / REJECTED / NOT_FOUND (and CONTROL_DONE
after a stop request) -> CANCELED when a stop was requested, else FAILED. A runtime still
RUNNING or STOPPING after a stop request is asked to stop again. An UNKNOWN left by an
evaluation (control done, evidence insufficient) is left to evaluation: the runtime cannot
say whether the postcondition holds.
"""

from __future__ import annotations

import math

from harness_bt.bridge import RuntimeState
from harness_bt.context import RunContext
from harness_bt.errors import BridgeError
from harness_bt.ledger import CommandState, Verdict

__all__ = ["Reconciler"]

_PROOF = (RuntimeState.STOPPED, RuntimeState.ABORTED, RuntimeState.REJECTED,
          RuntimeState.NOT_FOUND)
_STILL_GOING = (RuntimeState.RUNNING, RuntimeState.STOPPING, RuntimeState.PENDING)


class Reconciler:
    """Queries the runtime about the run's UNKNOWN commands, at most once per ``interval_s``
    each."""

    def __init__(self, context: RunContext, *, interval_s: float = 0.5) -> None:
        self.context = context
        self.interval_s = interval_s
        self._last_query: dict[str, float] = {}

    def step(self, now: float) -> None:
        ctx = self.context
        ledger = ctx.ledger
        for rec in ledger.active():
            cid = rec.command_id
            if rec.state is not CommandState.UNKNOWN or cid not in ctx.command_phase:
                continue
            if now - self._last_query.get(cid, -math.inf) < self.interval_s:
                continue
            self._last_query[cid] = now
            try:
                status = ctx.bridge.query(cid)
            except BridgeError as exc:
                ctx.breakers.get("bridge").record(False, now)
                ctx.error("query", exc)
                continue
            for ev in sorted(status.events, key=lambda e: e.seq):
                if ev.seq > rec.last_seq:
                    ledger.apply(ev, now=now)
            rs = status.state
            action = "none"
            if rec.state is CommandState.UNKNOWN:
                if rs in _PROOF or (rs is RuntimeState.CONTROL_DONE and rec.stop_requested):
                    verdict = Verdict.CANCELED if rec.stop_requested else Verdict.FAILED
                    ledger.reconcile(cid, now=now, note=f"runtime reports {rs.value}")
                    ledger.verdict(cid, verdict, now=now, evidence=[
                        f"runtime query: {rs.value}"
                        + (f" ({status.reason})" if status.reason else "")])
                    action = verdict.value
                elif rec.stop_requested and rs in _STILL_GOING:
                    ctx.send_cancel(cid)
                    action = "stop_requested_again"
            ctx.emit("reconcile", command_id=cid, runtime_state=rs.value,
                     runtime_reason=status.reason, action=action,
                     state_after=rec.state.value)
