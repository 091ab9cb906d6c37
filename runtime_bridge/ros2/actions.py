"""The ROS 2 action protocol over a transport (DDS or Zenoh): an action client and an action server.

An action ``/a`` of type ``pkg/action/Name`` is three services and two topics (the "Actions"
design article, design.ros2.org/articles/actions.html, and rcl_action): ``/a/_action/
send_goal`` (goal id + goal -> accepted + stamp), ``/a/_action/get_result`` (goal id ->
status + result, answered once the goal is terminal), ``/a/_action/cancel_goal``
(``action_msgs/srv/CancelGoal``: a ``GoalInfo`` -> return code + the goals now canceling),
``/a/_action/feedback`` (goal id + feedback) and ``/a/_action/status`` (``action_msgs/msg/
GoalStatusArray``, every goal the server still remembers, transient local so a late joiner gets
the latest). Goal ids are UUIDs (``unique_identifier_msgs/UUID``, 16 bytes).

Statuses (``action_msgs/msg/GoalStatus``): ACCEPTED 1, EXECUTING 2, CANCELING 3, SUCCEEDED 4,
CANCELED 5, ABORTED 6; UNKNOWN 0. A terminal status never changes.

Nothing here blocks or starts a thread: both ends are polled by their owner.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

from runtime_bridge.ros2.names import action_service, action_topic
from runtime_bridge.ros2.transport import Request, Transport
from runtime_bridge.ros2.types import CANCEL_GOAL

__all__ = ["ActionClient", "ActionServer", "ActionUpdate", "CancelCode", "GoalStatus",
           "goal_uuid"]

#: Goal ids are derived from command ids in this namespace (uuid5): one command, one goal.
GOAL_NAMESPACE = uuid.UUID("5d1f0c2e-0b7a-4a47-9f43-3b1c2f0e7a11")


def goal_uuid(command_id: str) -> uuid.UUID:
    """The goal id of a command: the same command id always gives the same UUID, so a
    restarted harness resending a command names the goal it already sent."""
    return uuid.uuid5(GOAL_NAMESPACE, command_id)


class GoalStatus(IntEnum):
    UNKNOWN = 0
    ACCEPTED = 1
    EXECUTING = 2
    CANCELING = 3
    SUCCEEDED = 4
    CANCELED = 5
    ABORTED = 6

    @property
    def terminal(self) -> bool:
        return self in (GoalStatus.SUCCEEDED, GoalStatus.CANCELED, GoalStatus.ABORTED)


class CancelCode(IntEnum):
    NONE = 0
    REJECTED = 1
    UNKNOWN_GOAL_ID = 2
    GOAL_TERMINATED = 3


@dataclass(frozen=True, slots=True)
class ActionUpdate:
    """Something an action client heard: ``kind`` is ``response`` (``accepted``), ``status``,
    ``feedback``, ``result`` or ``cancel`` (``code``)."""

    kind: str
    goal: uuid.UUID
    accepted: bool = False
    status: GoalStatus = GoalStatus.UNKNOWN
    message: Any = None
    code: CancelCode = CancelCode.NONE


def _uuid_msg(parts: _Parts, goal: uuid.UUID) -> Any:
    return parts.types.new("unique_identifier_msgs/msg/UUID",
                           uuid=np.frombuffer(goal.bytes, dtype=np.uint8).copy())


def _uuid_of(msg: Any) -> uuid.UUID:
    return uuid.UUID(bytes=bytes(np.asarray(msg.uuid, dtype=np.uint8).tobytes()))


def _stamp(parts: _Parts, t: float) -> Any:
    return parts.types.time(t)


@dataclass
class _Parts:
    participant: Transport
    name: str
    action_type: str

    @property
    def types(self) -> Any:
        return self.participant.types


class ActionClient:
    """The client end of action ``name`` (see the module docstring)."""

    def __init__(self, participant: Transport, name: str, action_type: str) -> None:
        participant.types.require(action_type + "_Goal", where=name)
        self.name = name
        self.action_type = action_type
        self._p = _Parts(participant, name, action_type)
        self._send = participant.service_client(action_service(name, "send_goal"),
                                                action_type + "_SendGoal")
        self._result = participant.service_client(action_service(name, "get_result"),
                                                  action_type + "_GetResult")
        self._cancel = participant.service_client(action_service(name, "cancel_goal"),
                                                  CANCEL_GOAL)
        self._feedback = participant.reader(action_topic(name, "feedback"),
                                            action_type + "_FeedbackMessage")
        self._status = participant.reader(action_topic(name, "status"),
                                          "action_msgs/msg/GoalStatusArray", "action_status")
        self._pending: dict[tuple[str, int], uuid.UUID] = {}

    @property
    def server_ready(self) -> bool:
        """Whether the server's send_goal service and status topic are matched."""
        return self._send.ready and bool(self._status.get_matched_publications())

    @property
    def server_seen(self) -> bool:
        """Whether any writer of the status topic is matched (False once the server's lease
        expired)."""
        return bool(self._status.get_matched_publications())

    def goal(self, **fields: Any) -> Any:
        """A goal message of this action's type."""
        return self._p.types.new(self.action_type + "_Goal", **fields)

    def send_goal(self, goal_id: uuid.UUID, goal: Any) -> None:
        req = self._p.types.new(self.action_type + "_SendGoal_Request",
                                goal_id=_uuid_msg(self._p, goal_id), goal=goal)
        self._pending[("send", self._send.send(req))] = goal_id

    def get_result(self, goal_id: uuid.UUID) -> None:
        req = self._p.types.new(self.action_type + "_GetResult_Request",
                                goal_id=_uuid_msg(self._p, goal_id))
        self._pending[("result", self._result.send(req))] = goal_id

    def cancel_goal(self, goal_id: uuid.UUID) -> None:
        info = self._p.types.new("action_msgs/msg/GoalInfo", goal_id=_uuid_msg(self._p, goal_id))
        req = self._p.types.new(CANCEL_GOAL + "_Request", goal_info=info)
        self._pending[("cancel", self._cancel.send(req))] = goal_id

    def poll(self) -> list[ActionUpdate]:
        """Everything heard since the last poll: replies first, then statuses, feedback."""
        out: list[ActionUpdate] = []
        for seq, rep in self._send.replies():
            goal = self._pending.pop(("send", seq), None)
            if goal is not None:
                out.append(ActionUpdate("response", goal, accepted=bool(rep.accepted)))
        for seq, rep in self._result.replies():
            goal = self._pending.pop(("result", seq), None)
            if goal is not None:
                out.append(ActionUpdate("result", goal, status=_status(rep.status),
                                        message=rep.result))
        for seq, rep in self._cancel.replies():
            goal = self._pending.pop(("cancel", seq), None)
            if goal is not None:
                out.append(ActionUpdate("cancel", goal, code=CancelCode(int(rep.return_code))
                                        if int(rep.return_code) in (0, 1, 2, 3)
                                        else CancelCode.REJECTED))
        for array in self._status.take(16):
            for st in getattr(array, "status_list", ()):
                out.append(ActionUpdate("status", _uuid_of(st.goal_info.goal_id),
                                        status=_status(st.status)))
        for fb in self._feedback.take(64):
            if hasattr(fb, "goal_id"):
                out.append(ActionUpdate("feedback", _uuid_of(fb.goal_id), message=fb.feedback))
        return out


def _status(value: int) -> GoalStatus:
    return GoalStatus(int(value)) if 0 <= int(value) <= 6 else GoalStatus.UNKNOWN


@dataclass
class ServedGoal:
    """A goal as the server keeps it."""

    goal_id: uuid.UUID
    goal: Any
    accepted_at: float
    status: GoalStatus = GoalStatus.ACCEPTED
    result: Any = None
    waiting: list[Request] = field(default_factory=list)


class ActionServer:
    """The server end of action ``name``. ``on_goal(goal_id, goal) -> bool`` accepts or
    rejects a new goal (a goal id it already has is answered as it was the first time, never
    handed over again); ``on_cancel(goal_id) -> bool`` says whether a cancel is taken. The
    owner moves goals on with :meth:`set_status`, :meth:`succeed` / :meth:`abort` /
    :meth:`canceled` and :meth:`feedback`. ``clock()`` gives the stamps (seconds)."""

    def __init__(self, participant: Transport, name: str, action_type: str, *,
                 on_goal: Callable[[uuid.UUID, Any], bool],
                 on_cancel: Callable[[uuid.UUID], bool], clock: Callable[[], float]) -> None:
        participant.types.require(action_type + "_Goal", where=name)
        self.name = name
        self.action_type = action_type
        self._p = _Parts(participant, name, action_type)
        self._send = participant.service_server(action_service(name, "send_goal"),
                                                action_type + "_SendGoal")
        self._result = participant.service_server(action_service(name, "get_result"),
                                                  action_type + "_GetResult")
        self._cancel = participant.service_server(action_service(name, "cancel_goal"),
                                                  CANCEL_GOAL)
        self._feedback = participant.writer(action_topic(name, "feedback"),
                                            action_type + "_FeedbackMessage")
        self._status = participant.writer(action_topic(name, "status"),
                                          "action_msgs/msg/GoalStatusArray", "action_status")
        self._on_goal, self._on_cancel, self._clock = on_goal, on_cancel, clock
        self.goals: dict[uuid.UUID, ServedGoal] = {}
        self.rejected: set[uuid.UUID] = set()
        self.duplicate_goals = 0
        self._dirty = True

    def spin_once(self) -> None:
        """Answer every request that arrived; publish the status array when it changed."""
        for req in self._send.requests():
            gid = _uuid_of(req.message.goal_id)
            known = self.goals.get(gid)
            if known is not None or gid in self.rejected:
                self.duplicate_goals += 1
                accepted = known is not None
            else:
                accepted = bool(self._on_goal(gid, req.message.goal))
                if accepted:
                    self.goals[gid] = ServedGoal(gid, req.message.goal, self._clock())
                    self._dirty = True
                else:
                    self.rejected.add(gid)
            self._send.reply(req, self._p.types.new(
                self.action_type + "_SendGoal_Response", accepted=accepted,
                stamp=_stamp(self._p, self._clock())))
        for req in self._result.requests():
            gid = _uuid_of(req.message.goal_id)
            served = self.goals.get(gid)
            if served is None:
                self._reply_result(req, GoalStatus.UNKNOWN, None)
            elif served.status.terminal:
                self._reply_result(req, served.status, served.result)
            else:
                served.waiting.append(req)
        for req in self._cancel.requests():
            self._answer_cancel(req)
        if self._dirty:
            self._publish_status()

    def _answer_cancel(self, req: Request) -> None:
        gid = _uuid_of(req.message.goal_info.goal_id)
        served = self.goals.get(gid)
        canceling = []
        if served is None:
            code = CancelCode.UNKNOWN_GOAL_ID
        elif served.status.terminal:
            code = CancelCode.GOAL_TERMINATED
        elif served.status == GoalStatus.CANCELING or self._on_cancel(gid):
            code = CancelCode.NONE
            self.set_status(gid, GoalStatus.CANCELING)
            canceling.append(self._p.types.new("action_msgs/msg/GoalInfo",
                                               goal_id=_uuid_msg(self._p, gid),
                                               stamp=_stamp(self._p, served.accepted_at)))
        else:
            code = CancelCode.REJECTED
        self._cancel.reply(req, self._p.types.new(CANCEL_GOAL + "_Response",
                                                  return_code=int(code),
                                                  goals_canceling=canceling))

    def _reply_result(self, req: Request, status: GoalStatus, result: Any) -> None:
        if result is None:
            result = self._p.types.new(self.action_type + "_Result")
        self._result.reply(req, self._p.types.new(self.action_type + "_GetResult_Response",
                                                  status=int(status), result=result))

    def set_status(self, goal_id: uuid.UUID, status: GoalStatus, result: Any = None) -> bool:
        """Move a goal on; False (and nothing changes) when it is unknown or already terminal."""
        served = self.goals.get(goal_id)
        if served is None or served.status.terminal or served.status == status:
            return False
        served.status = status
        self._dirty = True
        if status.terminal:
            served.result = result
            for req in served.waiting:
                self._reply_result(req, status, result)
            served.waiting.clear()
        return True

    def feedback(self, goal_id: uuid.UUID, **fields: Any) -> None:
        msg = self._p.types.new(self.action_type + "_FeedbackMessage",
                                goal_id=_uuid_msg(self._p, goal_id),
                                feedback=self._p.types.new(self.action_type + "_Feedback",
                                                           **fields))
        self._feedback(msg)

    def result(self, **fields: Any) -> Any:
        return self._p.types.new(self.action_type + "_Result", **fields)

    def _publish_status(self) -> None:
        items = [self._p.types.new("action_msgs/msg/GoalStatus", status=int(g.status),
                                   goal_info=self._p.types.new(
                                       "action_msgs/msg/GoalInfo",
                                       goal_id=_uuid_msg(self._p, g.goal_id),
                                       stamp=_stamp(self._p, g.accepted_at)))
                 for g in self.goals.values()]
        self._status(self._p.types.new("action_msgs/msg/GoalStatusArray", status_list=items))
        self._dirty = False
