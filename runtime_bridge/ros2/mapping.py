"""Skills onto ROS 2 actions, by a mapping file (YAML), not code.

```yaml
interfaces:                      # optional: .action texts of actions the bridge does not know
  nav2_msgs/action/NavigateToPose: |
    geometry_msgs/PoseStamped pose
    string behavior_tree
    ---
    std_msgs/Empty result
    ---
    geometry_msgs/PoseStamped current_pose
    builtin_interfaces/Duration navigation_time
    builtin_interfaces/Duration estimated_time_remaining
    int16 number_of_recoveries
    float32 distance_remaining
skills:
  release:
    action: /gripper_controller/gripper_cmd   # the action's ROS name
    type: control_msgs/action/GripperCommand
    goal:                                      # goal fields (dotted paths) <- values
      command.position: 0.04
      command.max_effort: "{params.force}"     # a whole "{...}" keeps the value's type
    progress: position                         # the feedback field that is the progress
    reason: ""                                 # the result field that says why it failed
```

Values may name ``{skill}``, ``{command_id}``, ``{command_json}`` (the whole command, as
JSON), ``{start_budget_ms}`` and ``{params.NAME}``. Every problem of a file is reported at
once, with the skill and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness_bt.errors import DefinitionError
from harness_bt.ledger import Command
from runtime_bridge.ros2.names import validate_ros_name
from runtime_bridge.ros2.types import RosTypes

__all__ = ["DEFAULT_MAPPING", "SkillBinding", "SkillMapping", "load_mapping"]

#: The mapping of ``harness sim serve --ros2``: every skill as ``harness_msgs/action/
#: ExecuteSkill`` at ``/harness/skills/<skill>``.
DEFAULT_MAPPING = Path(__file__).with_name("sim_mapping.yaml")

_REF = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")


@dataclass(frozen=True, slots=True)
class SkillBinding:
    skill: str
    action: str
    action_type: str
    goal: Mapping[str, Any]
    progress: str
    reason: str

    def goal_fields(self, command: Command, start_budget_ms: float | None) -> dict[str, Any]:
        """The goal's field values for ``command`` (dotted paths -> values)."""
        ctx = {"skill": command.skill, "command_id": command.command_id,
               "command_json": json.dumps(command.to_wire(), sort_keys=True),
               "start_budget_ms": float(command.start_within_ms if start_budget_ms is None
                                        else start_budget_ms)}
        return {path: _fill(value, ctx, dict(command.params), self.skill, path)
                for path, value in self.goal.items()}


def _fill(value: Any, ctx: Mapping[str, Any], params: Mapping[str, Any], skill: str,
          path: str) -> Any:
    if not isinstance(value, str):
        return value

    def look(name: str) -> Any:
        if name.startswith("params."):
            key = name[len("params."):]
            if key not in params:
                raise DefinitionError("MISSING_PARAM", f"skill {skill!r}: goal field {path} "
                                      f"needs param {key!r}, which the command lacks",
                                      where=f"mapping skills.{skill}.goal.{path}",
                                      fix=f"give the skill its {key!r} param or change the "
                                      "mapping")
            return params[key]
        return ctx[name]

    whole = _REF.fullmatch(value)
    if whole:
        return look(whole.group(1))
    return _REF.sub(lambda m: str(look(m.group(1))), value)


@dataclass(frozen=True, slots=True)
class SkillMapping:
    bindings: Mapping[str, SkillBinding]
    actions: Mapping[str, str]  # .action texts from the file's interfaces

    def binding(self, skill: str) -> SkillBinding:
        found = self.bindings.get(skill)
        if found is None:
            raise DefinitionError("UNMAPPED_SKILL", f"skill {skill!r} has no ROS 2 action in "
                                  f"the mapping; mapped: {sorted(self.bindings)}",
                                  where="mapping skills", fix=f"add skills.{skill} to the "
                                  "mapping file (docs/ros2.md)")
        return found

    def build_goal(self, types: RosTypes, binding: SkillBinding, command: Command,
                   start_budget_ms: float | None) -> Any:
        """The goal message for ``command``."""
        goal = types.new(binding.action_type + "_Goal")
        for path, value in binding.goal_fields(command, start_budget_ms).items():
            _set(goal, path.split("."), value, binding.skill)
        return goal


def _set(msg: Any, path: list[str], value: Any, skill: str) -> None:
    for part in path[:-1]:
        msg = getattr(msg, part)
    current = getattr(msg, path[-1])
    if isinstance(current, float):
        value = float(value)
        if not math.isfinite(value):
            raise DefinitionError("INVALID_GOAL", f"skill {skill!r}: goal field "
                                  f"{'.'.join(path)} would be {value!r}", where=skill,
                                  fix="give a finite number")
    elif isinstance(current, bool):
        value = bool(value)
    elif isinstance(current, int):
        value = int(value)
    elif isinstance(current, str):
        value = str(value)
    setattr(msg, path[-1], value)


def load_mapping(source: str | Path | Mapping[str, Any], types: RosTypes) -> SkillMapping:
    """Read and check a mapping (a file or its parsed document); registers its interfaces
    in ``types``. Every problem is reported at once."""
    where = str(source) if not isinstance(source, Mapping) else "mapping"
    if isinstance(source, Mapping):
        doc: Any = source
    else:
        try:
            doc = yaml.safe_load(Path(source).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise DefinitionError("INVALID_MAPPING", f"cannot read the mapping {where}: {exc}",
                                  where=where, fix="pass a readable YAML file") from exc
    if not isinstance(doc, Mapping) or not isinstance(doc.get("skills"), Mapping):
        raise DefinitionError("INVALID_MAPPING", f"{where}: a mapping has a 'skills' section "
                              "of skill -> {action, type, goal}", where=where,
                              fix="see docs/ros2.md for the format")
    problems: list[str] = []
    actions = dict(doc.get("interfaces") or {})
    for name, text in actions.items():
        try:
            types.add_action(str(name), str(text))
        except DefinitionError as exc:
            problems.append(f"interfaces.{name}: {exc.message}")
    bindings: dict[str, SkillBinding] = {}
    for skill, entry in doc["skills"].items():
        at = f"skills.{skill}"
        if not isinstance(entry, Mapping):
            problems.append(f"{at}: expected {{action, type, goal}}, got {entry!r}")
            continue
        unknown = sorted(set(entry) - {"action", "type", "goal", "progress", "reason"})
        if unknown:
            problems.append(f"{at}: unknown key(s) {unknown}; known: action, type, goal, "
                            "progress, reason")
        try:
            action = validate_ros_name(str(entry.get("action", "")), where=f"{at}.action")
            atype = str(entry.get("type", ""))
            types.require(atype + "_Goal", where=f"{at}.type")
        except DefinitionError as exc:
            problems.append(exc.message)
            continue
        goal = dict(entry.get("goal") or {})
        sample = types.new(atype + "_Goal")
        for path in goal:
            obj = sample
            for part in str(path).split("."):
                if not hasattr(obj, part):
                    problems.append(f"{at}.goal: {atype} goal has no field {path!r}")
                    break
                obj = getattr(obj, part)
        bindings[str(skill)] = SkillBinding(str(skill), action, atype, goal,
                                            str(entry.get("progress", "")),
                                            str(entry.get("reason", "")))
    if problems:
        raise DefinitionError("INVALID_MAPPING", f"{where}: {len(problems)} problem(s): "
                              + "; ".join(problems), where=where,
                              fix="fix each one (docs/ros2.md describes the format)",
                              details={"problems": problems})
    return SkillMapping(bindings, actions)
