"""A ROS 2 robot from a runtime backend: ``harness sim serve --ros2``.

The backend (the built-in simulator's arm) is stepped by an
:class:`~runtime_bridge.host.ExecutorHost` that runs the skills' executors, as the ZeroMQ
runtime server does; what differs is the door. Each skill of the mapping is served as a ROS 2
action server of its type: ``harness_msgs/action/ExecuteSkill`` carries the whole command; a
standard action (``control_msgs/action/GripperCommand`` ...) is read back into the skill's
params through the same mapping (:mod:`runtime_bridge.ros2.goals`). Every control
period the server publishes ``/joint_states``, ``/tf`` (hand and cameras), each camera's
``/<camera>/image_raw``, ``/<camera>/depth/image_raw`` and ``/<camera>/camera_info``, and once
``/tf_static`` (transient local).

Goals and commands: an ExecuteSkill goal carries its command (``command_json``); it is
accepted when the host accepts the command, and only when its goal id is
``goal_uuid(command_id)`` (one command, one goal); a standard goal becomes the command
``goal-<goal id>``. The host's events move the goal: ``started`` -> EXECUTING, ``progress`` ->
feedback, ``control_done`` -> SUCCEEDED, ``aborted`` / ``rejected`` -> ABORTED (the reason
in the result), ``stopped`` -> CANCELED. A cancel request is handed to the host and the goal
is CANCELING until the host confirms the stop.

With ``goals_file`` the goals (goal id -> command id) are appended to a file, so a restarted
server with the same host journal answers for the goals of its previous life: the host
reports what was running when it died as ABORTED (``RUNTIME_RESTARTED``), and so does the
status topic.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import HarnessError
from harness_bt.ledger import Command
from harness_bt.runtime.backend import Backend
from harness_bt.runtime.bridge import RuntimeState
from harness_bt.runtime.executor import ExecutorFactory
from runtime_bridge.host import ExecutorHost, HostConfig
from runtime_bridge.host.record_store import SqliteRuntimeJournal
from runtime_bridge.ros2 import robot
from runtime_bridge.ros2.actions import ActionServer, GoalStatus, goal_uuid
from runtime_bridge.ros2.dds import Participant
from runtime_bridge.ros2.goals import command_from_goal, feedback_fields, result_fields
from runtime_bridge.ros2.mapping import SkillMapping
from runtime_bridge.ros2.transport import Transport
from runtime_bridge.ros2.types import RosTypes

__all__ = ["EXECUTE_SKILL", "RobotServerSettings", "Ros2RobotServer"]

log = logging.getLogger(__name__)

EXECUTE_SKILL = "harness_msgs/action/ExecuteSkill"

_TERMINAL = {"control_done": GoalStatus.SUCCEEDED, "aborted": GoalStatus.ABORTED,
             "rejected": GoalStatus.ABORTED, "stopped": GoalStatus.CANCELED}
_FROM_STATE = {RuntimeState.CONTROL_DONE: GoalStatus.SUCCEEDED,
               RuntimeState.ABORTED: GoalStatus.ABORTED, RuntimeState.REJECTED: GoalStatus.ABORTED,
               RuntimeState.STOPPED: GoalStatus.CANCELED,
               RuntimeState.RUNNING: GoalStatus.EXECUTING,
               RuntimeState.STOPPING: GoalStatus.CANCELING}


@dataclass(frozen=True)
class RobotServerSettings:
    """How a :class:`Ros2RobotServer` is reached and what it keeps: ``domain`` (the ROS 2
    domain id), ``connect`` (opens its transport; None: a Cyclone DDS participant on
    ``domain``), ``journal`` (a SQLite file for the host's record), ``goals_file`` (goal id ->
    command id, for a restart), ``clock`` and ``publish_images`` (the cameras' topics)."""

    domain: int = 0
    connect: Callable[[RosTypes], Transport] | None = None
    journal: str | None = None
    goals_file: str | None = None
    clock: Clock | None = None
    publish_images: bool = True


class Ros2RobotServer:
    """See the module docstring. ``start()`` starts the control thread; ``stop()`` joins it
    and closes the transport (the DDS participant, the Zenoh session)."""

    def __init__(self, backend: Backend, executors: ExecutorFactory, mapping: SkillMapping,
                 types: RosTypes, settings: RobotServerSettings | None = None) -> None:
        settings = settings or RobotServerSettings()
        journal, goals_file = settings.journal, settings.goals_file
        self.backend = backend
        self.clock = settings.clock or SystemClock()
        self.types = types
        self.host = ExecutorHost(backend, executors, clock=self.clock,
                                 journal=None if journal is None else SqliteRuntimeJournal(journal),
                                 config=HostConfig(lease_s=None))
        try:
            self.participant: Transport = Participant(settings.domain, types) \
                if settings.connect is None else settings.connect(types)
        except BaseException:
            self.host.close()
            raise
        self.servers: dict[str, ActionServer] = {}
        self.skills: dict[str, str] = {}
        self.bindings = dict(mapping.bindings)
        for binding in mapping.bindings.values():
            self.skills[binding.skill] = binding.action
            self.servers[binding.skill] = ActionServer(
                self.participant, binding.action, binding.action_type,
                on_goal=self._goal_handler(binding.skill),
                on_cancel=self._on_cancel, clock=self.clock.wall)
        self._goal_of: dict[str, tuple[str, uuid.UUID]] = {}  # command id -> (skill, goal)
        self._goals_file = None if goals_file is None else Path(goals_file)
        self._joint = self.participant.writer("/joint_states", "sensor_msgs/msg/JointState")
        self._tf = self.participant.writer("/tf", "tf2_msgs/msg/TFMessage")
        self._tf_static = self.participant.writer("/tf_static", "tf2_msgs/msg/TFMessage",
                                                  "tf_static")
        self._publish_images = settings.publish_images
        self._cams: dict[str, Any] = {}
        self._cursor = self.host.cursor
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        self._restore()

    # ------------------------------------------------------------------ goals

    def _restore(self) -> None:
        if self._goals_file is None or not self._goals_file.exists():
            return
        for line in self._goals_file.read_text().splitlines():
            entry = json.loads(line)
            skill, cid, gid = entry["skill"], entry["command_id"], uuid.UUID(entry["goal"])
            server = self.servers.get(skill)
            if server is None:
                continue
            from runtime_bridge.ros2.actions import ServedGoal

            server.goals[gid] = ServedGoal(gid, None, float(entry.get("t", 0.0)))
            self._goal_of[cid] = (skill, gid)
            state = self.host.query(cid).state
            status = _FROM_STATE.get(state)
            if status is not None:
                reason = self.host.query(cid).reason
                server.set_status(gid, status, self._result(skill, status, reason)
                                  if status.terminal else None)
            elif state is RuntimeState.NOT_FOUND:
                server.set_status(gid, GoalStatus.ABORTED, self._result(
                    skill, GoalStatus.ABORTED,
                    "RUNTIME_RESTARTED: the runtime has no record of this command"))

    def _result(self, skill: str, status: GoalStatus, reason: str) -> Any:
        server, binding = self.servers[skill], self.bindings[skill]
        if binding.action_type == EXECUTE_SKILL:
            return server.result(reason=reason)
        return server.result(**result_fields(binding, server.result(),
                                             finished=status is GoalStatus.SUCCEEDED,
                                             reason=reason))

    def _goal_handler(self, skill: str) -> Callable[[uuid.UUID, Any], bool]:
        return lambda gid, goal: self._on_goal(skill, gid, goal)

    def _on_goal(self, skill: str, gid: uuid.UUID, goal: Any) -> bool:
        binding = self.bindings[skill]
        try:
            if binding.action_type == EXECUTE_SKILL:
                command = Command.from_wire(json.loads(goal.command_json))
            else:  # a standard action: the mapping read the other way
                command = command_from_goal(binding, gid, goal, epoch=self.host.epoch)
                return self._submit(skill, gid, command, None)
        except (ValueError, HarnessError, TypeError) as exc:
            log.warning("goal %s on %s refused: its command does not parse: %s", gid, skill, exc)
            return False
        if command.skill != skill or command.command_id != goal.command_id \
                or goal_uuid(command.command_id) != gid:
            log.warning("goal %s refused: skill %s / command %s does not match the action %s "
                        "and its goal id", gid, command.skill, command.command_id, skill)
            return False
        budget = float(goal.start_budget_ms)
        return self._submit(skill, gid, command, budget if budget > 0 else None)

    def _submit(self, skill: str, gid: uuid.UUID, command: Command,
                budget: float | None) -> bool:
        ack = self.host.submit(command, start_budget_ms=budget)
        if not ack.accepted:
            log.warning("goal %s (%s) rejected: %s", gid, command.command_id, ack.reason)
            return False
        self._goal_of[command.command_id] = (skill, gid)
        if self._goals_file is not None:
            with self._goals_file.open("a") as f:
                f.write(json.dumps({"skill": skill, "command_id": command.command_id,
                                    "goal": str(gid), "t": self.clock.wall()}) + "\n")
        return True

    def _on_cancel(self, gid: uuid.UUID) -> bool:
        for cid, (_, g) in self._goal_of.items():
            if g == gid:
                return bool(self.host.cancel(cid).accepted)
        return False

    def _apply_events(self) -> None:
        batch = self.host.events_since(self._cursor)
        self._cursor = batch.next_cursor
        for event in batch.events:
            found = self._goal_of.get(event.command_id)
            if found is None:
                continue
            server = self.servers[found[0]]
            kind = str(event.kind)
            if kind == "started":
                server.set_status(found[1], GoalStatus.EXECUTING)
            elif kind == "progress":
                progress = float("nan") if event.progress is None else float(event.progress)
                binding = self.bindings[found[0]]
                if binding.action_type == EXECUTE_SKILL:
                    server.feedback(found[1], progress=progress,
                                    stage=str(event.data.get("segment", "")))
                else:
                    sample = self.types.new(binding.action_type + "_Feedback")
                    server.feedback(found[1], **feedback_fields(binding, sample, progress))
            elif kind in _TERMINAL:
                status = _TERMINAL[kind]
                server.set_status(found[1], status, self._result(found[0], status, event.reason))

    # ------------------------------------------------------------------ the loop

    def start(self) -> dict[str, Any]:
        self.host.reset()
        self._tf_static(robot.static_tf(self.types, self.clock.wall()))
        self._thread = threading.Thread(target=self._loop, name="harness-ros2-robot",
                                        daemon=True)
        self._thread.start()
        return {"domain": self.participant.domain, "actions": dict(self.skills),
                "boot_id": self.host.boot_id}

    def spin_once(self) -> None:
        """Answer requests, run one control step, publish (what the loop does each period)."""
        for server in self.servers.values():
            server.spin_once()
        result = self.host.step()
        self._apply_events()
        for server in self.servers.values():
            server.spin_once()
        self._publish(result.observation)

    def _loop(self) -> None:
        period = self.backend.control_period_s
        next_at = self.clock.monotonic()
        while not self._stop.is_set():
            try:
                self.spin_once()
            except Exception as exc:  # a bug or a dead backend: stop serving, say why
                self.failure = exc
                log.error("the ROS 2 robot stopped: %r", exc)
                self._stop.set()
                break
            next_at += period
            now = self.clock.monotonic()
            if next_at < now - period:
                next_at = now
            self._stop.wait(max(0.0, next_at - now))

    def _publish(self, obs: Any) -> None:
        t = self.clock.wall()
        self._joint(robot.joint_state(self.types, obs, t))
        self._tf(robot.tf_message(self.types, obs, t))
        if not self._publish_images:
            return
        for name, frame in obs.cameras.items():
            if frame.rgb is None:
                continue
            pubs = self._cams.get(name)
            if pubs is None:
                pubs = self._cams[name] = (
                    self.participant.writer(f"/{name}/image_raw", "sensor_msgs/msg/Image",
                                            "sensor_data"),
                    self.participant.writer(f"/{name}/depth/image_raw",
                                            "sensor_msgs/msg/Image", "sensor_data"),
                    self.participant.writer(f"/{name}/camera_info",
                                            "sensor_msgs/msg/CameraInfo", "sensor_data"))
            h, w = frame.rgb.shape[:2]
            pubs[2](robot.camera_info(self.types, name, h, w, frame.intrinsics, t))
            pubs[0](robot.image(self.types, name, frame.rgb, t))
            if frame.depth is not None:
                pubs[1](robot.image(self.types, name, frame.depth.astype("float32"), t))

    def wait(self, timeout_s: float | None = None) -> bool:
        return self._stop.wait(timeout_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        self.participant.close()
        self.host.close()
