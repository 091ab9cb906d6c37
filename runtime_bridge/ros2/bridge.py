"""The ledger across the ROS 2 action protocol: a :class:`~harness_bt.RuntimeBridge` whose
commands are action goals.

- One command id, one goal: the goal id is ``goal_uuid(command_id)`` (uuid5), kept in
  :attr:`Ros2Bridge.goals`. A dispatch of a command the bridge already sent returns the first
  answer (``duplicate=True``) and sends nothing; a send_goal that got no answer is resent with
  the same goal id (a server that already has it answers as before, never runs it twice).
- The answer: accepted -> ``Ack(PENDING)``; rejected -> ``Ack(accepted=False, REJECTED)``
  (ROS 2's SendGoal response carries no reason, so the reason names the action server and the
  goal); no answer within ``timeout_s`` x ``retries`` -> :class:`BridgeError`
  ``OUTCOME_UNKNOWN`` (the ledger marks the command UNKNOWN; the status topic reconciles it).
- Statuses and results become the ledger's events, each at most once, in order:
  EXECUTING -> ``started``, feedback -> ``progress`` (the mapping's feedback field), SUCCEEDED
  -> ``control_done`` (a control action finishing is not success: the evaluators judge),
  ABORTED -> ``aborted`` (with the result's reason), CANCELED -> ``stopped``. The first
  terminal status wins; a later or duplicate one (status topic and get_result both report it)
  is counted in :attr:`duplicates` and never applied.
- ``cancel``: a cancel_goal request; accepted -> ``Ack(STOPPING)`` and the command stays
  CANCELING in the ledger until a terminal status arrives (which may be SUCCEEDED: "cancel
  accepted" is not CANCELED).
- ``query``: the latest status the server published for the goal; when the server is gone
  (its status writer no longer matched) a :class:`BridgeError` ``RUNTIME_UNREACHABLE``, never a
  guess.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import BridgeError
from harness_bt.ledger import Command, CommandEvent
from harness_bt.runtime.bridge import Ack, PollResult, RuntimeState, RuntimeStatus
from runtime_bridge.ros2.actions import ActionClient, ActionUpdate, GoalStatus, goal_uuid
from runtime_bridge.ros2.mapping import SkillMapping
from runtime_bridge.ros2.transport import Transport

__all__ = ["RESULT_WAIT_POLLS", "Ros2Bridge", "TrackedGoal"]

#: After a terminal status, how many polls to wait for the result (its reason) before ending
#: the command on the status alone.
RESULT_WAIT_POLLS = 20

_STATE = {GoalStatus.UNKNOWN: RuntimeState.NOT_FOUND, GoalStatus.ACCEPTED: RuntimeState.PENDING,
          GoalStatus.EXECUTING: RuntimeState.RUNNING, GoalStatus.CANCELING: RuntimeState.STOPPING,
          GoalStatus.SUCCEEDED: RuntimeState.CONTROL_DONE, GoalStatus.ABORTED: RuntimeState.ABORTED,
          GoalStatus.CANCELED: RuntimeState.STOPPED}
_EVENT = {GoalStatus.SUCCEEDED: "control_done", GoalStatus.ABORTED: "aborted",
          GoalStatus.CANCELED: "stopped"}


@dataclass
class TrackedGoal:
    """One command's goal as the bridge follows it."""

    command_id: str
    goal: uuid.UUID
    client: ActionClient
    progress_field: str
    reason_field: str
    ack: Ack | None = None
    status: GoalStatus = GoalStatus.UNKNOWN
    started: bool = False
    terminal: GoalStatus | None = None
    reason: str = ""
    seq: int = 0
    events: list[CommandEvent] = field(default_factory=list)
    #: a terminal status seen before its result: polls left to wait for the result's reason
    result_wait: int = 0


class Ros2Bridge:
    """See the module docstring."""

    def __init__(self, participant: Transport, mapping: SkillMapping, *,
                 clock: Clock | None = None, timeout_s: float = 1.0, retries: int = 3,
                 wait_s: float = 0.002) -> None:
        self.participant = participant
        self.mapping = mapping
        self.clock = clock or SystemClock()
        self.timeout_s, self.retries, self.wait_s = timeout_s, retries, wait_s
        self.clients: dict[str, ActionClient] = {}
        self.goals: dict[str, TrackedGoal] = {}
        self._by_goal: dict[uuid.UUID, TrackedGoal] = {}
        self._out: list[CommandEvent] = []
        self.duplicates = 0
        self.goals_sent = 0
        for binding in mapping.bindings.values():
            if binding.action not in self.clients:
                self.clients[binding.action] = ActionClient(participant, binding.action,
                                                            binding.action_type)

    def wait_for_servers(self, timeout_s: float, skills: set[str] | None = None) -> list[str]:
        """Wait until the action servers of ``skills`` (all: None) are matched; the names
        still missing after ``timeout_s``."""
        names = {b.action for b in self.mapping.bindings.values()
                 if skills is None or b.skill in skills}
        deadline = self.clock.monotonic() + timeout_s
        while True:
            missing = sorted(n for n in names if not self.clients[n].server_ready)
            if not missing or self.clock.monotonic() >= deadline:
                return missing
            self.clock.sleep(0.01)

    # ------------------------------------------------------------------ RuntimeBridge

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        cid = command.command_id
        known = self.goals.get(cid)
        if known is not None and known.ack is not None:
            a = known.ack
            return Ack(cid, a.accepted, a.state, a.reason, duplicate=True)
        binding = self.mapping.binding(command.skill)
        client = self.clients[binding.action]
        goal_msg = self.mapping.build_goal(self.participant.types, binding, command,
                                           start_budget_ms)
        tracked = known or TrackedGoal(cid, goal_uuid(cid), client, binding.progress,
                                       binding.reason)
        self.goals[cid] = tracked
        self._by_goal[tracked.goal] = tracked
        for _ in range(self.retries):
            client.send_goal(tracked.goal, goal_msg)
            self.goals_sent += 1
            response = self._await(tracked, "response")
            if response is None:
                continue
            if response.accepted:
                tracked.ack = Ack(cid, True, RuntimeState.PENDING)
                client.get_result(tracked.goal)
            else:
                tracked.ack = Ack(cid, False, RuntimeState.REJECTED,
                                  f"GOAL_REJECTED: the action server {client.name} rejected goal "
                                  f"{tracked.goal} (ROS 2's SendGoal response carries no reason;"
                                  " the server's log says why)")
                tracked.terminal = GoalStatus.ABORTED
            return tracked.ack
        raise BridgeError("OUTCOME_UNKNOWN", f"send_goal of {cid!r} (goal {tracked.goal}) to "
                          f"{client.name} got no answer after {self.retries} tries; the server "
                          "may or may not have it", command_id=cid, where=client.name,
                          fix="mark it UNKNOWN and reconcile from the status topic; never "
                          "resend it under a new id", details={"goal_id": str(tracked.goal)})

    def cancel(self, command_id: str) -> Ack:
        tracked = self.goals.get(command_id)
        if tracked is None:
            return Ack(command_id, False, RuntimeState.NOT_FOUND, "no goal was sent for it")
        if tracked.terminal is not None:
            return Ack(command_id, False, _STATE[tracked.terminal], "the goal is already over")
        for _ in range(self.retries):
            tracked.client.cancel_goal(tracked.goal)
            answer = self._await(tracked, "cancel")
            if answer is None:
                continue
            if answer.code == 0:
                return Ack(command_id, True, RuntimeState.STOPPING)
            return Ack(command_id, False, _STATE[tracked.status], f"CANCEL_REFUSED: "
                       f"{tracked.client.name} answered {answer.code.name}")
        raise BridgeError("OUTCOME_UNKNOWN", f"cancel_goal of {command_id!r} got no answer from "
                          f"{tracked.client.name}", command_id=command_id,
                          where=tracked.client.name, fix="the status topic tells the outcome")

    def query(self, command_id: str) -> RuntimeStatus:
        self._drain()
        tracked = self.goals.get(command_id)
        if tracked is None:
            return RuntimeStatus(command_id, RuntimeState.NOT_FOUND)
        if tracked.terminal is None and not tracked.client.server_seen:
            raise BridgeError("RUNTIME_UNREACHABLE", f"the action server {tracked.client.name} "
                              f"is gone; goal {tracked.goal} of {command_id!r} cannot be asked "
                              "about", command_id=command_id, where=tracked.client.name,
                              fix="restart the robot's action server; the command stays UNKNOWN "
                              "until its status topic reports the goal")
        state = _STATE[tracked.terminal or tracked.status]
        return RuntimeStatus(command_id, state, tracked.reason, tracked.seq,
                             tuple(tracked.events))

    def poll(self) -> PollResult:
        self._drain()
        out, self._out = self._out, []
        return PollResult(events=tuple(out))

    def close(self) -> None:
        self.participant.close()

    # ------------------------------------------------------------------ internals

    def _await(self, tracked: TrackedGoal, kind: str) -> ActionUpdate | None:
        deadline = self.clock.monotonic() + self.timeout_s
        while self.clock.monotonic() < deadline:
            for update in self._drain(want=(tracked.goal, kind)):
                return update
            self.clock.sleep(self.wait_s)
        return None

    def _drain(self, want: tuple[uuid.UUID, str] | None = None) -> list[ActionUpdate]:
        found: list[ActionUpdate] = []
        for client in self.clients.values():
            for update in client.poll():
                if want is not None and (update.goal, update.kind) == want:
                    found.append(update)
                    continue
                self._apply(update)
        for t in self.goals.values():
            if t.result_wait > 0 and t.terminal is None:
                t.result_wait -= 1
                if t.result_wait == 0:
                    self._end(t, t.status, "")
        return found

    def _emit(self, t: TrackedGoal, kind: str, reason: str = "",
              progress: float | None = None) -> None:
        t.seq += 1
        event = CommandEvent(t.command_id, t.seq, kind, reason=reason, progress=progress,
                             data={"goal_id": str(t.goal)})
        t.events.append(event)
        self._out.append(event)

    def _apply(self, update: ActionUpdate) -> None:
        t = self._by_goal.get(update.goal)
        if t is None:
            return  # another client's goal on the same action
        if update.kind == "status":
            t.status = update.status
            if update.status in (GoalStatus.EXECUTING, GoalStatus.CANCELING) and not t.started \
                    and t.terminal is None:
                t.started = True
                self._emit(t, "started")
            if update.status.terminal and t.terminal is None and t.result_wait == 0:
                # the reason is in the result: ask (again: a restarted server lost the first
                # request) and wait a few polls for it before ending without it
                t.result_wait = RESULT_WAIT_POLLS
                t.client.get_result(t.goal)
            elif update.status.terminal and t.terminal is not None:
                self.duplicates += 1
        elif update.kind == "feedback" and t.terminal is None:
            value = getattr(update.message, t.progress_field, None) if t.progress_field else None
            progress = float(value) if isinstance(value, (int, float)) and math.isfinite(
                float(value)) else None
            if not t.started:
                t.started = True
                self._emit(t, "started")
            self._emit(t, "progress", progress=progress)
        elif update.kind == "result":
            reason = str(getattr(update.message, t.reason_field, "") or "") \
                if t.reason_field else ""
            if update.status.terminal:
                self._end(t, update.status, reason)

    def _end(self, t: TrackedGoal, status: GoalStatus, reason: str) -> None:
        if t.terminal is not None:
            self.duplicates += 1  # a second report of the end: recorded, never applied
            return
        t.terminal = status
        t.reason = reason or (f"the action server {t.client.name} aborted goal {t.goal}"
                              if status is GoalStatus.ABORTED else "")
        if not t.started:
            t.started = True
            self._emit(t, "started")
        self._emit(t, _EVENT[status], reason=t.reason)
