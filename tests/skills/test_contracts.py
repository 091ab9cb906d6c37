"""The skill contracts: syntax (params models), physical checks (each refusing with a clear
message), lifecycle facts, postconditions, resources."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness_bt.ledger import Command, Ledger, LedgerError
from harness_bt.runtime.observation import EePose, Observation
from harness_bt.skill import CancelBehaviour, SkillRegistry, validate_params
from harness_bt.world import ObjectUpdate, Pose, WorldModel, WorldView
from skills.contracts import SKILLS, skill_registry
from skills.geometry import DOWN, HOME_JOINTS, grasp_orientation, qangle, yaw_quat

CUBE_POSE = [0.5, 0.0, 0.02, 1.0, 0.0, 0.0, 0.0]
TRAY_POSE = [0.5, 0.2, 0.0215, 1.0, 0.0, 0.0, 0.0]


def world(now: float = 1.0, seen_at: float = 1.0, confidence: float = 1.0) -> WorldView:
    w = WorldModel()
    w.update([ObjectUpdate("red_cube", Pose.of(CUBE_POSE), extent=(0.04, 0.04, 0.04),
                           confidence=confidence),
              ObjectUpdate("tray", Pose.of(TRAY_POSE), extent=(0.21, 0.21, 0.043))],
             now=seen_at, timestep=3)
    w.latest_observation = Observation(
        {}, np.array([*HOME_JOINTS, 0.04, 0.04]), (EePose(np.array([0.4, 0.0, 0.4]), DOWN),),
        "", 3, False)
    return w.view(now)


SKILL = {s.name: s for s in SKILLS}
GOOD = {
    "move_ee_to": {"target": [0.5, 0.1, 0.2]},
    "approach": {"object_id": "red_cube", "object_pose": CUBE_POSE},
    "grasp": {"object_id": "red_cube", "object_pose": CUBE_POSE},
    "lift": {"object_id": "red_cube", "object_pose": CUBE_POSE},
    "release": {},
    "place": {"object_id": "red_cube", "target_id": "tray", "target_pose": TRAY_POSE},
    "home": {},
}


def problems(skill: str, view: WorldView | None = None, **params: object) -> list:  # type: ignore[type-arg]
    contract = SKILL[skill]
    model, syntax = validate_params(contract, {**GOOD[skill], **params})
    assert model is not None, syntax
    return contract.check(model, view or world())


@pytest.mark.parametrize("skill", sorted(GOOD))
def test_valid_params_in_a_fresh_world_pass(skill: str) -> None:
    assert problems(skill) == []


def test_the_registry_has_every_skill_with_resources_and_lifecycle() -> None:
    registry = skill_registry()
    assert registry.names() == ["approach", "grasp", "home", "lift", "move_ee_to", "place",
                                "release", "run_policy"]
    installed = SkillRegistry(entry_points=True)  # other packages may add their own
    assert [n for n in installed.names() if installed.origin(n).package == "harness-bt"] == \
        registry.names()
    assert SKILL["move_ee_to"].resources == ("arm",)
    assert SKILL["grasp"].resources == ("arm", "gripper")
    assert SKILL["release"].resources == ("gripper",)
    assert SKILL["place"].lifecycle.retry_safe is False
    assert SKILL["grasp"].lifecycle.cancel is CancelBehaviour.STOP_AND_HOLD
    assert SKILL["approach"].lifecycle.needs_fresh_observation_ms == 500


def test_syntax_refuses_a_pose_of_the_wrong_length_and_unknown_fields() -> None:
    _, errs = validate_params(SKILL["move_ee_to"], {"target": [0.5, 0.1, 0.2, 1.0]})
    assert "a pose has 3 numbers (position) or 7" in errs[0].message
    _, errs = validate_params(SKILL["grasp"], {**GOOD["grasp"], "force": 3})
    assert errs[0].field == "params.force" and errs[0].code == "INVALID_PARAMS"


def test_a_non_finite_value_is_refused_and_named() -> None:
    (p,) = problems("move_ee_to", target=[0.5, math.nan, 0.2])
    assert (p.code, p.field) == ("NON_FINITE", "params.target[1]")
    assert "is not a finite number" in str(p)


def test_an_unknown_frame_is_refused() -> None:
    (p,) = problems("move_ee_to", frame="camera")
    assert p.code == "UNKNOWN_FRAME"
    assert str(p) == ("params.frame: unknown frame; known frames: world, base (got 'camera'); "
                      "express the target in the world (robot base) frame")


def test_targets_outside_the_workspace_are_refused() -> None:
    (p,) = problems("move_ee_to", target=[1.1, 0.0, 0.2])
    assert p.code == "UNREACHABLE" and "the Panda reaches 0.8 m" in p.message
    (p,) = problems("move_ee_to", target=[0.5, 0.0, 0.0])
    assert p.code == "OUTSIDE_WORKSPACE" and "hit the table" in p.message
    (p,) = problems("move_ee_to", target=[0.05, 0.05, 0.3])
    assert p.code == "OUTSIDE_WORKSPACE" and "from the base axis" in p.message


def test_a_pre_grasp_pose_out_of_reach_is_refused() -> None:
    far = [0.78, 0.0, 0.02, 1.0, 0.0, 0.0, 0.0]
    found = problems("approach", object_pose=far, height_m=0.3)
    assert [p.field for p in found] == ["params.height_m"]
    assert "the pre-grasp pose needs the wrist" in found[0].message


def test_an_unknown_object_is_refused_with_the_known_ones() -> None:
    (p,) = problems("grasp", object_id="blue_cube")
    assert p.code == "UNKNOWN_OBJECT"
    assert "not in the world model (known: red_cube, tray)" in p.message


def test_a_stale_object_is_refused() -> None:
    (p,) = problems("grasp", world(now=5.0, seen_at=1.0))
    assert p.code == "STALE_OBJECT"
    assert "last seen 4.00 s ago (timestep 3)" in p.message


def test_an_occluded_object_is_refused() -> None:
    (p,) = problems("approach", world(confidence=0.2))
    assert p.code == "LOW_CONFIDENCE" and p.fix == "observe it again from a clear view"


def test_placing_an_object_on_itself_is_refused() -> None:
    found = problems("place", target_id="red_cube")
    assert any(p.message == "an object cannot be placed on itself" for p in found)


def test_a_zero_quaternion_is_refused() -> None:
    (p,) = problems("move_ee_to", target=[0.5, 0.0, 0.2, 0.0, 0.0, 0.0, 0.0],
                    orientation="target")
    assert p.code == "INVALID_QUATERNION"


def test_home_outside_joint_limits_is_refused() -> None:
    found = problems("home", joints=[0.0, -0.55, 0.0, 0.5, 0.0, 1.9, 0.785])
    assert [(p.field, p.code) for p in found] == [("params.joints[3]", "JOINT_LIMIT")]


def test_a_too_wide_object_cannot_be_grasped() -> None:
    w = WorldModel()
    w.update([ObjectUpdate("box", Pose.of(CUBE_POSE), extent=(0.12, 0.1, 0.05))], now=1.0)
    found = problems("grasp", w.view(1.0), object_id="box")
    assert [p.code for p in found] == ["TOO_WIDE"]


def test_postconditions_name_the_evaluators_and_the_same_goals_as_the_executors() -> None:
    model, _ = validate_params(SKILL["approach"], {**GOOD["approach"], "height_m": 0.1})
    assert model is not None
    ee_at, opened = SKILL["approach"].postconditions(model)
    assert ee_at.evaluator == "ee_at" and ee_at.params["target"] == pytest.approx([0.5, 0, 0.12])
    assert opened.evaluator == "gripper_open"
    model, _ = validate_params(SKILL["lift"], {**GOOD["lift"], "height_m": 0.1})
    assert model is not None
    (held,) = SKILL["lift"].postconditions(model)
    assert held.params["stage"] == "lifted" and held.params["min_rise_m"] == pytest.approx(0.06)
    model, _ = validate_params(SKILL["move_ee_to"], {**GOOD["move_ee_to"], "holding": "red_cube"})
    assert model is not None
    assert [p.evaluator for p in SKILL["move_ee_to"].postconditions(model)] == ["ee_at",
                                                                               "grasped"]


def test_the_grasp_orientation_turns_the_hand_to_the_cube_by_the_smallest_angle() -> None:
    assert qangle(grasp_orientation(0.0), DOWN) < 1e-9
    assert math.degrees(qangle(grasp_orientation(math.radians(80)), DOWN)) == pytest.approx(10)
    assert qangle(grasp_orientation(0.3), grasp_orientation(0.3 + math.pi / 2)) < 1e-9
    assert qangle(yaw_quat(0.0), [1, 0, 0, 0]) == 0.0


def test_two_commands_needing_the_arm_cannot_both_be_accepted() -> None:
    ledger = Ledger()

    def cmd(cid: str, skill: str) -> Command:
        return Command(command_id=cid, skill=skill, params=GOOD[skill],
                       resources=SKILL[skill].resources, start_within_ms=1000,
                       execution_timeout_ms=5000)

    ledger.submit(cmd("a", "approach"), now=0.0)
    with pytest.raises(LedgerError) as err:
        ledger.submit(cmd("b", "home"), now=0.1)
    assert err.value.code == "RESOURCE_BUSY"
    assert "arm" in err.value.message


def test_a_boolean_is_no_number_in_skill_params() -> None:
    """``settle_s: false`` is refused, as the task schema refuses it (not read as 0.0)."""
    from pydantic import ValidationError

    from skills.params import LiftParams

    with pytest.raises(ValidationError, match="a number is expected"):
        LiftParams(object_id="red_cube", object_pose=[0.5, 0.0, 0.02], settle_s=False)
    lift = LiftParams(object_id="red_cube", object_pose=[0.5, 0.0, 0.02], settle_s=1)
    assert lift.settle_s == 1.0
