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


def test_steps_running_out_judge_by_the_scenes_own_hold(make_env: Callable[..., SimEnv]
                                                        ) -> None:
    """A hold longer than the episode's steps keeps a success from ending the episode; when
    the steps run out, the scene's own hold (3 steps for pick_cube) judges it."""
    for hold, steps, success in ((150, 140, 1.0), (150, 200, 1.0), (150, 20, 0.0)):
        env = make_env(scenes=("pick_cube",), episodes=1, num_steps=steps,
                       success_hold_steps=hold)
        [episode] = run_scripted(env)
        assert episode["success"] == success, (hold, steps, episode)
        if success and hold > steps:  # ran out of steps with the cube lifted
            assert episode["steps"] == steps
            assert "when the episode's steps ran out" in episode["evidence"]["ended"]
        env.close()


def test_the_answer_ending_an_episode_says_how_it_ended(make_env: Callable[..., SimEnv]
                                                        ) -> None:
    """An extra key, like faults: only in the answer of the step that ended an episode."""
    for steps, ended in ((140, "success"), (20, "timeout")):
        env = make_env(scenes=("pick_cube",), episodes=2, num_steps=steps,
                       success_hold_steps=150)
        result = env.reset()
        picker = ScriptedPicker()
        picker.start(result["obs"]["ee_pose_state"], env.ground_truth())
        answers = []
        while not answers or not answers[-1]["obs"]["reset"]:
            answers.append(env.step(picker.action()))
        assert [a.get("episode_ended") for a in answers] == [None] * (steps - 1) + [ended]
        env.close()


def test_a_carried_cube_stays_centred_between_the_fingers(make_env: Callable[..., SimEnv]
                                                          ) -> None:
    """The fingers are geared together: carried sideways fast and stopped short, the cube
    stays within 3 mm of the hand's centre line (two free finger motors let it slide about
    1.5 cm)."""
    env = make_env(scenes=("pick_cube",), episodes=1, num_steps=400, success_hold_steps=400)
    result = env.reset()
    picker = ScriptedPicker()
    picker.start(result["obs"]["ee_pose_state"], env.ground_truth())
    while env.ground_truth()["objects"]["red_cube"]["position"][2] < 0.10:
        result = env.step(picker.action())
    offsets = []
    for k in range(60):  # 5 mm per step along y (0.15 m/s), then hold still
        dy = 0.005 if k < 30 else 0.0
        result = env.step({"control_type": "ee_pose", "action": [[0.0, dy, 0.0],
                                                                 [1.0, 0.0, 0.0, 0.0],
                                                                 [0.0, 0.0]]})
        cube = env.ground_truth()["objects"]["red_cube"]["position"]
        tcp = result["obs"]["ee_pose_state"][0]
        offsets.append(abs(cube[1] - tcp[1]))
    assert env.ground_truth()["objects"]["red_cube"]["held_by"] == "panda_hand"
    assert max(offsets) < 0.003, max(offsets)
