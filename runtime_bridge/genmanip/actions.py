"""GenManip actions, checked per embodiment before anything moves.

``joint_position``: a flat list of arm joint **deltas** and **absolute** gripper values
(Franka + Panda hand 9 = 7 + 2; Franka + Robotiq 13 = 7 + 6; Aloha 16 = per arm 6 + 2).
``ee_pose``: ``(translation_delta(3), quaternion_delta_wxyz(4), gripper(n))`` for one arm, a
pair of those for two. Every error names the field, the offending value and the expected shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from harness_bt.request_budget import bounded
from runtime_bridge.genmanip.errors import ActionError

__all__ = [
    "EMBODIMENTS",
    "ArmCommand",
    "ControlType",
    "EmbodimentSpec",
    "GenManipEmbodiment",
    "ValidatedAction",
    "validate_action",
]

QUAT_NORM_TOLERANCE = 1e-2


class ControlType(StrEnum):
    """The two GenManip control modes."""

    JOINT_POSITION = "joint_position"
    EE_POSE = "ee_pose"

    def __str__(self) -> str:
        return self.value


class GenManipEmbodiment(StrEnum):
    """Robots GenManip drives (its wire name for a robot; not the mapping a policy skill goes
    through, which is :class:`harness_bt.policy.embodiment.Embodiment`)."""

    FRANKA_PANDA = "franka_panda"
    FRANKA_ROBOTIQ = "franka_robotiq"
    ALOHA = "aloha"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class EmbodimentSpec:
    """Arm count, joints per arm and gripper values per arm of one embodiment."""

    embodiment: GenManipEmbodiment
    arms: int
    arm_joints: int
    gripper_values: int
    gripper_open: tuple[float, ...]
    gripper_closed: tuple[float, ...]

    @property
    def joint_action_length(self) -> int:
        return self.arms * (self.arm_joints + self.gripper_values)

    def joint_layout(self) -> str:
        per_arm = f"{self.arm_joints} joint deltas + {self.gripper_values} absolute gripper values"
        return per_arm if self.arms == 1 else f"per arm ({per_arm}), arms concatenated"

    def ee_layout(self) -> str:
        one = f"(translation_delta(3), quaternion_delta_wxyz(4), gripper({self.gripper_values}))"
        return one if self.arms == 1 else f"a pair of {one}, one per arm"


EMBODIMENTS: dict[GenManipEmbodiment, EmbodimentSpec] = {
    GenManipEmbodiment.FRANKA_PANDA: EmbodimentSpec(
        GenManipEmbodiment.FRANKA_PANDA, 1, 7, 2, (0.04, 0.04), (0.0, 0.0)),
    GenManipEmbodiment.FRANKA_ROBOTIQ: EmbodimentSpec(
        GenManipEmbodiment.FRANKA_ROBOTIQ, 1, 7, 6, (0.0,) * 6,
        (0.7853, 0.7853, -0.7853, -0.7853, -0.7853, -0.7853)),
    GenManipEmbodiment.ALOHA: EmbodimentSpec(
        GenManipEmbodiment.ALOHA, 2, 6, 2, (0.05, 0.05), (0.0, 0.0)),
}


@dataclass(frozen=True, slots=True, eq=False)
class ArmCommand:
    """One arm's part of a checked action. ``joint_deltas`` for ``joint_position``;
    ``translation`` and ``rotation_wxyz`` (unit) for ``ee_pose``; ``gripper`` always."""

    gripper: np.ndarray
    joint_deltas: np.ndarray | None = None
    translation: np.ndarray | None = None
    rotation_wxyz: np.ndarray | None = None


@dataclass(frozen=True, slots=True, eq=False)
class ValidatedAction:
    """An action that passed :func:`validate_action`: one :class:`ArmCommand` per arm."""

    control_type: ControlType
    embodiment: GenManipEmbodiment
    arms: tuple[ArmCommand, ...]


def _fail(code: str, where: str, message: str, fix: str, **details: Any) -> ActionError:
    return ActionError(code, f"{where}: {message}", where=where, fix=fix, details=details)


def _short(value: Any) -> str:
    return bounded(value, 120)  # never the whole of an untrusted value


def _vector(value: Any, n: int, where: str, what: str) -> np.ndarray:
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        raise _fail("BAD_ACTION_SHAPE", where, f"{what} must be {n} numbers, got "
                    f"{type(value).__name__} {_short(value)}", f"send a list of {n} floats")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _fail("BAD_ACTION_SHAPE", where, f"{what} must be {n} numbers, got "
                    f"{_short(value)}", f"send a list of {n} floats") from None
    if array.shape != (n,):
        raise _fail("BAD_ACTION_SHAPE", where, f"{what} must have shape ({n},), got shape "
                    f"{array.shape}: {_short(value)}", f"send exactly {n} floats",
                    expected=[n], got=list(array.shape))
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        i = int(bad[0])
        raise _fail("NON_FINITE_ACTION", f"{where}[{i}]", f"{what} holds a non-finite value "
                    f"{float(array[i])!r}", "send finite numbers only (no NaN or inf)", index=i)
    return array


def _quaternion(value: Any, where: str) -> np.ndarray:
    q = _vector(value, 4, where, "the rotation delta quaternion (w, x, y, z)")
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > QUAT_NORM_TOLERANCE:
        raise _fail("BAD_QUATERNION", where, f"quaternion {q.tolist()} has norm {norm:.4f}, "
                    f"not 1 (tolerance {QUAT_NORM_TOLERANCE})",
                    "send a unit quaternion, scalar first; [1, 0, 0, 0] means no rotation",
                    norm=norm)
    return q / norm


def _parse_control_type(message: Mapping[str, Any], where: str) -> ControlType:
    if "control_type" not in message:
        raise _fail("MISSING_CONTROL_TYPE", where, "the action has no 'control_type'",
                    "add \"control_type\": \"joint_position\" or \"ee_pose\" next to \"action\"",
                    keys=[bounded(k, 40) for k in list(message)[:20]])
    raw = message["control_type"]
    try:
        return ControlType(raw)
    except ValueError:
        raise _fail("UNKNOWN_CONTROL_TYPE", f"{where}.control_type", f"unknown control type "
                    f"{_short(raw)}", "use 'joint_position' or 'ee_pose'") from None


def validate_action(message: Any,
                    embodiment: GenManipEmbodiment | str = GenManipEmbodiment.FRANKA_PANDA, *,
                    where: str = "action") -> ValidatedAction:
    """Check one worker's action message (``{"control_type": ..., "action": ...}``).

    Raises :class:`ActionError` naming the field, the value and the expected shape.
    """
    spec = EMBODIMENTS[GenManipEmbodiment(embodiment)]
    if not isinstance(message, Mapping):
        raise _fail("BAD_ACTION_MESSAGE", where, f"expected a dict with 'control_type' and "
                    f"'action', got {type(message).__name__} {_short(message)}",
                    "send {'control_type': 'joint_position', 'action': [...]} per worker id")
    control = _parse_control_type(message, where)
    if "action" not in message:
        layout = (spec.joint_layout() if control is ControlType.JOINT_POSITION
                  else spec.ee_layout())
        raise _fail("MISSING_ACTION", where, "the message has no 'action'",
                    f"add 'action': {layout}")
    action = message["action"]
    field = f"{where}.action"
    if control is ControlType.JOINT_POSITION:
        n = spec.joint_action_length
        flat = _vector(action, n, field, f"a {spec.embodiment} joint_position action "
                       f"({spec.joint_layout()})")
        per = spec.arm_joints + spec.gripper_values
        arms = tuple(
            ArmCommand(joint_deltas=flat[a * per:a * per + spec.arm_joints],
                       gripper=flat[a * per + spec.arm_joints:(a + 1) * per])
            for a in range(spec.arms)
        )
        return ValidatedAction(control, spec.embodiment, arms)
    parts = [action] if spec.arms == 1 else _sequence(action, 2, field, spec.ee_layout())
    arms_out = []
    for a, part in enumerate(parts):
        pf = field if spec.arms == 1 else f"{field}[{a}]"
        triple = _sequence(part, 3, pf, spec.ee_layout())
        arms_out.append(ArmCommand(
            translation=_vector(triple[0], 3, f"{pf}[0]", "the translation delta (x, y, z)"),
            rotation_wxyz=_quaternion(triple[1], f"{pf}[1]"),
            gripper=_vector(triple[2], spec.gripper_values, f"{pf}[2]",
                            f"the {spec.embodiment} gripper command"),
        ))
    return ValidatedAction(control, spec.embodiment, tuple(arms_out))


def _sequence(value: Any, n: int, where: str, layout: str) -> Sequence[Any]:
    if isinstance(value, np.ndarray) and value.ndim >= 1:
        value = list(value)
    if not isinstance(value, (list, tuple)) or len(value) != n:
        got = f"length {len(value)}" if isinstance(value, (list, tuple)) else type(value).__name__
        raise _fail("BAD_ACTION_SHAPE", where, f"expected {n} parts, got {got}: "
                    f"{_short(value)}", f"send {layout}")
    return value
