from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from harness_bt.errors import DefinitionError
from runtime_bridge.ros2.dds import QOS, Participant, ServiceClient, ServiceServer, _frame
from runtime_bridge.ros2.types import RosTypes
from tests.conftest import python


def _take(reader: Any, tries: int = 500) -> list[Any]:
    """What a reader gets within a bounded number of polls (delivery is asynchronous)."""
    for _ in range(tries):
        got = reader.take(16)
        if got:
            return list(got)
        time.sleep(0.01)
    return []


def test_cdr_from_rosbags_round_trips_a_joint_state(types: RosTypes) -> None:
    msg = types.new("sensor_msgs/msg/JointState", name=["a", "b"],
                    position=np.array([0.5, -1.25]))
    data = types.serialize(msg, "sensor_msgs/msg/JointState")
    assert data[:4] == b"\x00\x01\x00\x00"  # CDR little-endian encapsulation, as ROS 2 writes
    back = types.deserialize(data, "sensor_msgs/msg/JointState")
    assert back.name == ["a", "b"] and back.position.tolist() == [0.5, -1.25]


def test_a_service_sample_carries_the_client_id_and_sequence_after_the_encapsulation_header(
        types: RosTypes) -> None:
    req = types.new("action_msgs/srv/CancelGoal_Request")
    body = types.serialize(req, "action_msgs/srv/CancelGoal_Request")
    framed = _frame(types, req, "action_msgs/srv/CancelGoal_Request", 0x0102030405060708, 42)
    assert framed[:4] == body[:4]
    assert struct.unpack("<Qq", framed[4:20]) == (0x0102030405060708, 42)
    assert framed[20:] == body[4:]


def test_the_qos_profiles_are_ros2s() -> None:
    def policies(name: str) -> set[str]:
        return {repr(p) for p in QOS[name]}

    assert any("BestEffort" in p for p in policies("sensor_data"))
    assert any("KeepLast(depth=5)" in p for p in policies("sensor_data"))
    for name in ("action_status", "tf_static"):
        assert any("TransientLocal" in p for p in policies(name))
        assert any("KeepLast(depth=1)" in p for p in policies(name))
    assert any("Volatile" in p for p in policies("default"))
    assert any("KeepLast(depth=10)" in p for p in policies("default"))


def test_two_participants_in_one_process_talk_and_a_late_joiner_gets_tf_static(
        participant: Callable[[], Participant], types: RosTypes) -> None:
    a, b = participant(), participant()
    publish = a.writer("/tf_static", "tf2_msgs/msg/TFMessage", "tf_static")
    t = types.new("geometry_msgs/msg/TransformStamped", child_frame_id="base")
    publish(types.new("tf2_msgs/msg/TFMessage", transforms=[t]))
    reader = b.reader("/tf_static", "tf2_msgs/msg/TFMessage", "tf_static")  # joins after
    got = _take(reader)
    assert [m.transforms[0].child_frame_id for m in got] == ["base"]


def test_a_service_call_is_answered_to_its_own_client_only(
        participant: Callable[[], Participant], types: RosTypes) -> None:
    a, b = participant(), participant()
    server = ServiceServer(a, "/x/_action/cancel_goal", "action_msgs/srv/CancelGoal")
    mine = ServiceClient(b, "/x/_action/cancel_goal", "action_msgs/srv/CancelGoal")
    other = ServiceClient(b, "/x/_action/cancel_goal", "action_msgs/srv/CancelGoal")
    seq = mine.send(types.new("action_msgs/srv/CancelGoal_Request"))
    requests = []
    for _ in range(500):
        requests = server.requests()
        if requests:
            break
        time.sleep(0.01)
    assert [(r.client_id, r.seq) for r in requests] == [(mine.client_id, seq)]
    server.reply(requests[0], types.new("action_msgs/srv/CancelGoal_Response", return_code=2))
    replies: list[Any] = []
    for _ in range(500):
        replies = mine.replies()
        if replies:
            break
        time.sleep(0.01)
    assert [(s, int(r.return_code)) for s, r in replies] == [(seq, 2)]
    assert other.replies() == []


_CHILD = """
import os, sys, time
from runtime_bridge.ros2.dds import Participant
from runtime_bridge.ros2.types import RosTypes
types = RosTypes()
p = Participant(int(sys.argv[1]), types)
pub = p.writer("/chatter", "std_msgs/msg/String", "tf_static")
pub(types.new("std_msgs/msg/String", data="from pid %d" % os.getpid()))
print("{}", flush=True)
time.sleep(60)
"""


def test_two_processes_talk_over_loopback(processes: Any, domain: int,
                                          participant: Callable[[], Participant]) -> None:
    import os

    proc, _ = processes.ready(*python("-c", _CHILD, str(domain)),
                              env={"CYCLONEDDS_URI": os.environ["CYCLONEDDS_URI"]})
    reader = participant().reader("/chatter", "std_msgs/msg/String", "tf_static")
    got = _take(reader, tries=1000)
    assert [m.data for m in got] == [f"from pid {proc.pid}"]


def test_a_domain_outside_ros2s_range_is_refused(types: RosTypes) -> None:
    from harness_bt.errors import BridgeError

    with pytest.raises(BridgeError, match=r"ROS_DOMAIN_ID 300 is outside 0\.\.232"):
        Participant(300, types)


def test_an_unknown_type_is_refused_with_a_fix(participant: Callable[[], Participant]) -> None:
    with pytest.raises(DefinitionError, match="type 'nav2_msgs/action/Nope_Goal' is not known"):
        participant().writer("/x", "nav2_msgs/action/Nope_Goal")
