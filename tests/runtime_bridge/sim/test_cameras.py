"""Camera frames are consistent: intrinsics, pose (scalar-first quaternion, OpenCV axes) and the
linearised metric depth project the known cube back onto itself."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from harness_bt.errors import DefinitionError
from harness_bt.geometry import rotation_matrix
from runtime_bridge.sim.cameras import linearise_depth
from runtime_bridge.sim.config import SimConfig, parse_camera_spec
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.scene import CUBE_HALF

CAMERAS = (parse_camera_spec("front:128x96"), parse_camera_spec("top:128x96"),
           parse_camera_spec("wrist:64x48"))


def test_every_camera_gives_the_genmanip_fields(make_env: Callable[..., SimEnv]) -> None:
    obs = make_env(cameras=CAMERAS).reset()["obs"]
    assert sorted(obs["camera_data"]) == ["front", "top", "wrist"]
    cam = obs["camera_data"]["front"]
    assert cam["rgb"].shape == (96, 128, 3) and cam["rgb"].dtype == np.uint8
    assert cam["depth"].shape == (96, 128) and cam["depth"].dtype == np.float32
    assert cam["intrinsics_matrix"].shape == (3, 3) and cam["intrinsics_matrix"].dtype == np.float32
    assert cam["p"].shape == (3,) and cam["q"].shape == (4,)
    assert float(np.linalg.norm(cam["q"])) == pytest.approx(1.0, abs=1e-5)
    assert float(cam["depth"].min()) > 0.3 and float(cam["depth"].max()) <= 3.0 + 1e-4


@pytest.mark.parametrize("name", ["front", "top"])
def test_the_red_cube_projects_where_its_pixels_and_depth_are(
        make_env: Callable[..., SimEnv], name: str) -> None:
    env = make_env(cameras=CAMERAS)
    cam = env.reset()["obs"]["camera_data"][name]
    top = env.scene.position("red_cube") + np.array([0.0, 0.0, CUBE_HALF])  # centre of the top face
    rot = rotation_matrix(cam["q"])
    in_cam = rot.T @ (top - cam["p"])  # world -> camera (x right, y down, z forward)
    u, v, _ = cam["intrinsics_matrix"] @ (in_cam / in_cam[2])
    px, py = round(u), round(v)
    r, g, b = (int(c) for c in cam["rgb"][py, px])
    assert r > 120 and g < 80 and b < 80, f"pixel ({px}, {py}) is {(r, g, b)}, not red"
    if name == "top":  # looking straight down at the top face: depth is its distance
        assert float(cam["depth"][py, px]) == pytest.approx(in_cam[2], abs=0.01)


def test_the_wrist_camera_rides_on_the_hand(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(cameras=CAMERAS)
    before = env.reset()["obs"]["camera_data"]["wrist"]["p"].copy()
    for _ in range(10):
        move = ([0.0, 0.01, 0.0], [1.0, 0, 0, 0], [0.04, 0.04])
        obs = env.step({"control_type": "ee_pose", "action": move})["obs"]
    moved = obs["camera_data"]["wrist"]["p"] - before
    assert moved[1] > 0.05 and abs(moved[0]) < 0.02


def test_depth_is_linearised_from_the_z_buffer() -> None:
    near, far = 0.1, 10.0
    assert linearise_depth(np.array([0.0]), near, far)[0] == pytest.approx(near)
    assert linearise_depth(np.array([1.0]), near, far)[0] == pytest.approx(far)
    z_mid = (1 / near - 1 / 1.0) / (1 / near - 1 / far)  # the z-buffer value at 1 m
    assert linearise_depth(np.array([z_mid]), near, far)[0] == pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize("spec, match", [
    ("front:64", "neither WxH nor key=value"),
    ("front:64x48:eye=1,2", "eye='1,2' must be 3"),
    ("front:4x4", "outside 8..4096"),
    ("front:fov=0.5", "fov 0.5 is outside"),
    ("x:mount=ceiling", "mount 'ceiling' is unknown"),
    ("front:zoom=2", "unknown key 'zoom'"),
])
def test_bad_camera_specs_say_what_to_write(spec: str, match: str) -> None:
    with pytest.raises(DefinitionError, match=match):
        parse_camera_spec(spec)


def test_camera_specs_set_resolution_and_pose() -> None:
    spec = parse_camera_spec("side2:320x240:eye=0.5,-1,0.6:target=0.5,0,0:fov=45")
    assert (spec.width, spec.height, spec.eye, spec.fov_deg) == (320, 240, (0.5, -1.0, 0.6), 45.0)


def _arm_meshes(env: SimEnv) -> set[str]:
    c, arm = env.scene.client, env.scene.arm.body
    return {row[4].decode().replace("\\", "/").rsplit("/meshes/", 1)[-1]
            for row in c.getVisualShapeData(arm)}


def test_the_simple_arm_is_drawn_with_its_collision_meshes_and_moves_the_same(
        make_env: Callable[..., SimEnv]) -> None:
    simple = make_env(cameras=CAMERAS[:1])
    detailed = make_env(cameras=CAMERAS[:1], arm_meshes="detailed")
    assert {m.split("/")[0] for m in _arm_meshes(simple)} == {"collision"}
    assert "visual/link1.obj" in _arm_meshes(detailed)
    for env in (simple, detailed):
        env.reset()
    for _ in range(15):  # the physics uses the collision meshes either way
        move = ([0.0, 0.0, -0.01], [1.0, 0, 0, 0], [0.04, 0.04])
        a, b = simple.step({"control_type": "ee_pose", "action": move})["obs"], \
            detailed.step({"control_type": "ee_pose", "action": move})["obs"]
    np.testing.assert_array_equal(a["joint_position_state"], b["joint_position_state"])
    np.testing.assert_array_equal(a["camera_data"]["front"]["p"], b["camera_data"]["front"]["p"])
    # the two arms look alike: the coarse hulls move few pixels of the whole frame
    differ = (a["camera_data"]["front"]["rgb"] != b["camera_data"]["front"]["rgb"]).any(axis=2)
    assert 0 < differ.mean() < 0.05


def test_the_floor_is_laid_after_the_objects_of_every_episode(
        make_env: Callable[..., SimEnv], monkeypatch: pytest.MonkeyPatch) -> None:
    """The renderer draws in creation order (body ids are reused, so they do not tell)."""
    env = make_env(scenes=("pick_and_place",), episodes=2, num_steps=1)
    env.reset()
    client, made = env.scene.client, []
    for name in ("loadURDF", "createMultiBody"):
        real = getattr(client, name)
        monkeypatch.setattr(client, name, lambda *a, _n=name, _f=real, **k: (
            made.append(a[0] if _n == "loadURDF" else _n), _f(*a, **k))[1])
    env.step({"control_type": "ee_pose", "action": ([0, 0, 0], [1.0, 0, 0, 0], [0.04, 0.04])})
    assert len(made) == 1 + len(env.scene.objects)  # the next episode's objects, then the floor
    assert made[-1] == "plane.urdf" and "plane.urdf" not in made[:-1]
    assert client.getNumBodies() == 3 + len(env.scene.objects)  # floor, table, arm, objects


def test_an_unknown_arm_mesh_choice_says_what_to_write() -> None:
    with pytest.raises(DefinitionError, match="arm_meshes='sketchy' must be 'simple' or "
                                              "'detailed'"):
        SimConfig(arm_meshes="sketchy")
