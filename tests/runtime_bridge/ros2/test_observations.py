from __future__ import annotations

import math

import numpy as np
import pytest

from harness_bt.errors import BridgeError
from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from runtime_bridge.ros2 import robot
from runtime_bridge.ros2.observations import ObservationAssembler, TfBuffer
from runtime_bridge.ros2.types import RosTypes

T0 = 1_700_000_000.0


def _tf(types: RosTypes, parent: str, child: str, p: tuple[float, ...],
        q_wxyz: tuple[float, ...], t: float = T0):
    return robot._transform(types, t, parent, child, p, q_wxyz)


def test_a_lookup_chains_transforms_through_their_common_root(types: RosTypes) -> None:
    tf = TfBuffer()
    half = math.sqrt(0.5)
    tf.add(_tf(types, "world", "base", (1.0, 0.0, 0.0), (half, 0.0, 0.0, half)), static=True)
    tf.add(_tf(types, "base", "hand", (1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
    p, q = tf.lookup("world", "hand", T0)
    assert np.allclose(p, [1.0, 1.0, 0.0])  # base turned 90 degrees about z
    assert np.allclose(q, [half, 0.0, 0.0, half])
    p_back, _ = tf.lookup("hand", "world", T0)
    assert np.allclose(p_back, [-1.0, 1.0, 0.0])


def test_an_invalid_quaternion_is_refused_with_its_value_and_norm(types: RosTypes) -> None:
    with pytest.raises(BridgeError, match=r"/tf world -> hand: rotation \(w, x, y, z\) "
                       r"\[1.0, 1.0, 0.0, 0.0\] has norm 1.41421, not 1") as err:
        TfBuffer().add(_tf(types, "world", "hand", (0.0, 0.0, 0.0), (1.0, 1.0, 0.0, 0.0)))
    assert err.value.code == "TF_INVALID_QUATERNION"
    assert "normalise" in (err.value.fix or "")


def test_a_lookup_of_an_unknown_frame_is_refused_naming_the_known_ones(types: RosTypes) -> None:
    tf = TfBuffer()
    tf.add(_tf(types, "world", "hand", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
    with pytest.raises(BridgeError, match=r"frame 'camera' is not in the TF tree; known: "
                       r"\['hand', 'world'\]"):
        tf.lookup("world", "camera", T0)


def test_a_stale_transform_is_refused_but_a_static_one_never_ages(types: RosTypes) -> None:
    tf = TfBuffer(max_age_s=0.5)
    tf.add(_tf(types, "world", "base", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)), static=True)
    tf.add(_tf(types, "base", "hand", (0.0, 0.0, 0.5), (1.0, 0.0, 0.0, 0.0)))
    assert np.allclose(tf.lookup("world", "base", T0 + 100.0)[0], 0.0)
    with pytest.raises(BridgeError, match="transform base -> hand is 2.000 s old "
                       r"\(limit 0.5 s\)"):
        tf.lookup("world", "hand", T0 + 2.0)


def _observation() -> Observation:
    rgb = np.zeros((4, 6, 3), dtype=np.uint8)
    rgb[1, 2] = (255, 0, 0)
    cam = CameraFrame(rgb=rgb, depth=np.full((4, 6), 0.75, dtype=np.float32),
                      intrinsics=np.array([[50.0, 0, 3], [0, 50.0, 2], [0, 0, 1]]),
                      position=np.array([1.0, 0.0, 0.5]),
                      quaternion_wxyz=np.array([0.0, 1.0, 0.0, 0.0]))
    return Observation(cameras={"front": cam}, joint_positions=np.linspace(0.0, 0.8, 9),
                       ee_poses=(EePose(np.array([0.4, 0.1, 0.3]),
                                        np.array([0.0, 1.0, 0.0, 0.0])),),
                       instruction="", timestep=3, reset=False)


def test_what_the_robot_publishes_is_assembled_back_into_the_same_observation(
        types: RosTypes) -> None:
    obs = _observation()
    asm = ObservationAssembler()
    for message in (robot.static_tf(types, T0), robot.tf_message(types, obs, T0)):
        for t in message.transforms:
            asm.tf.add(t)
    cam = obs.cameras["front"]
    assert cam.rgb is not None and cam.depth is not None
    asm.camera("front", "image", robot.image(types, "front", cam.rgb, T0))
    asm.camera("front", "depth", robot.image(types, "front", cam.depth, T0))
    asm.camera("front", "info", robot.camera_info(types, "front", 4, 6, cam.intrinsics, T0))
    asm.joint_state(robot.joint_state(types, obs, T0))
    back = asm.build(T0 + 0.1, 5.0)
    assert back is not None
    assert np.allclose(back.joint_positions, obs.joint_positions)
    assert np.allclose(back.ee_pose.position, obs.ee_pose.position)
    assert np.allclose(back.ee_pose.quaternion_wxyz, obs.ee_pose.quaternion_wxyz)
    got = back.cameras["front"]
    assert np.array_equal(got.rgb, cam.rgb) and np.array_equal(got.depth, cam.depth)
    assert np.allclose(got.intrinsics, cam.intrinsics)
    assert np.allclose(got.position, cam.position)
    assert back.received_at == 5.0


def test_stale_joint_states_are_refused(types: RosTypes) -> None:
    asm = ObservationAssembler(max_age_s=1.0)
    asm.joint_state(robot.joint_state(types, _observation(), T0))
    with pytest.raises(BridgeError, match=r"/joint_states is 3.000 s old \(limit 1 s\)"):
        asm.build(T0 + 3.0, 0.0)


def test_joint_states_without_the_arms_joints_are_refused_naming_them(types: RosTypes) -> None:
    asm = ObservationAssembler()
    asm.joint_state(types.new("sensor_msgs/msg/JointState", header=types.new(
        "std_msgs/msg/Header", stamp=robot.stamp(types, T0)), name=["wheel"],
        position=np.array([0.0])))
    with pytest.raises(BridgeError, match=r"/joint_states lacks \['panda_joint1'"):
        asm.build(T0, 0.0)
