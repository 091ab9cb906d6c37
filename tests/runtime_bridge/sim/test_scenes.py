"""The simulator builds and judges scene documents: layouts come from the seed, each shape is
built, predicates read the physics, an episode is judged by its own scene's condition only,
and a scene without a condition is not judged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness_bt.authoring.scenes import load_scene
from harness_bt.errors import DefinitionError
from harness_bt.scene import predicate_registry
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.scenes import SimScene
from tests.runtime_bridge.sim.test_grasping import run_scripted

SHAPES = """\
name: shapes
objects:
  can: {shape: cylinder, size: [0.05, 0.05, 0.08], colour: yellow}
  brick: {shape: box, size: [0.06, 0.03, 0.03], colour: orange, mass: 0.1}
  bowl: {shape: bowl, size: [0.16, 0.16, 0.05], colour: white}
  tray: {shape: tray, size: [0.21, 0.21, 0.043]}
layout:
  place:
    tray: {pose: [0.5, 0.18, 0.0]}
  distractors: {objects: [can, brick], count: [1, 1]}
"""


def test_layouts_are_seeded_and_distractors_are_chosen_from_the_seed(tmp_path: Path) -> None:
    path = tmp_path / "shapes.yaml"
    path.write_text(SHAPES)
    scene = SimScene(load_scene(path))
    first = scene.layout(np.random.default_rng([3, 0])).poses
    assert first == scene.layout(np.random.default_rng([3, 0])).poses
    assert first["tray"] == (0.5, 0.18, 0.0)
    assert len(set(first) & {"can", "brick"}) == 1  # one distractor of the two
    kinds = {frozenset(scene.layout(np.random.default_rng([s, 0])).poses) for s in range(12)}
    assert len(kinds) == 2


def test_a_layout_keeps_its_goals_clear_and_other_layouts_unchanged(tmp_path: Path) -> None:
    # seed 1010 drew the red cube's goal 3.8 cm from the blue cube's centre: two 4 cm
    # cubes in one place, an episode no controller could succeed in
    clear = SimScene(load_scene("place_at", params={"target": "red_cube"}))
    assert clear.doc.goals
    plain_path = tmp_path / "plain.yaml"
    plain_path.write_text(Path(clear.doc.source).read_text().replace("  goals:", "  _x:")
                          .replace("_x: [{object: target, offset: offset, clearance: 0.07}]",
                                   ""))
    plain = SimScene(load_scene(plain_path, params={"target": "red_cube"}))
    assert not plain.doc.goals
    redrawn = 0
    for seed in range(1000, 1020):
        before = plain.layout(np.random.default_rng(seed)).poses
        after = clear.layout(np.random.default_rng(seed)).poses
        goal = clear.doc.goals[0].point(*after["red_cube"][:2])
        nearest = min(float(np.hypot(goal[0] - x, goal[1] - y))
                      for name, (x, y, _) in after.items() if name != "red_cube")
        assert nearest >= 0.07
        redrawn += before != after
        if before == after:  # a layout whose goal was clear is the same as without goals
            continue
        goal = clear.doc.goals[0].point(*before["red_cube"][:2])
        assert min(float(np.hypot(goal[0] - x, goal[1] - y))
                   for name, (x, y, _) in before.items() if name != "red_cube") < 0.07
    assert redrawn == 8  # 1001, 1002, 1009, 1010, 1011, 1014, 1016, 1018


def test_a_goal_that_cannot_be_kept_clear_fails_the_layout(tmp_path: Path) -> None:
    path = tmp_path / "tight.yaml"
    path.write_text("name: tight\nobjects:\n  a: {shape: cube, size: 0.04}\n"
                    "  b: {shape: cube, size: 0.04}\nlayout:\n"
                    "  place:\n    a: {pose: [0.5, 0.0, 0.0]}\n    b: {pose: [0.5, 0.1, 0.0]}\n"
                    "  goals: [{object: a, offset: [0.0, 0.1]}]\n")
    with pytest.raises(DefinitionError, match="with every layout goal clear") as err:
        SimScene(load_scene(path)).layout(np.random.default_rng(0))
    assert "clearance" in (err.value.fix or "")


def test_every_shape_is_built_and_predicates_read_the_physics(
        make_env: Callable[..., SimEnv], tmp_path: Path) -> None:
    path = tmp_path / "shapes.yaml"
    path.write_text(SHAPES.replace("count: [1, 1]", "count: [2, 2]"))
    env = make_env(scenes=(str(path),))
    env.reset()
    s = env.scene
    preds = predicate_registry(entry_points=True)
    assert set(s.objects) == {"can", "brick", "bowl", "tray"}
    bowl = s.position("bowl")
    s.client.resetBasePositionAndOrientation(s.objects["brick"], [bowl[0], bowl[1], 0.08],
                                             [0, 0, 0, 1])
    tray = s.position("tray")
    s.client.resetBasePositionAndOrientation(s.objects["can"], [tray[0], tray[1], 0.09],
                                             [0, 0, 0, 1])
    for _ in range(45):
        s.step()
    assert preds.get("inside")(s, "brick", "bowl") and not preds.get("inside")(s, "brick", "tray")
    assert preds.get("inside")(s, "can", "tray")
    assert preds.get("still")(s, "can") and preds.get("released")(s, "can")
    assert not preds.get("held")(s, "can") and not preds.get("lifted")(s, "brick", 0.05)
    assert preds.get("touching")(s, "can", "tray")


def test_a_scene_without_a_success_condition_is_not_judged(
        make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("table",), episodes=2, num_steps=20)
    results = run_scripted(env)
    assert [(e["ended"], e["success"]) for e in results] == [("not_judged", None)] * 2
    assert env.results()["final_metric"] == {}


def test_an_episode_is_judged_by_its_own_scene_only(make_env: Callable[..., SimEnv]) -> None:
    """The same lift that pick_cube scores a success is no success in the stack scene: a run
    is never scored against another scene's check."""
    picked = run_scripted(make_env(scenes=("pick_cube",), episodes=2, num_steps=150))
    assert [e["ended"] for e in picked] == ["success"] * 2
    stacked = run_scripted(make_env(scenes=("stack",), episodes=2, num_steps=150))
    assert [e["ended"] for e in stacked] == ["timeout"] * 2
    assert stacked[0]["evidence"]["condition"] == (
        "on(top, bottom) and released(top) and still(top) and still(bottom)")
    assert stacked[0]["evidence"]["calls"]["on(top, bottom)"] is False


def test_scene_parameters_choose_the_target(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), params={"target": "blue_cube"}, episodes=1,
                   num_steps=150)
    episodes = run_scripted(env)
    assert episodes[0]["ended"] == "success"
    assert episodes[0]["final_ground_truth"]["blue_cube"]["held_by"] == "panda_hand"
    with pytest.raises(DefinitionError, match="did you mean 'blue_cube'"):
        make_env(scenes=("pick_cube",), params={"target": "blue_cub"})


def test_faults_hit_a_moving_object_when_the_scene_target_is_a_container(
        make_env: Callable[..., SimEnv]) -> None:
    """In sort the scene's object parameter is the tray: the cubes are nudged and slip."""
    from runtime_bridge.sim.config import FaultRates
    from runtime_bridge.sim.scripted import ScriptedPicker

    env = make_env(scenes=("sort",), num_steps=300, faults=FaultRates(nudge=1.0, slip=1.0))
    entry = env.reset()
    truth = env.ground_truth()
    assert truth["target"] == "tray"
    picker = ScriptedPicker()
    picker.start(entry["obs"]["ee_pose_state"], truth, [("red_cube_1", [])])
    for _ in range(150):
        env.step(picker.action())
    fired = {f["kind"]: f["object"] for f in env.faults.fired}
    assert fired.get("nudge") == "red_cube_1"
