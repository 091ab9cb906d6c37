from __future__ import annotations

import pytest

from harness_bt.errors import DefinitionError
from runtime_bridge.ros2.names import (
    action_service,
    action_topic,
    dds_type_name,
    reply_topic,
    request_topic,
    ros_type_from_dds,
    topic_name,
)


def test_a_topic_gets_the_rt_prefix() -> None:
    assert topic_name("/joint_states") == "rt/joint_states"
    assert topic_name("/arm/tf") == "rt/arm/tf"


def test_a_service_becomes_a_request_topic_and_a_reply_topic() -> None:
    assert request_topic("/add_two_ints") == "rq/add_two_intsRequest"
    assert reply_topic("/add_two_ints") == "rr/add_two_intsReply"


def test_an_action_is_three_services_and_two_topics_under_its_action_namespace() -> None:
    assert [request_topic(action_service("/arm/move", s))
            for s in ("send_goal", "get_result", "cancel_goal")] == [
        "rq/arm/move/_action/send_goalRequest", "rq/arm/move/_action/get_resultRequest",
        "rq/arm/move/_action/cancel_goalRequest"]
    assert [topic_name(action_topic("/arm/move", t)) for t in ("feedback", "status")] == [
        "rt/arm/move/_action/feedback", "rt/arm/move/_action/status"]


def test_type_names_live_in_the_dds_namespace_with_a_trailing_underscore() -> None:
    assert dds_type_name("sensor_msgs/msg/Image") == "sensor_msgs::msg::dds_::Image_"
    assert dds_type_name("control_msgs/action/GripperCommand_SendGoal_Request") == \
        "control_msgs::action::dds_::GripperCommand_SendGoal_Request_"
    assert ros_type_from_dds("action_msgs::msg::dds_::GoalStatusArray_") == \
        "action_msgs/msg/GoalStatusArray"


@pytest.mark.parametrize("name", ["joint_states", "/", "/a//b", "/9lives", "/a/b/", "/a__b"])
def test_a_relative_or_malformed_name_is_refused_with_the_name(name: str) -> None:
    with pytest.raises(DefinitionError, match=r"ROS 2 name|invalid token") as err:
        topic_name(name)
    assert repr(name) in err.value.message
    assert err.value.fix


def test_a_malformed_type_name_is_refused() -> None:
    with pytest.raises(DefinitionError, match="'Image' is not a ROS 2 type name"):
        dds_type_name("Image")
