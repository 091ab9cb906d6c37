"""Colour perception on synthetic RGB-D frames with known intrinsics and camera poses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness_bt.world import Relation, WorldModel
from skills.geometry import yaw_of
from skills.perception import ColourPerception
from skills.perception.vision import back_project, fit_box
from tests.skills.synthetic import Box, Camera, observation, render, tray_boxes

RED = (217, 25, 25)
GREEN = (25, 178, 51)
CUBE = (0.04, 0.04, 0.04)


def _find(updates: list, oid: str):  # type: ignore[no-untyped-def]
    return next(u for u in updates if u.object_id == oid)


def test_back_projection_inverts_the_pinhole_model() -> None:
    cam = Camera(eye=(1.0, 0.2, 0.6), target=(0.4, -0.1, 0.0), width=160, height=120, fov_deg=50)
    point = np.array([0.5, 0.05, 0.03])
    local = cam.rotation.T @ (point - np.array(cam.eye))
    u = cam.k[0, 0] * local[0] / local[2] + cam.k[0, 2]
    v = cam.k[1, 1] * local[1] / local[2] + cam.k[1, 2]
    back = back_project(np.array([v]), np.array([u]), np.array([local[2]]), cam.k,
                        np.array(cam.eye), cam.quaternion())
    assert np.allclose(back[0], point, atol=1e-9)


def test_fit_box_recovers_centre_size_and_yaw_of_a_square_footprint() -> None:
    grid = np.linspace(-0.05, 0.05, 40)  # a surface seen pixel by pixel
    local = np.stack(np.meshgrid(grid, grid), axis=-1).reshape(-1, 2)
    yaw = math.radians(20)
    rot = np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])
    xy = local @ rot.T + [0.5, -0.2]
    fit = fit_box(np.column_stack([xy, np.full(len(xy), 0.04)]))
    assert fit.centre_xy == pytest.approx((0.5, -0.2), abs=0.002)
    assert fit.size_xy == pytest.approx((0.1, 0.1), abs=0.005)
    assert math.degrees(fit.yaw) == pytest.approx(20, abs=1.0)


@pytest.mark.parametrize(("camera", "centre", "yaw"), [
    (Camera(), (0.5, -0.1, 0.02), 0.3),
    (Camera(width=320, height=240, fov_deg=50), (0.45, 0.12, 0.02), -0.4),
    (Camera(eye=(0.5, -0.8, 0.6), target=(0.5, 0.0, 0.0)), (0.55, 0.05, 0.02), 0.1),
])
def test_a_cube_on_the_table_is_found_within_a_few_millimetres(
        camera: Camera, centre: tuple[float, float, float], yaw: float) -> None:
    frame = render(camera, [Box(centre, CUBE, RED, yaw)])
    updates = ColourPerception()(observation({"cam": frame}))
    cube = _find(updates, "red_cube")
    assert cube.confidence > 0.9
    assert np.allclose(cube.pose.position, centre, atol=0.004)
    err = math.degrees(abs(yaw_of(cube.pose.quaternion_wxyz) - yaw)) % 90
    assert min(err, 90 - err) < 2.0
    assert cube.extent == CUBE
    assert cube.camera == "cam"
    assert cube.relations == {Relation.ON: "table", Relation.IN: None, Relation.HELD_BY: None}
    assert {u.object_id for u in updates} == {"red_cube"}


def test_an_object_behind_an_occluder_is_reported_with_low_confidence_and_no_pose() -> None:
    cam = Camera()
    clear = render(cam, [Box((0.5, 0.0, 0.02), CUBE, RED)])
    _, cols = np.nonzero(np.all(clear.rgb == RED, axis=-1))
    mid = int(cols.mean())
    covered = render(cam, [Box((0.5, 0.0, 0.02), CUBE, RED)],
                     occluder=(mid - 1, 0, cam.width, cam.height))
    cube = _find(ColourPerception()(observation({"cam": covered})), "red_cube")
    assert cube.confidence < 0.5
    assert cube.pose is None
    hidden = render(cam, [Box((0.5, 0.0, 0.02), CUBE, RED)], occluder=(0, 0, cam.width, cam.height))
    assert ColourPerception()(observation({"cam": hidden})) == []


def test_the_clearest_camera_wins() -> None:
    scene = [Box((0.5, 0.0, 0.02), CUBE, RED)]
    front = Camera()
    side = Camera(eye=(0.5, -0.8, 0.6), target=(0.5, 0.0, 0.0))
    frames = {"front": render(front, scene, occluder=(0, 0, front.width, front.height)),
              "side": render(side, scene)}
    cube = _find(ColourPerception()(observation(frames)), "red_cube")
    assert cube.camera == "side" and cube.confidence > 0.9


def test_a_cube_between_closed_fingers_is_held_by_the_gripper() -> None:
    scene = [Box((0.5, 0.0, 0.14), CUBE, RED)]
    frame = render(Camera(), scene)
    held = _find(ColourPerception()(observation({"cam": frame}, tcp=(0.5, 0.0, 0.14),
                                                 finger_gap=0.037)), "red_cube")
    assert held.relations[Relation.HELD_BY] == "gripper"
    assert held.relations[Relation.ON] is None
    empty = _find(ColourPerception()(observation({"cam": frame}, tcp=(0.5, 0.0, 0.14),
                                                  finger_gap=0.0)), "red_cube")
    assert empty.relations[Relation.HELD_BY] is None
    away = _find(ColourPerception()(observation({"cam": frame}, tcp=(0.4, 0.1, 0.3),
                                                 finger_gap=0.037)), "red_cube")
    assert away.relations[Relation.HELD_BY] is None


def test_a_cube_in_the_tray_is_in_and_on_it() -> None:
    scene = [*tray_boxes((0.5, 0.18), yaw=0.2), Box((0.51, 0.17, 0.026), CUBE, RED, 0.1),
             Box((0.45, -0.1, 0.02), CUBE, GREEN)]
    perception = ColourPerception()
    updates = perception(observation({"cam": render(Camera(), scene)}))
    tray = _find(updates, "tray")
    assert np.allclose(tray.pose.position[:2], (0.5, 0.18), atol=0.006)
    assert tray.relations[Relation.ON] == "table"
    cube = _find(updates, "red_cube")
    assert cube.relations[Relation.IN] == "tray" and cube.relations[Relation.ON] == "tray"
    green = _find(updates, "green_cube")
    assert green.relations[Relation.ON] == "table" and green.relations[Relation.IN] is None


def test_updates_feed_the_world_model_with_provenance_and_freshness() -> None:
    frame = render(Camera(), [Box((0.5, 0.0, 0.02), CUBE, RED)])
    world = WorldModel()
    perception = ColourPerception()
    obs = observation({"front": frame}, timestep=7)
    world.observe(obs, perception(obs), now=1.5)
    cube = world.get("red_cube")
    assert cube is not None
    assert (cube.provenance.camera, cube.provenance.timestep, cube.provenance.observed_at) == \
        ("front", 7, 1.5)
    assert world.fresh("red_cube", 2.0, 1.0) and not world.fresh("red_cube", 3.0, 1.0)
    assert cube.label == "red cube"


def test_a_reset_observation_forgets_the_containers_seen_before() -> None:
    perception = ColourPerception()
    perception(observation({"cam": render(Camera(), tray_boxes((0.5, 0.18)))}))
    assert "tray" in perception._containers
    perception(observation({}, reset=True))
    assert perception._containers == {}


def test_frames_without_rgb_or_depth_give_nothing() -> None:
    frame = render(Camera(), [Box((0.5, 0.0, 0.02), CUBE, RED)])
    from harness_bt.runtime.observation import CameraFrame
    no_depth = CameraFrame(frame.rgb, None, frame.intrinsics, frame.position,
                           frame.quaternion_wxyz)
    assert ColourPerception()(observation({"cam": no_depth})) == []
    assert ColourPerception()(observation({})) == []
