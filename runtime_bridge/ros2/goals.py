"""A robot's side of a mapping: a standard action's goal back into a skill command.

The mapping file says how a skill's params fill a goal (``command.position:
"{params.width_m}"``). A server of that action reads the same binding the other way: every goal
field whose template is exactly ``"{params.NAME}"`` gives param ``NAME``; literal fields are
the action's own. The command is named by its goal id (``goal-<uuid>``: a standard goal carries
no command id), so one goal is one command on the robot too. Results and feedback of a
standard type are filled where their fields say: the binding's ``progress`` field carries the
progress, ``reached_goal`` (control_msgs) whether the control action finished, the binding's
``reason`` field why it did not.
"""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

from harness_bt.ledger import Command
from runtime_bridge.ros2.mapping import SkillBinding

__all__ = ["command_from_goal", "feedback_fields", "result_fields"]

_PARAM = re.compile(r"^\{params\.([A-Za-z_][A-Za-z0-9_]*)\}$")


def _get(msg: Any, path: str) -> Any:
    for part in path.split("."):
        msg = getattr(msg, part)
    return msg


def command_from_goal(binding: SkillBinding, goal_id: uuid.UUID, goal: Any, *, epoch: int,
                      robot_id: str = "ros2") -> Command:
    """The command a goal of ``binding``'s action asks for (raises ValueError when a field is
    not finite)."""
    params: dict[str, Any] = {}
    for path, template in binding.goal.items():
        match = _PARAM.match(template) if isinstance(template, str) else None
        if match is None:
            continue
        value = _get(goal, path)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"goal field {path} is {value!r}")
        params[match.group(1)] = value.item() if hasattr(value, "item") else value
    return Command(command_id=f"goal-{goal_id}", task_id="ros2", robot_id=robot_id,
                   skill=binding.skill, params=params, resources=("arm",), world_version=0,
                   start_within_ms=5_000, execution_timeout_ms=120_000, epoch=epoch)


def feedback_fields(binding: SkillBinding, sample: Any, progress: float) -> dict[str, Any]:
    """The feedback's fields for one progress report."""
    if binding.progress and hasattr(sample, binding.progress) and math.isfinite(progress):
        return {binding.progress: float(progress)}
    return {}


def result_fields(binding: SkillBinding, sample: Any, *, finished: bool,
                  reason: str) -> dict[str, Any]:
    """The result's fields at the goal's end."""
    out: dict[str, Any] = {}
    if hasattr(sample, "reached_goal"):
        out["reached_goal"] = finished
    if binding.reason and hasattr(sample, binding.reason):
        out[binding.reason] = reason
    return out
