"""Grasping is physically reliable: an oracle ee_pose controller (approach above, descend,
close, lift; for pick-and-place carry, lower, open) succeeds on every seed, and the metric
comes from the simulator's own state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.scripted import ScriptedPicker


def run_scripted(env: SimEnv, *, close: bool = True) -> list[dict[str, Any]]:
    result = env.reset()
    while result["obs"] is not None:
        picker = ScriptedPicker(place=env.task is not None and env.task.name == "pick_and_place")
        picker.start(result["obs"]["ee_pose_state"], env.ground_truth())
        while True:
            message = picker.action()
            if not close:
                message["action"] = (*message["action"][:2], [0.04, 0.04])
            result = env.step(message)
            if result["obs"] is None or result["obs"]["reset"]:
                break
    return env.results()["episodes"]


def test_scripted_pick_lifts_the_red_cube_on_every_seed(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), episodes=6, num_steps=200)
    episodes = run_scripted(env)
    assert [e["ended"] for e in episodes] == ["success"] * 6
    assert env.results()["final_metric"] == {"pick_cube": 1.0}
    for e in episodes:
        cube = e["final_ground_truth"]["red_cube"]
        assert cube["held_by"] == "panda_hand" and cube["position"][2] > 0.02 + 0.05


def test_scripted_pick_and_place_puts_the_cube_in_the_tray(
        make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_and_place",), episodes=4, num_steps=300)
    episodes = run_scripted(env)
    assert [e["success"] for e in episodes] == [1.0] * 4
    for e in episodes:
        truth = e["final_ground_truth"]
        cube, tray = truth["red_cube"]["position"], truth["tray"]["position"]
        assert abs(cube[0] - tray[0]) < 0.09 and abs(cube[1] - tray[1]) < 0.09
        assert truth["red_cube"]["held_by"] is None


def test_without_closing_the_gripper_nothing_is_picked(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), episodes=2, num_steps=90)
    episodes = run_scripted(env, close=False)
    assert [e["ended"] for e in episodes] == ["timeout", "timeout"]
    assert env.results()["final_metric"] == {"pick_cube": 0.0}
