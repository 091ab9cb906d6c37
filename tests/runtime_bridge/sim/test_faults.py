"""Built-in fault injection: off by default, seeded, and each fault does what it says."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from runtime_bridge.sim.config import FaultRates, parse_camera_spec
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.scripted import ScriptedPicker

from .test_grasping import run_scripted


def test_no_fault_fires_by_default(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), episodes=2, num_steps=150)
    episodes = run_scripted(env)
    assert [e["faults"] for e in episodes] == [[], []]


def test_nudge_moves_the_target_during_the_approach(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), num_steps=150, faults=FaultRates(nudge=1.0))
    first = env.reset()["obs"]
    picker = ScriptedPicker()
    picker.start(first["ee_pose_state"], env.ground_truth())
    while not env.ground_truth()["faults"]:
        env.step(picker.action())
    truth = env.ground_truth()
    nudge = truth["faults"][0]
    assert nudge["kind"] == "nudge" and picker.phase <= 1  # approaching, not grasping
    moved = np.subtract(truth["objects"]["red_cube"]["position"][:2],
                        truth["start_positions"]["red_cube"][:2])
    np.testing.assert_allclose(moved, nudge["offset_m"], atol=2e-3)
    assert 0.03 <= float(np.hypot(*moved)) <= 0.05


def test_slip_drops_the_carried_cube(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), num_steps=150, faults=FaultRates(slip=1.0))
    episodes = run_scripted(env)
    assert [f["kind"] for f in episodes[0]["faults"]] == ["slip"]
    assert episodes[0]["ended"] == "timeout"
    cube = episodes[0]["final_ground_truth"]["red_cube"]
    assert cube["position"][2] < 0.03 and cube["held_by"] is None  # back on the table


def test_occlusion_covers_part_of_one_camera(make_env: Callable[..., SimEnv]) -> None:
    cams = (parse_camera_spec("front:64x48"),)
    env = make_env(cameras=cams, faults=FaultRates(occlude=1.0, occlude_steps=2))
    cam = env.reset()["obs"]["camera_data"]["front"]
    fired = env.ground_truth()["faults"]
    assert fired[0]["kind"] == "occlude" and fired[0]["camera"] == "front"
    x0, y0, x1, y1 = fired[0]["box"]
    assert (cam["rgb"][y0:y1, x0:x1] == 40).all()
    assert np.allclose(cam["depth"][y0:y1, x0:x1], cams[0].near + 0.03)
    assert (x1 - x0) * (y1 - y0) >= 0.16 * 64 * 48


@pytest.mark.parametrize("rates", [FaultRates(nudge=0.5, slip=0.5, occlude=0.3)])
def test_faults_are_reproducible_from_the_seed(make_env: Callable[..., SimEnv],
                                               rates: FaultRates) -> None:
    cams = (parse_camera_spec("front:32x24"),)
    runs = [run_scripted(make_env(scenes=("pick_cube",), episodes=3, num_steps=120,
                                  cameras=cams, faults=rates)) for _ in range(2)]
    assert [e["faults"] for e in runs[0]] == [e["faults"] for e in runs[1]]
    assert any(e["faults"] for e in runs[0])
