"""The evaluators of the library's goals judge from observations only: rests_on (an object on
an object), at_pose (a pose on the table), inside (a container), cleared (none left in a
region); UNKNOWN when what they need is not visible now."""

from __future__ import annotations

from harness_bt.skill import Postcondition
from skills.evaluators import at_pose, cleared, placed_on, rests_on
from tests.skills.test_evaluators import F, S, U, obs, world

ON = Postcondition("rests_on", {"object_id": "red_cube", "target": "green_cube",
                                "max_offset_m": 0.02})
AT = Postcondition("at_pose", {"object_id": "red_cube", "pose": [0.5, 0.1, 0.02],
                               "tolerance_m": 0.025})
OPEN = ((0.5, 0.0, 0.2), 0.08)  # the hand away, fingers open


def test_a_cube_resting_on_a_cube_rests_on_it_and_is_not_inside_it() -> None:
    view = world(red_cube=((0.501, 0.0, 0.061), 0.9), green_cube=((0.5, 0.0, 0.02), 0.8))
    res = rests_on(ON, obs(*OPEN), view)
    assert res.verdict is S and "rests on green_cube" in res.evidence[-1]
    assert "bottom +0.001 m from its top" in " ".join(res.evidence)


def test_beside_or_in_the_air_or_in_the_hand_is_not_on() -> None:
    beside = world(red_cube=((0.55, 0.0, 0.02), 1.0), green_cube=((0.5, 0.0, 0.02), 1.0))
    assert rests_on(ON, obs(*OPEN), beside).verdict is F
    above = world(red_cube=((0.5, 0.0, 0.1), 1.0), green_cube=((0.5, 0.0, 0.02), 1.0))
    assert "not resting" in rests_on(ON, obs(*OPEN), above).evidence[-1]
    held = rests_on(ON, obs((0.5, 0.0, 0.061), 0.036), world(
        red_cube=((0.5, 0.0, 0.061), 1.0), green_cube=((0.5, 0.0, 0.02), 1.0)))
    assert held.verdict is F and "still in the hand" in held.evidence[-1]


def test_a_support_not_seen_now_makes_rests_on_unknown() -> None:
    view = world(t=5, red_cube=((0.5, 0.0, 0.061), 1.0))
    res = rests_on(ON, obs(*OPEN), view)
    assert res.verdict is U and "green_cube has never been seen" in res.evidence[0]
    occluded = world(red_cube=((0.5, 0.0, 0.061), 1.0), green_cube=((0.5, 0.0, 0.02), 0.2))
    assert rests_on(ON, obs(*OPEN), occluded).verdict is U


def test_at_pose_within_tolerance_resting_and_released() -> None:
    assert at_pose(AT, obs(*OPEN), world(red_cube=((0.51, 0.11, 0.02), 1.0))).verdict is S
    far = at_pose(AT, obs(*OPEN), world(red_cube=((0.5, 0.0, 0.02), 1.0)))
    assert far.verdict is F and "not at the goal" in far.evidence[-1]
    high = at_pose(AT, obs(*OPEN), world(red_cube=((0.5, 0.1, 0.08), 1.0)))
    assert high.verdict is F and "height" in high.evidence[-1]
    assert at_pose(AT, obs(*OPEN), world(t=2, red_cube=((0.5, 0.1, 0.02), 1.0))).verdict is U


def test_inside_is_the_container_check() -> None:
    post = Postcondition("inside", {"object_id": "red_cube", "target": "tray"})
    view = world(red_cube=((0.5, 0.01, 0.03), 1.0), tray=((0.5, 0.0, 0.02), 1.0))
    assert placed_on(post, obs(*OPEN), view).verdict is S


def test_cleared_fails_on_one_left_and_is_unknown_on_one_unseen() -> None:
    post = Postcondition("cleared", {"objects": ["a", "b"], "region": [0.4, 0.6, -0.1, 0.1]})
    gone = world(a=((0.5, 0.3, 0.02), 1.0), b=((0.5, -0.3, 0.02), 1.0))
    assert cleared(post, obs(*OPEN), gone).verdict is S
    left = world(a=((0.5, 0.3, 0.02), 1.0), b=((0.5, 0.0, 0.02), 1.0))
    res = cleared(post, obs(*OPEN), left)
    assert res.verdict is F and "b still in" in res.evidence[-1]
    unseen = world(a=((0.5, 0.3, 0.02), 1.0))
    res = cleared(post, obs(*OPEN), unseen)
    assert res.verdict is U and "cannot tell where b is" in res.evidence[-1]
