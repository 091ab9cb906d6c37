"""Taking commands in: submit, cancel and heartbeat, with control epochs and pre-emption.

A submit is idempotent per command id: a resend returns the original answer with
``duplicate=True``, whatever happened since (and renews the lease of a running command, as a
heartbeat would). It is refused for a stale epoch, an expired start budget, a busy resource or
an executor factory's refusal, and the refusal is remembered, so a resend is refused the same
way. Control epochs fence: a newer epoch takes over, and commands, cancels and heartbeats from
an older one are refused; a newer epoch's command that needs a resource held by an older
epoch's command preempts it (held at once, reason ``EPOCH_PREEMPTED``) instead of waiting out
its lease. A cancel for an id never seen burns the id, so a late dispatch of it never runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from harness_bt.errors import HarnessError
from harness_bt.ledger import Command, EventKind
from harness_bt.runtime.bridge import Ack, RuntimeState
from harness_bt.runtime.executor import Executor
from runtime_bridge.host.core import HostCore, Live
from runtime_bridge.host.record import RuntimeReason, RuntimeRecord
from runtime_bridge.host.types import HeartbeatResult

__all__ = ["Intake"]

# looked up once (a submit's hot path): an enum member's lookup, or its .value, is 0.1 us each
_PENDING = RuntimeState.PENDING
_ACCEPTED = RuntimeReason.ACCEPTED.value


class Intake(HostCore):
    """The host's requests: :meth:`submit`, :meth:`cancel`, :meth:`heartbeat` (see the module
    docstring)."""

    def submit(self, command: Command, *, start_budget_ms: float | None = None,
               command_json: str | None = None) -> Ack:
        """Accept ``command`` (state PENDING, started at the next step) or refuse it.
        ``command_json``: its journal text when the caller has it (it must read back equal)."""
        with self._lock:
            self._check_open()
            cid = command.command_id
            old = self._find(cid)
            if old is not None:
                self._batch.reveal(cid)
                if old.command is None or old.digest == command.digest:
                    self._renew_on_resend(command)
                    return old.ack(duplicate=True)
                return Ack(cid, False, RuntimeState.REJECTED,
                           f"{RuntimeReason.COMMAND_ID_CONFLICT}: id {cid!r} is taken by a "
                           f"command of other content (digest {str(old.digest)[:12]}, this one "
                           f"{command.digest[:12]}); a changed command needs a new id")
            problems = command.problems()
            if problems:
                return Ack(cid, False, RuntimeState.REJECTED,
                           f"{RuntimeReason.INVALID_COMMAND}: "
                           + "; ".join(f"{f} {m}" for f, m in problems))
            now = self.clock.monotonic()
            first = len(self._batch.staged)  # this submit's events are staged after ``first``
            refusal = self._refusal(command, start_budget_ms)
            executor: Executor | None = None
            if refusal is None:
                try:
                    executor = self.executors(command)
                except HarnessError as exc:
                    refusal = f"{RuntimeReason.EXECUTOR_REFUSED}: {exc}"
                except Exception as exc:  # a broken factory must not take the runtime down
                    refusal = (f"{RuntimeReason.EXECUTOR_REFUSED}: the executor factory raised "
                               f"{exc!r}")
            rec = RuntimeRecord(cid, command, refusal is None, _PENDING, _ACCEPTED,
                                self.clock.wall(),
                                _command_json=command_json)
            if refusal is not None or executor is None:
                self._end(rec, RuntimeState.REJECTED,
                          refusal or RuntimeReason.EXECUTOR_REFUSED.value, EventKind.REJECTED)
            else:
                budget = command.start_within_ms if start_budget_ms is None else start_budget_ms
                lease = self.config.lease_s
                self._active[cid] = Live(rec, executor, now + budget / 1000.0,
                                         None if lease is None else now + lease)
                for res in command.resources:
                    self._holders[res] = cid
            try:
                self._batch.flush_own(rec, first)
            except BaseException:
                self._forget_unjournaled(cid)
                raise
            return rec.ack(duplicate=False)

    def _forget_unjournaled(self, cid: str) -> None:
        """A submit whose record could not be journaled never happened: nothing runs it, and
        a resend is judged afresh."""
        self._active.pop(cid, None)
        for res in [r for r, holder in self._holders.items() if holder == cid]:
            del self._holders[res]
        self._cache.pop(cid, None)
        self._batch.forget(cid)

    def _renew_on_resend(self, command: Command) -> None:
        """A resent dispatch proves its harness alive, as a heartbeat would: renew the lease
        (a harness blocked in its retries sends no heartbeats meanwhile). Not for an older
        epoch: a fenced harness renews nothing."""
        live = self._active.get(command.command_id)
        if (live is not None and self.config.lease_s is not None
                and command.epoch >= self._epoch):
            live.lease_deadline = self.clock.monotonic() + self.config.lease_s

    def _refusal(self, command: Command, start_budget_ms: float | None) -> str | None:
        if command.epoch < self._epoch:
            return (f"{RuntimeReason.STALE_EPOCH}: command epoch {command.epoch} is older than the "
                    f"runtime's epoch {self._epoch}; a newer controller has taken over")
        self._take_over(command.epoch)
        budget = command.start_within_ms if start_budget_ms is None else start_budget_ms
        if not budget > 0:
            return (f"{RuntimeReason.EXPIRED_COMMAND}: start budget {budget!r} ms left; "
                    "re-plan and re-issue")
        for res in command.resources:
            holder = self._holders.get(res)
            if holder is None:
                continue
            live = self._active[holder]
            older = live.record.command
            if older is not None and older.epoch < command.epoch:
                self._preempt(live, command, res)
                continue
            return (f"{RuntimeReason.RESOURCE_BUSY}: resource {res!r} is held by command "
                    f"{holder!r} ({live.record.state}); wait until it finishes")
        return None

    def _preempt(self, live: Live, command: Command, resource: str) -> None:
        """A newer epoch's command needs ``resource``, held by an older epoch's command: that
        command has lost its controller (its heartbeats and cancels are refused), so it is held
        now instead of when its lease runs out, and the newer command may start. A controller
        that adopts the older command (a resumed harness) follows it and sends nothing that
        conflicts with it, so it is never preempted that way."""
        with contextlib.suppress(Exception):  # the hold needs no cooperation from the executor
            live.executor.request_stop()
        self._finish(live, RuntimeState.STOPPED, f"{RuntimeReason.EPOCH_PREEMPTED}: epoch "
                     f"{command.epoch} command {command.command_id!r} needs {resource!r}",
                     EventKind.STOPPED,
                     {"held": True, "preempted_by": command.command_id})

    def cancel(self, command_id: str, *, epoch: int | None = None) -> Ack:
        """Ask for a stop. A pending command stops at once; a running one is asked to stop
        (STOPPING) and held by force after ``stop_timeout_s``; the confirmation is a ``stopped``
        event. A cancel for an id never seen burns the id (a late dispatch of it never runs)."""
        with self._lock:
            self._check_open()
            self._batch.reveal(command_id)
            if epoch is not None and epoch < self._epoch:
                rec = self._find(command_id)
                return Ack(command_id, False,
                           RuntimeState.NOT_FOUND if rec is None else rec.state,
                           f"{RuntimeReason.STALE_EPOCH}: cancel from epoch {epoch}, the runtime "
                           f"is at epoch {self._epoch}")
            if epoch is not None:
                self._take_over(epoch)
            live = self._active.get(command_id)
            rec = live.record if live is not None else self._find(command_id)
            if rec is None:
                rec = RuntimeRecord(command_id, None, False, RuntimeState.PENDING, "",
                                    self.clock.wall())
                self._end(rec, RuntimeState.STOPPED, RuntimeReason.CANCELED_BEFORE_RECEIPT.value,
                          EventKind.STOPPED)
                self._batch.flush()
                return Ack(command_id, True, RuntimeState.STOPPED,
                           RuntimeReason.CANCELED_BEFORE_RECEIPT.value)
            if live is None:
                return Ack(command_id, False, rec.state,
                           f"{RuntimeReason.ALREADY_FINISHED}: {rec.reason}")
            if rec.state is RuntimeState.STOPPING:
                return rec.ack(duplicate=True)
            if rec.state is RuntimeState.PENDING:
                self._finish(live, RuntimeState.STOPPED, RuntimeReason.CANCEL_REQUESTED.value,
                             EventKind.STOPPED, {"started": False})
            else:
                self._request_stop(live, RuntimeReason.CANCEL_REQUESTED.value)
            self._batch.flush()
            return rec.ack(duplicate=False)

    def heartbeat(
        self, command_ids: Iterable[str] | None = None, *, epoch: int | None = None
    ) -> HeartbeatResult:
        """Renew the leases of ``command_ids`` (all active commands when None)."""
        with self._lock:
            self._check_open()
            ids = list(self._active) if command_ids is None else list(command_ids)
            self._batch.reveal(*ids)
            if epoch is not None and epoch < self._epoch:
                return HeartbeatResult(self._epoch, False,
                                       f"{RuntimeReason.STALE_EPOCH}: heartbeat from epoch "
                                       f"{epoch}, the runtime is at epoch {self._epoch}")
            if epoch is not None:
                self._take_over(epoch)
                self._batch.flush()
            now = self.clock.monotonic()
            renewed, states = [], {}
            for cid in ids:
                live = self._active.get(cid)
                if live is not None:
                    if self.config.lease_s is not None:
                        live.lease_deadline = now + self.config.lease_s
                    renewed.append(cid)
                    states[cid] = live.record.state
                else:
                    rec = self._find(cid)
                    states[cid] = RuntimeState.NOT_FOUND if rec is None else rec.state
            return HeartbeatResult(self._epoch, True, "", tuple(renewed), states)
