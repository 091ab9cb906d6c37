"""Observations on the telemetry ``state`` topic: robot state and camera frames survive the
trip through the wire format."""

from __future__ import annotations

import numpy as np

from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from runtime_bridge.zmq.observations import (
    MAX_CAMERAS,
    observation_from_telemetry,
    observation_to_telemetry,
)
from runtime_bridge.zmq.wire import Message, MessageType, decode, encode


def frame(seed: int) -> CameraFrame:
    rng = np.random.default_rng(seed)
    return CameraFrame(rgb=rng.integers(0, 255, (6, 8, 3), dtype=np.uint8),
                       depth=rng.random((6, 8), dtype=np.float32),
                       intrinsics=np.array([[50.0, 0, 4], [0, 50.0, 3], [0, 0, 1]]),
                       position=np.array([1.0, 0.0, 0.5]),
                       quaternion_wxyz=np.array([0.0, 0.0, 0.0, 1.0]))


def observation(cameras: int) -> Observation:
    return Observation(
        cameras={f"cam{i}": frame(i) for i in range(cameras)},
        joint_positions=np.arange(9, dtype=np.float64) / 10,
        ee_poses=(EePose(np.array([0.5, 0.0, 0.3]), np.array([0.0, 1.0, 0.0, 0.0])),),
        instruction="pick up the red cube", timestep=42, reset=False, worker_id="0")


def through_the_wire(obs: Observation) -> Observation:
    body, arrays = observation_to_telemetry(obs, wall=1.0, active=["c1"])
    msg = decode(encode(Message(MessageType.TELEMETRY, body=body, arrays=arrays)))
    return observation_from_telemetry(msg.body, msg.arrays, now=7.0)


def test_state_and_camera_frames_survive_the_wire() -> None:
    sent = observation(cameras=2)
    got = through_the_wire(sent)
    assert (got.timestep, got.instruction, got.received_at, got.reset) == (
        42, "pick up the red cube", 7.0, False)
    assert got.extras == {"source": "telemetry", "active": ["c1"]}
    np.testing.assert_array_equal(got.joint_positions, sent.joint_positions)
    np.testing.assert_array_equal(got.ee_pose.quaternion_wxyz, sent.ee_pose.quaternion_wxyz)
    assert sorted(got.cameras) == ["cam0", "cam1"]
    for name, cam in got.cameras.items():
        want = sent.cameras[name]
        for field in ("rgb", "depth", "intrinsics", "position", "quaternion_wxyz"):
            np.testing.assert_array_equal(getattr(cam, field), getattr(want, field))


def test_at_most_four_cameras_go_out_and_a_state_without_cameras_has_none() -> None:
    assert sorted(through_the_wire(observation(cameras=6)).cameras) == [
        f"cam{i}" for i in range(MAX_CAMERAS)]
    assert through_the_wire(observation(cameras=0)).cameras == {}
