"""derive_pose: a pose computed from a sighting, written to the blackboard with only the
premises it rests on; a skill that reads it is tied to those premises and no others."""

from __future__ import annotations

from typing import Any

import py_trees
import pytest

from harness_bt import DefinitionError, FakeClock
from harness_bt.nodes import DerivedPose, DerivePose, Observe, SkillAction
from harness_bt.testing import Script
from harness_bt.testing.example import example_runtime
from tests.harness_bt.helpers import last_failure, one_phase, run_to_end, runner_for


def _push_cup(scene: Any, cmd: Any) -> None:
    scene.move("cup", [0.55, 0.05, 0.05, 1.0, 0.0, 0.0, 0.0])  # a new sighting: a new version


def _task(at: str, **derive: Any) -> Any:
    def tree() -> py_trees.behaviour.Behaviour:
        return py_trees.composites.Sequence("s", memory=True, children=[
            Observe("look", ["cup"], record="plan"),
            DerivePose("aim", "cup", output="goal", at=at, snapshot="plan", **derive),
            SkillAction("drive", "navigate", params={"x_m": 1.0, "y_m": 0.0}),
            Observe("again", ["cup"]),
            SkillAction("hover", "align", inputs={"target": "goal"}, params={"height_m": 0.0}),
        ])
    return one_phase(tree)


def _run(at: str, **derive: Any) -> tuple[Any, Any]:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(duration_s=0.1, effect=_push_cup))
    runner = runner_for(_task(at, **derive), clock, rt)
    run_to_end(runner, clock)
    return runner, rt


def test_a_pose_at_the_sighting_is_a_fixed_place_and_outlives_the_object_moving() -> None:
    runner, rt = _run("sighting", anchor="top", offset=[0.0, 0.1])
    assert runner.result is not None and runner.result.reason == "done"
    goal = runner.blackboard["goal"]
    assert isinstance(goal, DerivedPose) and goal.premises == {}
    assert goal.pose[:3] == pytest.approx((0.5, 0.1, 0.05 + 0.05))  # top of the 10 cm cup
    (hover,) = [c for c in rt.received if c.skill == "align"]
    assert hover.params["target"][:3] == pytest.approx([0.5, 0.1, 0.1])
    assert "cup" not in hover.premises


def test_a_pose_relative_to_the_current_object_goes_stale_when_it_moves() -> None:
    runner, rt = _run("current", offset=[0.0, 0.0, 0.2])
    assert runner.result is not None and runner.result.reason == "aborted_failed"
    assert "STALE_PREMISE" in last_failure(runner)["reason"]
    assert [c.skill for c in rt.received] == ["navigate"]  # the stale command never left


def test_the_object_frame_turns_the_offset_with_the_object() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    turned = [0.5, 0.0, 0.05, 0.7071068, 0.0, 0.0, 0.7071068]  # 90 degrees about z
    rt.scene.move("cup", turned)
    runner = runner_for(one_phase(lambda: py_trees.composites.Sequence("s", memory=True, children=[
        Observe("look", ["cup"]), DerivePose("aim", "cup", output="goal", offset=[0.1, 0.0],
                                             frame="object")])), clock, rt)
    run_to_end(runner, clock)
    assert runner.blackboard["goal"].pose[:2] == pytest.approx((0.5, 0.1), abs=1e-6)


def test_bad_ports_and_a_missing_object_are_refused() -> None:
    for kw, words in (({"anchor": "side"}, "anchor 'side'"), ({"frame": "camera"}, "frame"),
                      ({"at": "later"}, "at 'later'"), ({"offset": [0.1]}, "2 or 3 finite"),
                      ({"offset": [0.1, float("nan")]}, "2 or 3 finite")):
        with pytest.raises(DefinitionError, match=words):
            DerivePose("aim", "cup", output="goal", **kw)
    clock = FakeClock()
    runner = runner_for(one_phase(lambda: DerivePose("aim", "ghost", output="goal")), clock,
                        example_runtime(clock))
    run_to_end(runner, clock)
    assert last_failure(runner)["reason"] == "UNKNOWN_OBJECT"
