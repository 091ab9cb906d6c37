"""ROS 2 message types and their CDR encoding, through ``rosbags``' type store.

:class:`RosTypes` holds a rosbags type store (ROS 2 Humble's message set) plus what it lacks
and the bridge needs:

- the types every action is built from (the "Actions" design article,
  design.ros2.org/articles/actions.html, and rosidl's action generation,
  ``rosidl_adapter``/``action.idl``): for action ``pkg/action/Name`` the goal, result and
  feedback messages ``Name_Goal`` / ``Name_Result`` / ``Name_Feedback``, the services'
  ``Name_SendGoal_Request`` (``goal_id``, ``goal``), ``Name_SendGoal_Response`` (``accepted``,
  ``stamp``), ``Name_GetResult_Request`` (``goal_id``), ``Name_GetResult_Response``
  (``status``, ``result``) and the feedback topic's ``Name_FeedbackMessage`` (``goal_id``,
  ``feedback``);
- ``action_msgs/srv/CancelGoal`` (its request holds a ``GoalInfo``; its response a return code
  and the goals now canceling), as action_msgs defines it;
- ``control_msgs/action/GripperCommand`` (control_msgs' definition) and
  ``harness_msgs/action/ExecuteSkill``, the action the built-in simulator serves for skills
  that have no standard ROS 2 interface.

More actions come from a mapping file's ``interfaces`` (their ``.action`` text).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from harness_bt.errors import DefinitionError

__all__ = ["BUILTIN_ACTIONS", "CANCEL_GOAL", "RosTypes", "split_action"]

CANCEL_GOAL = "action_msgs/srv/CancelGoal"

_CANCEL_REQUEST = "action_msgs/GoalInfo goal_info\n"
_CANCEL_RESPONSE = """int8 ERROR_NONE=0
int8 ERROR_REJECTED=1
int8 ERROR_UNKNOWN_GOAL_ID=2
int8 ERROR_GOAL_TERMINATED=3
int8 return_code
action_msgs/GoalInfo[] goals_canceling
"""

#: Messages the built-in actions use, by name.
_MESSAGES = {
    "control_msgs/msg/GripperCommand": "float64 position\nfloat64 max_effort\n",
}

#: ``.action`` texts of the actions this bridge knows without a mapping file.
BUILTIN_ACTIONS = {
    "control_msgs/action/GripperCommand": """control_msgs/GripperCommand command
---
float64 position
float64 effort
bool stalled
bool reached_goal
---
float64 position
float64 effort
bool stalled
bool reached_goal
""",
    "harness_msgs/action/ExecuteSkill": """# a skill command: name, ledger id, command as JSON
string skill
string command_id
string command_json
float64 start_budget_ms
---
# why it ended (empty when the control action finished)
string reason
---
# the executor's progress (NaN when it reports none) and its current segment
float64 progress
string stage
""",
}


def split_action(text: str, name: str) -> tuple[str, str, str]:
    """The goal, result and feedback sections of an ``.action`` text."""
    parts = [p for p in _sections(text)]
    if len(parts) != 3:
        raise DefinitionError("INVALID_ACTION", f"action {name!r}: an .action text has three "
                              f"sections separated by '---' lines, this one has {len(parts)}",
                              where=name, fix="write goal fields, ---, result fields, ---, "
                              "feedback fields")
    return parts[0], parts[1], parts[2]


def _sections(text: str) -> list[str]:
    out: list[str] = [""]
    for line in text.splitlines():
        if line.strip() == "---":
            out.append("")
        else:
            out[-1] += line + "\n"
    return out


class RosTypes:
    """A rosbags type store with the action protocol's types (see the module docstring)."""

    def __init__(self, actions: Mapping[str, str] | None = None,
                 messages: Mapping[str, str] | None = None) -> None:
        self.store: Any = get_typestore(Stores.ROS2_HUMBLE)
        self.actions: set[str] = set()
        self._add({**_MESSAGES, **(messages or {})})
        self._add({CANCEL_GOAL + "_Request": _CANCEL_REQUEST,
                   CANCEL_GOAL + "_Response": _CANCEL_RESPONSE})
        for name, text in {**BUILTIN_ACTIONS, **(actions or {})}.items():
            self.add_action(name, text)

    def _add(self, texts: Mapping[str, str]) -> None:
        defs: dict[str, Any] = {}
        for name, text in texts.items():
            try:
                parsed = get_types_from_msg(text, "tmp_pkg/msg/Tmp")
            except Exception as exc:  # rosbags raises its own parse errors
                raise DefinitionError("INVALID_MESSAGE", f"message {name!r} does not parse: "
                                      f"{exc}", where=name,
                                      fix="write one 'type name' field per line") from exc
            defs[name] = parsed["tmp_pkg/msg/Tmp"]
        self.store.register(defs)

    def add_action(self, name: str, text: str) -> None:
        """Register action ``pkg/action/Name`` from its ``.action`` text, with the protocol's
        types built from it."""
        pkg, kind, short = [*name.split("/"), "", ""][:3]
        if kind != "action" or not pkg or not short:
            raise DefinitionError("INVALID_ACTION", f"{name!r} is not an action type name",
                                  where=name, fix="write it like control_msgs/action/"
                                  "GripperCommand")
        if name in self.actions:
            return
        goal, result, feedback = split_action(text, name)
        self._add({f"{name}_Goal": goal, f"{name}_Result": result,
                   f"{name}_Feedback": feedback})
        self._add({
            f"{name}_SendGoal_Request":
                f"unique_identifier_msgs/UUID goal_id\n{name}_Goal goal\n",
            f"{name}_SendGoal_Response": "bool accepted\nbuiltin_interfaces/Time stamp\n",
            f"{name}_GetResult_Request": "unique_identifier_msgs/UUID goal_id\n",
            f"{name}_GetResult_Response": f"int8 status\n{name}_Result result\n",
            f"{name}_FeedbackMessage":
                f"unique_identifier_msgs/UUID goal_id\n{name}_Feedback feedback\n",
        })
        self.actions.add(name)

    def require(self, ros_type: str, *, where: str) -> None:
        """Refuse a type the store does not know."""
        if ros_type not in self.store.types:
            known = sorted(self.actions) if "/action/" in ros_type else []
            raise DefinitionError("UNKNOWN_ROS_TYPE", f"{where}: type {ros_type!r} is not known",
                                  where=where, fix="add its .action text under 'interfaces' in "
                                  "the mapping file" + (f"; known actions: {known}" if known
                                                        else ""))

    def new(self, ros_type: str, **fields: Any) -> Any:
        """A message of ``ros_type`` with ``fields``, every other field at its default."""
        return self.store.types[ros_type](**{**self.defaults(ros_type), **fields})

    def defaults(self, ros_type: str) -> dict[str, Any]:
        """Every field of ``ros_type`` at ROS 2's default (zero, empty, false)."""
        import numpy as np

        out: dict[str, Any] = {}
        _, fields = self.store.fielddefs[ros_type]
        for fname, (node, arg) in fields:
            out[fname] = self._default(int(node), arg, np)
        return out

    def _default(self, node: int, arg: Any, np: Any) -> Any:
        if node == 1:  # BASE
            base = arg[0]
            return "" if base == "string" else False if base == "bool" else (
                0.0 if base.startswith("float") else 0)
        if node == 2:  # NAME
            return self.new(arg)
        sub, count = arg  # ARRAY (3) or SEQUENCE (4)
        sub_node, sub_arg = sub
        if int(sub_node) == 1 and sub_arg[0] not in ("string", "bool"):
            dtype = {"float32": np.float32, "float64": np.float64, "int8": np.int8,
                     "uint8": np.uint8, "octet": np.uint8, "byte": np.uint8, "char": np.uint8,
                     "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
                     "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64}[sub_arg[0]]
            return np.zeros(count if node == 3 else 0, dtype=dtype)
        if node == 3:
            return [self._default(int(sub_node), sub_arg, np) for _ in range(count)]
        return []

    def time(self, t: float) -> Any:
        """``builtin_interfaces/Time`` of ``t`` seconds."""
        sec = math.floor(t)
        return self.new("builtin_interfaces/msg/Time", sec=sec,
                        nanosec=min(999_999_999, round((t - sec) * 1e9)))

    def serialize(self, message: Any, ros_type: str) -> bytes:
        """``message`` as CDR (little-endian, with the 4-byte encapsulation header)."""
        return bytes(self.store.serialize_cdr(message, ros_type))

    def deserialize(self, data: bytes, ros_type: str) -> Any:
        """The message a CDR payload holds."""
        return self.store.deserialize_cdr(data, ros_type)
