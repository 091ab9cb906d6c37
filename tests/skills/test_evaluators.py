"""The evaluators judge from observations only: every source, and UNKNOWN when the object is
not visible or the sources disagree."""

from __future__ import annotations

import numpy as np
import pytest

from harness_bt.ledger import Verdict
from harness_bt.runtime.observation import EePose, Observation
from harness_bt.skill import Postcondition
from harness_bt.world import ObjectUpdate, Pose, WorldModel, WorldView
from skills.evaluators import evaluator_registry, grasped, joints_at, placed_on
from skills.geometry import DOWN, HOME_JOINTS

CUBE = (0.04, 0.04, 0.04)
TRAY = (0.21, 0.21, 0.043)
S, F, U = Verdict.SUCCEEDED, Verdict.FAILED, Verdict.UNKNOWN


def obs(tcp: tuple[float, float, float], gap: float, t: int = 5) -> Observation:
    joints = np.array([*HOME_JOINTS, gap / 2, gap / 2])
    return Observation({}, joints, (EePose(np.array(tcp), DOWN.copy()),), "", t, False)


def world(t: int = 5, **objects: tuple[tuple[float, float, float], float]) -> WorldView:
    """``name=(position, confidence)``; every object seen at timestep ``t``."""
    w = WorldModel()
    updates = [ObjectUpdate(name, Pose(pos), extent=TRAY if name == "tray" else CUBE,
                            confidence=conf, camera="front")
               for name, (pos, conf) in objects.items()]
    w.update(updates, now=1.0, timestep=t)
    return w.view(1.0)


LIFTED = Postcondition("grasped", {"object_id": "red_cube", "stage": "lifted",
                                   "start": [0.5, 0.0, 0.02], "min_rise_m": 0.072,
                                   "width_m": 0.04})
CLOSED = Postcondition("grasped", {"object_id": "red_cube", "stage": "closed", "width_m": 0.04})
PLACED = Postcondition("placed_on", {"object_id": "red_cube", "target": "tray",
                                     "max_offset_m": 0.06})


def test_grasp_held_after_a_lift_succeeds_with_every_source_as_evidence() -> None:
    res = grasped(LIFTED, obs((0.5, 0.0, 0.14), 0.036),
                  world(red_cube=((0.501, 0.001, 0.141), 0.95)))
    assert res.verdict is S
    text = " ".join(res.evidence)
    assert "finger gap 0.0360" in text and "rose 0.121" in text and "held (lifted)" in text


def test_a_slipped_cube_on_the_table_is_a_failed_grasp() -> None:
    res = grasped(LIFTED, obs((0.5, 0.0, 0.14), 0.0), world(red_cube=((0.51, 0.0, 0.02), 1.0)))
    assert res.verdict is F
    assert "not between the fingertips" in res.evidence[-1]


def test_a_cube_between_the_fingers_that_did_not_rise_is_not_lifted() -> None:
    res = grasped(LIFTED, obs((0.5, 0.0, 0.06), 0.036), world(red_cube=((0.5, 0.0, 0.06), 1.0)))
    assert res.verdict is F
    assert "did not rise" in res.evidence[-1]


def test_a_cube_not_seen_in_this_observation_is_unknown() -> None:
    view = world(t=3, red_cube=((0.5, 0.0, 0.14), 1.0))  # last seen two steps ago
    res = grasped(LIFTED, obs((0.5, 0.0, 0.14), 0.036, t=5), view)
    assert res.verdict is U
    assert "not visible at t=5 (last seen at t=3)" in res.evidence[0]


def test_an_occluded_cube_is_unknown() -> None:
    res = grasped(LIFTED, obs((0.5, 0.0, 0.14), 0.036), world(red_cube=((0.5, 0.0, 0.14), 0.2)))
    assert res.verdict is U
    assert "confidence 0.20 < 0.50 (occluded?)" in res.evidence[0]


def test_a_never_seen_cube_is_unknown() -> None:
    res = grasped(CLOSED, obs((0.5, 0.0, 0.02), 0.036), world())
    assert res.verdict is U and "never been seen" in res.evidence[0]


@pytest.mark.parametrize("gap", [0.0, 0.079])
def test_vision_and_fingers_disagreeing_is_unknown(gap: float) -> None:
    res = grasped(LIFTED, obs((0.5, 0.0, 0.14), gap), world(red_cube=((0.5, 0.0, 0.14), 1.0)))
    assert res.verdict is U
    assert "sources disagree" in res.evidence[-1]


def test_closed_on_the_cube_succeeds_and_closed_on_nothing_beside_it_fails() -> None:
    view = world(red_cube=((0.5, 0.0, 0.02), 1.0))
    assert grasped(CLOSED, obs((0.5, 0.0, 0.02), 0.037), view).verdict is S
    assert grasped(CLOSED, obs((0.5, 0.05, 0.02), 0.0), view).verdict is F


def test_a_cube_resting_in_the_tray_after_letting_go_is_placed() -> None:
    view = world(red_cube=((0.51, 0.19, 0.025), 1.0), tray=((0.5, 0.2, 0.0215), 1.0))
    res = placed_on(PLACED, obs((0.51, 0.19, 0.11), 0.08), view)
    assert res.verdict is S
    assert "placed on tray" in res.evidence[-1]


def test_a_cube_beside_the_tray_is_not_placed() -> None:
    view = world(red_cube=((0.5, 0.05, 0.02), 1.0), tray=((0.5, 0.2, 0.0215), 1.0))
    res = placed_on(PLACED, obs((0.5, 0.05, 0.1), 0.08), view)
    assert res.verdict is F and "not within tray" in res.evidence[-1]


def test_a_cube_still_in_the_hand_is_not_placed() -> None:
    view = world(red_cube=((0.5, 0.2, 0.026), 1.0), tray=((0.5, 0.2, 0.0215), 1.0))
    res = placed_on(PLACED, obs((0.5, 0.2, 0.026), 0.036), view)
    assert res.verdict is F and "still in the hand" in res.evidence[-1]


def test_a_cube_resting_on_the_rim_is_not_placed() -> None:
    view = world(red_cube=((0.5, 0.2, 0.065), 1.0), tray=((0.5, 0.2, 0.0215), 1.0))
    res = placed_on(PLACED, obs((0.5, 0.2, 0.16), 0.08), view)
    assert res.verdict is F and "not resting" in res.evidence[-1]


def test_placing_unknown_when_the_cube_is_hidden_or_the_tray_never_seen() -> None:
    hidden = world(red_cube=((0.5, 0.2, 0.025), 0.1), tray=((0.5, 0.2, 0.0215), 1.0))
    assert placed_on(PLACED, obs((0.5, 0.2, 0.1), 0.08), hidden).verdict is U
    no_tray = world(red_cube=((0.5, 0.2, 0.025), 1.0))
    res = placed_on(PLACED, obs((0.5, 0.2, 0.1), 0.08), no_tray)
    assert res.verdict is U and "tray has never been seen" in res.evidence[0]


def test_joints_at_compares_the_arm_joints() -> None:
    post = Postcondition("joints_at", {"joints": list(HOME_JOINTS), "tolerance_rad": 0.05})
    assert joints_at(post, obs((0.4, 0, 0.4), 0.08), world()).verdict is S
    bent = obs((0.4, 0, 0.4), 0.08)
    bent.joint_positions[3] += 0.2
    res = joints_at(post, bent, world())
    assert res.verdict is F and "largest joint error 0.2000 rad" in res.evidence[0]


def test_the_registry_holds_the_builtins_and_these() -> None:
    names = evaluator_registry().names()
    assert {"grasped", "placed_on", "joints_at", "ee_at", "gripper_open"} <= set(names)
