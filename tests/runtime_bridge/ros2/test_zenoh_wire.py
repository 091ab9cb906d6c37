"""ROS 2 over Zenoh on the wire: rmw_zenoh's key expressions, liveliness tokens and attachments,
and two sessions talking through a Zenoh router on loopback (delivery between sessions is
asynchronous: every wait is a bounded number of polls)."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import zenoh

from harness_bt.errors import BridgeError
from runtime_bridge.ros2 import robot
from runtime_bridge.ros2.observations import ObservationAssembler
from runtime_bridge.ros2.transport import Transport
from runtime_bridge.ros2.types import RosTypes
from runtime_bridge.ros2.zenoh_transport import (
    ZenohEndpoints,
    ZenohSession,
    key_expr,
    liveliness_key,
    make_attachment,
    read_attachment,
)
from tests.runtime_bridge.ros2.test_observations import T0, _observation


def _until(get: Callable[[], Any], polls: int = 1000) -> Any:
    """``get()`` until it gives something (bounded)."""
    for _ in range(polls):
        got = get()
        if got:
            return got
        time.sleep(0.01)
    return get()


@pytest.fixture
def session(zenoh_router: str, domain: int, types: RosTypes,
            closing: Callable[..., Any]) -> Callable[[], ZenohSession]:
    """``session()``: a new Zenoh session (its own, as a separate process would have)
    connected to the test's router."""
    return lambda: closing(ZenohSession(domain, types, ZenohEndpoints(connect=(zenoh_router,))))


def test_a_topic_is_the_key_expression_domain_name_type_and_type_hash() -> None:
    assert key_expr(7, "/joint_states", "sensor_msgs/msg/JointState") == (
        "7/joint_states/sensor_msgs::msg::dds_::JointState_/TypeHashNotSupported")
    assert key_expr(0, "/a/_action/send_goal", "harness_msgs/action/ExecuteSkill_SendGoal") == (
        "0/a/_action/send_goal/harness_msgs::action::dds_::ExecuteSkill_SendGoal_/"
        "TypeHashNotSupported")


def test_a_publishers_liveliness_token_names_its_node_topic_type_and_qos() -> None:
    key = liveliness_key(0, "abc", (3, "MP"), "harness", ("/tf_static", "tf2_msgs/msg/TFMessage",
                                                          ":1:,1:,:,:,,"))
    assert key == ("@ros2_lv/0/abc/0/3/MP/%/%/harness/%tf_static/"
                   "tf2_msgs::msg::dds_::TFMessage_/TypeHashNotSupported/:1:,1:,:,:,,")


def test_the_attachment_is_sequence_number_timestamp_and_gid_in_zenohs_serialization() -> None:
    gid = bytes(range(16))
    data = bytes(make_attachment(5, 1_000, gid).to_bytes())
    assert data == struct.pack("<qq", 5, 1_000) + bytes([16]) + gid
    assert read_attachment(zenoh.ZBytes(data)) == (5, 1_000, gid)


def test_a_malformed_attachment_is_refused_naming_what_it_should_hold() -> None:
    with pytest.raises(BridgeError, match=r"is not rmw_zenoh's \(sequence number, timestamp, "
                       r"GID\)") as err:
        read_attachment(zenoh.ZBytes(b"\x01\x02"))
    assert err.value.code == "MALFORMED_ATTACHMENT"


def test_a_domain_outside_ros2s_range_is_refused(types: RosTypes) -> None:
    with pytest.raises(BridgeError, match=r"ROS_DOMAIN_ID 233 is outside 0\.\.232"):
        ZenohSession(233, types, ZenohEndpoints())


def test_a_message_crosses_sessions_as_cdr_with_the_attachment_and_a_late_joiner_gets_tf_static(
        session: Callable[[], ZenohSession], domain: int, types: RosTypes) -> None:
    a, b = session(), session()
    raw = b.session.declare_subscriber(key_expr(domain, "/chatter", "std_msgs/msg/String"),
                                       zenoh.handlers.RingChannel(8))
    try:
        reader = b.reader("/chatter", "std_msgs/msg/String")
        publish = a.writer("/chatter", "std_msgs/msg/String")
        assert _until(reader.get_matched_publications)  # a's MP token reached b
        publish(types.new("std_msgs/msg/String", data="hello"))
        assert [m.data for m in _until(lambda: reader.take(8))] == ["hello"]
        sample = raw.try_recv()
        assert bytes(sample.payload.to_bytes()) == types.serialize(
            types.new("std_msgs/msg/String", data="hello"), "std_msgs/msg/String")
        seq, _, gid = read_attachment(sample.attachment)
        assert (seq, len(gid)) == (1, 16)
    finally:
        raw.undeclare()
    static = a.writer("/tf_static", "tf2_msgs/msg/TFMessage", "tf_static")
    t = types.new("geometry_msgs/msg/TransformStamped", child_frame_id="base")
    static(types.new("tf2_msgs/msg/TFMessage", transforms=[t]))
    late = b.reader("/tf_static", "tf2_msgs/msg/TFMessage", "tf_static")  # joins after
    assert [m.transforms[0].child_frame_id for m in _until(lambda: late.take(8))] == ["base"]


def test_a_service_call_is_answered_to_its_own_client_only_and_a_closed_server_is_gone(
        session: Callable[[], ZenohSession], types: RosTypes) -> None:
    a, b = session(), session()
    name, srv = "/x/_action/cancel_goal", "action_msgs/srv/CancelGoal"
    server = a.service_server(name, srv)
    mine, other = b.service_client(name, srv), b.service_client(name, srv)
    assert _until(lambda: mine.ready)
    seq = mine.send(types.new("action_msgs/srv/CancelGoal_Request"))
    requests = _until(server.requests)
    assert [(r.client_id, r.seq) for r in requests] == [(mine.client_id, seq)]
    server.reply(requests[0], types.new("action_msgs/srv/CancelGoal_Response", return_code=2))
    replies = _until(mine.replies)
    assert [(s, int(r.return_code)) for s, r in replies] == [(seq, 2)]
    assert other.replies() == []
    a.close()  # the server's session goes: its token with it
    assert _until(lambda: not mine.ready)


def test_the_robots_observation_travels_over_either_transport_and_is_assembled_back(
        transport: Callable[[], Transport], types: RosTypes) -> None:
    robot_side, harness_side = transport(), transport()
    topics = [("/joint_states", "sensor_msgs/msg/JointState", "default"),
              ("/tf", "tf2_msgs/msg/TFMessage", "default"),
              ("/tf_static", "tf2_msgs/msg/TFMessage", "tf_static"),
              ("/front/image_raw", "sensor_msgs/msg/Image", "sensor_data"),
              ("/front/depth/image_raw", "sensor_msgs/msg/Image", "sensor_data"),
              ("/front/camera_info", "sensor_msgs/msg/CameraInfo", "sensor_data")]
    readers = {t: harness_side.reader(t, ty, q) for t, ty, q in topics}
    writers = {t: robot_side.writer(t, ty, q) for t, ty, q in topics}
    for reader in readers.values():
        assert _until(reader.get_matched_publications)
    obs = _observation()
    cam = obs.cameras["front"]
    assert cam.rgb is not None and cam.depth is not None
    writers["/tf_static"](robot.static_tf(types, T0))
    writers["/tf"](robot.tf_message(types, obs, T0))
    writers["/front/image_raw"](robot.image(types, "front", cam.rgb, T0))
    writers["/front/depth/image_raw"](robot.image(types, "front", cam.depth, T0))
    writers["/front/camera_info"](robot.camera_info(types, "front", 4, 6, cam.intrinsics, T0))
    writers["/joint_states"](robot.joint_state(types, obs, T0))
    got = {t: [m for m in _until(lambda r=r: r.take(8))
               if getattr(m, "__msgtype__", None) is not None] for t, r in readers.items()}
    asm = ObservationAssembler()
    for topic in ("/tf_static", "/tf"):
        for message in got[topic]:
            for t in message.transforms:
                asm.tf.add(t, static=topic == "/tf_static")
    asm.camera("front", "image", got["/front/image_raw"][-1])
    asm.camera("front", "depth", got["/front/depth/image_raw"][-1])
    asm.camera("front", "info", got["/front/camera_info"][-1])
    asm.joint_state(got["/joint_states"][-1])
    back = asm.build(T0 + 0.1, 5.0)
    assert back is not None
    assert np.allclose(back.joint_positions, obs.joint_positions)
    assert np.allclose(back.ee_pose.position, obs.ee_pose.position)
    assert np.array_equal(back.cameras["front"].rgb, cam.rgb)
    assert np.array_equal(back.cameras["front"].depth, cam.depth)
    assert np.allclose(back.cameras["front"].intrinsics, cam.intrinsics)
