"""The syntax contracts: one pydantic params model per skill.

Poses are lists of 3 numbers (position, metres) or 7 (position + quaternion w, x, y, z), in the
frame named by ``frame`` (``world``: the robot base frame). Object poses come from the harness's
world model (a :class:`~harness_bt.nodes.SkillAction` fills them with ``objects=``): executors
never look objects up themselves. Non-finite numbers pass the syntax check on purpose: the
physical contract refuses them with a message that names the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from skills.geometry import DOWN, HOME_JOINTS, grasp_orientation, qnormalize, yaw_of

__all__ = [
    "ApproachParams",
    "GraspParams",
    "HomeParams",
    "LiftParams",
    "MoveEeToParams",
    "PlaceParams",
    "ReleaseParams",
    "RunPolicyParams",
    "SkillParams",
    "grasp_goal",
    "move_goal",
    "place_goal",
    "pregrasp_goal",
]



def _three_or_seven(value: list[float]) -> list[float]:
    if len(value) not in (3, 7):
        raise ValueError(f"a pose has 3 numbers (position) or 7 (position + quaternion w, x, y, "
                         f"z), got {len(value)}")
    return value


#: 3 numbers (position) or 7 (position + quaternion w, x, y, z); the JSON Schema says so too
Pose = Annotated[list[float], AfterValidator(_three_or_seven), WithJsonSchema({
    "type": "array", "items": {"type": "number"},
    "anyOf": [{"minItems": 3, "maxItems": 3}, {"minItems": 7, "maxItems": 7}]})]


class SkillParams(BaseModel):
    """Base of every params model: frozen, unknown fields refused, and a boolean is no number
    (``settle_s: false`` is refused, as the JSON Schema refuses it, not read as 0.0)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            if annotation is not None and bool not in get_args(annotation) and \
                    annotation is not bool and (annotation in (int, float) or
                                                {int, float} & set(get_args(annotation))):
                raise ValueError("a number is expected, not true / false")
        return value


def _pose(description: str) -> Any:
    return Field(description=description)


class MoveEeToParams(SkillParams):
    """Move the TCP to ``target`` + ``offset_m``. ``orientation``: ``keep`` the hand's current
    orientation, ``target`` (the target's quaternion, 7 numbers) or ``down`` (pointing down,
    fingers along y). ``holding`` names an object the hand carries: the evaluation then also
    checks it is still held."""

    target: Pose = _pose("goal position (3) or pose (7)")
    offset_m: list[float] = Field(default_factory=lambda: [0.0, 0.0, 0.0], min_length=3,
                                  max_length=3)
    frame: str = "world"
    orientation: Literal["keep", "target", "down"] = "keep"
    speed_mps: float = Field(0.3, gt=0.0, le=1.0)
    tolerance_m: float = Field(0.01, gt=0.0, le=0.05)
    holding: str | None = None


class ApproachParams(SkillParams):
    """Go to the pre-grasp pose ``height_m`` above ``object_pose`` (the object's centre), the
    hand open and pointing down, turned to the object's yaw when ``align_yaw``."""

    object_id: str = Field(min_length=1)
    object_pose: Pose = _pose("the object's pose from the world model")
    height_m: float = Field(0.10, ge=0.04, le=0.30)
    align_yaw: bool = True
    frame: str = "world"
    speed_mps: float = Field(0.3, gt=0.0, le=1.0)
    tolerance_m: float = Field(0.015, gt=0.0, le=0.05)


class GraspParams(SkillParams):
    """From above the object: centre over it, descend until the TCP is ``depth_m`` below its
    centre (negative: above), close until the fingers stop."""

    object_id: str = Field(min_length=1)
    object_pose: Pose = _pose("the object's pose from the world model")
    depth_m: float = Field(0.0, ge=-0.02, le=0.02)
    align_yaw: bool = True
    frame: str = "world"
    speed_mps: float = Field(0.12, gt=0.0, le=0.5)
    object_width_m: float = Field(0.04, gt=0.0, le=0.078,
                                  description="expected width between the fingers")


class LiftParams(SkillParams):
    """Raise the hand (and what it holds) by ``height_m``, then hold still ``settle_s``.
    ``object_pose`` is where the object was before the lift (the evaluation measures the
    rise from it)."""

    object_id: str = Field(min_length=1)
    object_pose: Pose = _pose("the object's pose before the lift")
    height_m: float = Field(0.12, ge=0.03, le=0.30)
    speed_mps: float = Field(0.15, gt=0.0, le=0.5)
    settle_s: float = Field(0.3, ge=0.0, le=3.0)
    object_width_m: float = Field(0.04, gt=0.0, le=0.078)


class ReleaseParams(SkillParams):
    """Open the hand to ``width_m`` (until the fingers stop)."""

    object_id: str | None = None
    width_m: float = Field(0.08, gt=0.0, le=0.08)


class PlaceParams(SkillParams):
    """Carry the held ``object_id`` over ``target_pose``, lower it until contact is felt or the
    TCP is ``min_height_m`` above that pose, open, and back off ``retreat_m`` upwards.
    ``onto``: ``inside`` a container (tray, bowl; ``target_pose`` its centre: judged by the
    ``inside`` evaluator), on ``top`` of an object (a cube on a cube: ``rests_on``), or at a
    ``pose`` on the table (``target_pose`` the object's centre there, e.g. from
    ``derive_pose``; no ``target_id``: ``at_pose``)."""

    object_id: str = Field(min_length=1)
    target_id: str | None = Field(None, min_length=1)
    onto: Literal["inside", "top", "pose"] = "inside"
    target_pose: Pose = _pose("the target's pose (world model or derive_pose)")
    frame: str = "world"
    min_height_m: float = Field(0.008, ge=0.0, le=0.2)
    retreat_m: float = Field(0.08, ge=0.0, le=0.3)
    speed_mps: float = Field(0.25, gt=0.0, le=1.0)
    lower_speed_mps: float = Field(0.08, gt=0.0, le=0.3)
    max_offset_m: float = Field(0.06, gt=0.0, le=0.2,
                                description="evaluation: largest distance from the target's "
                                "centre (or pose) that still counts as placed")


class HomeParams(SkillParams):
    """Move the arm to ``joints`` in joint space (no inverse kinematics: a safe back-off)."""

    joints: list[float] = Field(default_factory=lambda: list(HOME_JOINTS), min_length=7,
                                max_length=7)
    speed_rad_s: float = Field(0.8, gt=0.0, le=2.0)
    tolerance_rad: float = Field(0.03, gt=0.0, le=0.2)


class RunPolicyParams(SkillParams):
    """Run the learned policy served at ``policy_url`` (openpi's WebSocket protocol) with the
    prompt ``instruction`` (``<object>`` in it: the object's name in words, "red cube"), the
    observation mapped by ``embodiment``, until the policy signals
    done or ``max_steps`` rows have run. ``execute_steps``: rows of each chunk run before the
    policy is asked again (default: the embodiment's). ``lockstep``: the simulation waits for
    each reply (as GenManip does); false on a robot, which holds still while the policy
    thinks. ``object_id`` / ``object_pose``: what the policy is to pick up, when it is; the
    evaluation then judges, from observations, that it rose ``min_rise_m`` in the hand.
    ``until: lifted`` also ends the run between two chunks once the runtime's own perception
    sees that (the verdict is still the evaluator's, from the harness's observations)."""

    instruction: str = Field(min_length=1, max_length=2000)
    policy_url: str = Field("ws://127.0.0.1:8000", pattern=r"^wss?://[^\s/]+(/\S*)?$",
                            description="ws://host:port of the policy server")
    embodiment: str = "panda_ee_delta"
    object_id: str | None = None
    object_pose: Pose | None = Field(None, description="the object's pose before the policy "
                                     "runs")
    min_rise_m: float = Field(0.05, ge=0.0, le=0.5)
    object_width_m: float = Field(0.04, gt=0.0, le=0.078)
    max_steps: int = Field(450, ge=1, le=100_000)
    execute_steps: int | None = Field(None, ge=1, le=1_000)
    reply_timeout_s: float = Field(10.0, gt=0.0, le=600.0)
    connect_timeout_s: float = Field(5.0, gt=0.0, le=120.0)
    lockstep: bool = True
    until: Literal["lifted"] | None = None
    stall_steps: int = Field(90, ge=0, le=100_000,
                             description="rows after which a hand that has moved less than "
                                         "5 mm, its gripper unchanged, is a stall (0: off)")


# ---------------------------------------------------------------- goals (shared by executors
# and postconditions, so both judge against the same numbers)


def _orientation(pose: list[float], align_yaw: bool) -> list[float]:
    yaw = yaw_of(qnormalize(pose[3:7])) if align_yaw and len(pose) == 7 else 0.0
    return [float(v) for v in grasp_orientation(yaw)]


def move_goal(p: MoveEeToParams) -> tuple[list[float], list[float] | None]:
    """(goal position, goal orientation or None to keep the current one)."""
    position = [float(a + b) for a, b in zip(p.target[:3], p.offset_m, strict=True)]
    if p.orientation == "down":
        return position, [float(v) for v in DOWN]
    if p.orientation == "target":
        return position, [float(v) for v in qnormalize(p.target[3:7])]
    return position, None


def pregrasp_goal(p: ApproachParams) -> tuple[list[float], list[float]]:
    x, y, z = p.object_pose[:3]
    return [x, y, z + p.height_m], _orientation(p.object_pose, p.align_yaw)


def grasp_goal(p: GraspParams) -> tuple[list[float], list[float]]:
    x, y, z = p.object_pose[:3]
    return [x, y, z - p.depth_m], _orientation(p.object_pose, p.align_yaw)


def place_goal(p: PlaceParams) -> list[float]:
    """The lowest TCP position of the placing descent."""
    x, y, z = p.target_pose[:3]
    return [x, y, z + p.min_height_m]
