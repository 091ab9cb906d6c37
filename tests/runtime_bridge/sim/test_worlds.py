"""Kept worlds (``SimConfig(keep_world=True)``): a closed simulator hands its PyBullet world
to the process's next one of the same physics, and an episode in a kept world is the same,
pose for pose, as in a new world."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from runtime_bridge.sim import ScriptedPicker, SimConfig, SimEnv, worlds


@pytest.fixture(autouse=True)
def no_kept_worlds() -> Iterator[None]:
    worlds.close_kept()
    yield
    worlds.close_kept()


def _config(seed: int, *, keep: bool, **kw: Any) -> SimConfig:
    return SimConfig(scenes=("pick_and_place",), seed=seed, cameras=(), num_steps=10_000,
                     success_hold_steps=10**6, render="on_demand", keep_world=keep, **kw)


def _pick(env: SimEnv, steps: int) -> dict[str, list[float]]:
    first = env.reset()["obs"]
    picker = ScriptedPicker(place=True)
    picker.start(first["ee_pose_state"], env.ground_truth())
    for _ in range(steps):
        env.step(picker.action())
    truth = env.ground_truth()
    poses = {name: o["position"] + o["quaternion_wxyz"] for name, o in truth["objects"].items()}
    poses["joints"] = env.scene.arm.joint_state().tolist()
    return poses


def test_an_episode_in_a_kept_world_is_the_one_a_new_world_runs() -> None:
    with SimEnv(_config(7, keep=False)) as env:
        fresh = _pick(env, 80)
    with SimEnv(_config(3, keep=True)) as env:
        _pick(env, 80)  # another seed first: its objects, its arm motion
        used = env.scene
    with SimEnv(_config(7, keep=True)) as env:
        assert env.scene is used
        kept = _pick(env, 80)
    assert kept.keys() == fresh.keys()
    for name in fresh:
        assert np.array_equal(kept[name], fresh[name]), name


def test_a_closed_simulator_hands_its_world_to_the_next_of_the_same_physics_only() -> None:
    env = SimEnv(_config(1, keep=True))
    world = env.scene
    env.close()
    assert worlds.kept() == 1 and world.client is not None
    with SimEnv(_config(1, keep=True, substeps=4)) as other:
        assert other.scene is not world  # other physics: a world of its own
    with SimEnv(_config(2, keep=True)) as same:
        assert same.scene is world
        assert worlds.kept() == 1  # the substeps=4 world waits
    assert worlds.kept() == 2


def test_at_most_max_kept_worlds_wait_and_the_rest_are_closed() -> None:
    envs = [SimEnv(_config(i, keep=True)) for i in range(worlds.MAX_KEPT + 1)]
    scenes = [env.scene for env in envs]
    for env in envs:
        env.close()
    assert worlds.kept() == worlds.MAX_KEPT
    assert [s.client is None for s in scenes] == [False] * worlds.MAX_KEPT + [True]


def test_a_simulator_without_keep_world_closes_its_world() -> None:
    env = SimEnv(_config(1, keep=False))
    world = env.scene
    env.close()
    assert worlds.kept() == 0 and world.client is None


def test_a_kept_world_is_handed_back_with_its_slip_fault_undone() -> None:
    from runtime_bridge.sim.config import FaultRates
    from runtime_bridge.sim.robot import FINGER_FORCE

    env = SimEnv(_config(1, keep=True, faults=FaultRates(slip=1.0)))
    env.reset()
    env.scene.set_slippery(env.task.target, True)  # what a firing slip does
    env.faults._slip_left, env.faults._slipping = 5, env.task.target  # type: ignore[union-attr]
    world = env.scene
    env.close()
    assert world.arm.finger_force == FINGER_FORCE
