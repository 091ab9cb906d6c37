"""Hiding an object from the cameras (the test rig of crash-resume with an occluded object):
from the next step on no camera shows it, it stays where it is, and showing it brings it back."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from harness_bt.errors import BridgeError
from runtime_bridge.sim.config import parse_camera_spec
from runtime_bridge.sim.env import SimEnv

CAMERAS = (parse_camera_spec("front:128x96"), parse_camera_spec("top:128x96"))
STILL = {"control_type": "joint_position", "action": [0.0] * 7 + [0.04, 0.04]}


def frames(entry: dict) -> dict[str, np.ndarray]:  # type: ignore[type-arg]
    return {name: cam["rgb"] for name, cam in entry["obs"]["camera_data"].items()}


def test_a_hidden_object_leaves_every_frame_and_stays_where_it_is(
        make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_and_place",), cameras=CAMERAS)
    env.reset()
    seen = frames(env.step(STILL))
    where = env.scene.position("tray").copy()
    env.hide("tray")
    hidden = frames(env.step(STILL))
    for name in ("front", "top"):  # the tray's pixels changed, and only a part of the frame
        changed = np.abs(seen[name].astype(int) - hidden[name].astype(int)).sum(-1) > 30
        assert 0.01 < changed.mean() < 0.5, name
    assert np.allclose(env.scene.position("tray"), where, atol=1e-6)  # physics unchanged
    env.hide("tray", False)
    shown = frames(env.step(STILL))
    for name in ("front", "top"):
        assert (np.abs(seen[name].astype(int) - shown[name].astype(int)).sum(-1) > 30).mean() \
            < 0.01, name


def test_hiding_an_object_the_episode_does_not_have_names_the_ones_it_has(
        make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_and_place",), cameras=())
    env.reset()
    with pytest.raises(BridgeError, match=r"UNKNOWN_OBJECT: worker 0: no object 'cup' in this "
                       r"episode; its objects: green_cube, lego, red_cube, tray"):
        env.hide("cup")
