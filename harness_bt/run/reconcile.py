"""Reconciliation: settle UNKNOWN commands from what the runtime's own record proves.

A command becomes UNKNOWN when its stop was never confirmed, when the harness restarted, or
when evidence was lost; it keeps its resources until reconciled. Every ``interval_s`` the
:class:`Reconciler` queries the runtime about each UNKNOWN command of the run, replays the
events the harness missed (the ledger applies each sequence number at most once), and settles
what the runtime's state proves: STOPPED / ABORTED / REJECTED / NOT_FOUND (and CONTROL_DONE
after a stop request) -> CANCELED when a stop was requested, else FAILED; a command a harness
restart left open that the runtime never started (NOT_FOUND, REJECTED) -> CANCELED, so its
step may be issued again under the next attempt number. A runtime still RUNNING or STOPPING
after a stop request is asked to stop again; one still running a command nobody asked to stop
(a restarted harness finds it mid-way) is *followed*: the command goes RECONCILING and is
queried (and its events read) until it ends, then settles by its events (control done ->
evaluation; aborted / stopped -> FAILED). An UNKNOWN left by an
evaluation (control done, evidence insufficient) is left to evaluation: the runtime cannot
say whether the postcondition holds.
"""

from __future__ import annotations

import math

from harness_bt.context import RunContext
from harness_bt.errors import BridgeError
from harness_bt.events import TraceKind
from harness_bt.ledger import CommandRecord, CommandState, Verdict
from harness_bt.runtime.bridge import RuntimeState, RuntimeStatus

__all__ = ["Reconciler"]

_PROOF = (RuntimeState.STOPPED, RuntimeState.ABORTED, RuntimeState.REJECTED,
          RuntimeState.NOT_FOUND)
_STILL_GOING = (RuntimeState.RUNNING, RuntimeState.STOPPING, RuntimeState.PENDING)
_NEVER_RAN = (RuntimeState.NOT_FOUND, RuntimeState.REJECTED)


class Reconciler:
    """Queries the runtime about the run's UNKNOWN commands, at most once per ``interval_s``
    each, and keeps querying the ones it follows (RECONCILING while the runtime runs them)."""

    def __init__(self, context: RunContext, *, interval_s: float = 0.5) -> None:
        self.context = context
        self.interval_s = interval_s
        self._last_query: dict[str, float] = {}
        self.following: set[str] = set()

    def step(self, now: float) -> None:
        ctx = self.context
        ledger = ctx.ledger
        for rec in ledger.active():
            cid = rec.command_id
            if cid not in ctx.command_phase:
                continue
            if rec.state is not CommandState.UNKNOWN and not (
                    rec.state is CommandState.RECONCILING and cid in self.following):
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
            action = self._settle(rec, status, now)
            if rec.terminal or rec.control_done_seen:
                self.following.discard(cid)
            ctx.emit(TraceKind.RECONCILE, command_id=cid, runtime_state=status.state.value,
                     runtime_reason=status.reason, action=action,
                     state_after=rec.state.value)

    def _settle(self, rec: CommandRecord, status: RuntimeStatus, now: float) -> str:
        ctx = self.context
        ledger = ctx.ledger
        cid = rec.command_id
        rs = status.state
        if rec.state not in (CommandState.UNKNOWN, CommandState.RECONCILING):
            return "none"
        evidence = [f"runtime query: {rs.value}" + (f" ({status.reason})" if status.reason
                                                     else "")]
        if rs in _PROOF or (rs is RuntimeState.CONTROL_DONE and rec.stop_requested):
            if rs in _NEVER_RAN and rec.restarted and rec.started_at is None \
                    and not rec.control_done_seen:
                # Left open by a restart and never started by the runtime (which, fenced by the
                # new epoch, never will): settled CANCELED, so the step may be issued again.
                verdict = Verdict.CANCELED
                evidence.append("never started: a restart left it open")
            else:
                verdict = Verdict.CANCELED if rec.stop_requested else Verdict.FAILED
            ledger.reconcile(cid, now=now, note=f"runtime reports {rs.value}")
            ledger.verdict(cid, verdict, now=now, evidence=evidence)
            return verdict.value
        if rs in _STILL_GOING:
            if rec.stop_requested:
                ctx.send_cancel(cid)
                return "stop_requested_again"
            if not rec.control_done_seen and rec.state is CommandState.UNKNOWN:
                ledger.reconcile(cid, now=now, note=f"runtime reports {rs.value}: following "
                                 "it to its end")
                self.following.add(cid)
                return "following"
            return "following" if cid in self.following else "none"
        return "none"
