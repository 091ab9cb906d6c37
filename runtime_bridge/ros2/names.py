"""ROS 2's naming conventions on DDS: topic and service name mangling and DDS type names.

What each function follows:

- Topic names (``rt/``), service request / reply topics (``rq/<name>Request``,
  ``rr/<name>Reply``): the ROS 2 design article "Topic and Service name mapping to DDS"
  (design.ros2.org/articles/topic_and_service_names.html, "ROS Specific Namespace Prefix"),
  as rmw_cyclonedds builds them (``make_fqtopic`` with ``ros_topic_prefix`` /
  ``ros_service_requester_prefix`` / ``ros_service_response_prefix``).
- Action sub-names (``<action>/_action/send_goal`` ...): the "Actions" design article
  (design.ros2.org/articles/actions.html, "Topics and Services"), as rcl_action names them.
- DDS type names ``pkg::msg::dds_::Name_``: rosidl_typesupport's DDS naming (the ``dds_``
  namespace and the trailing underscore), as rmw_cyclonedds' ``create_type_name`` writes them.

A ROS name is absolute here (``/joint_states``): this bridge has no node namespace to resolve
relative names against, so a relative one is refused.
"""

from __future__ import annotations

import re

from harness_bt.errors import DefinitionError

__all__ = [
    "ACTION_SERVICES",
    "ACTION_TOPICS",
    "action_service",
    "action_topic",
    "dds_type_name",
    "reply_topic",
    "request_topic",
    "ros_type_from_dds",
    "topic_name",
    "validate_ros_name",
]

#: The three services and two topics of an action (relative to the action's name).
ACTION_SERVICES = ("send_goal", "get_result", "cancel_goal")
ACTION_TOPICS = ("feedback", "status")

_TOKEN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TYPE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)/(msg|srv|action)/([A-Za-z][A-Za-z0-9_]*)$")


def validate_ros_name(name: str, *, where: str = "ROS name") -> str:
    """``name`` when it is an absolute ROS 2 name (``/a/b_c``): tokens of letters, digits and
    underscores, not starting with a digit, no ``//`` and no trailing ``/``."""
    if not isinstance(name, str) or not name.startswith("/") or name == "/":
        raise DefinitionError("INVALID_ROS_NAME", f"{where}: {name!r} is not an absolute ROS 2 "
                              "name", where=where, fix="write it like /arm/follow_joint_trajectory")
    tokens = name[1:].split("/")
    bad = [t for t in tokens if not _TOKEN.match(t) and not t.startswith("_action")]
    if bad or "__" in name:
        raise DefinitionError("INVALID_ROS_NAME", f"{where}: {name!r} has invalid token(s) "
                              f"{bad or ['__']}: each token is letters, digits and '_', starting "
                              "with a letter, and '__' is reserved", where=where,
                              fix="rename it, e.g. /gripper_controller/gripper_cmd")
    return name


def topic_name(name: str) -> str:
    """The DDS topic of ROS topic ``name``: ``/joint_states`` -> ``rt/joint_states``."""
    return "rt" + validate_ros_name(name)


def request_topic(service: str) -> str:
    """The DDS topic a service's requests travel on: ``/a/b`` -> ``rq/a/bRequest``."""
    return "rq" + validate_ros_name(service) + "Request"


def reply_topic(service: str) -> str:
    """The DDS topic a service's replies travel on: ``/a/b`` -> ``rr/a/bReply``."""
    return "rr" + validate_ros_name(service) + "Reply"


def action_service(action: str, which: str) -> str:
    """The ROS name of one of an action's services: ``/arm/move``, ``send_goal`` ->
    ``/arm/move/_action/send_goal``."""
    if which not in ACTION_SERVICES:
        raise ValueError(f"unknown action service {which!r}; known: {ACTION_SERVICES}")
    return validate_ros_name(action, where="action name") + "/_action/" + which


def action_topic(action: str, which: str) -> str:
    """The ROS name of one of an action's topics (``feedback``, ``status``)."""
    if which not in ACTION_TOPICS:
        raise ValueError(f"unknown action topic {which!r}; known: {ACTION_TOPICS}")
    return validate_ros_name(action, where="action name") + "/_action/" + which


def dds_type_name(ros_type: str) -> str:
    """``sensor_msgs/msg/Image`` -> ``sensor_msgs::msg::dds_::Image_``; also for the
    generated types of services and actions (``pkg/action/Name_SendGoal_Request`` ->
    ``pkg::action::dds_::Name_SendGoal_Request_``)."""
    match = _TYPE.match(ros_type)
    if match is None:
        raise DefinitionError("INVALID_ROS_TYPE", f"{ros_type!r} is not a ROS 2 type name",
                              where="type", fix="write it like sensor_msgs/msg/Image")
    pkg, kind, name = match.groups()
    return f"{pkg}::{kind}::dds_::{name}_"


def ros_type_from_dds(dds_name: str) -> str:
    """The inverse of :func:`dds_type_name`."""
    parts = dds_name.split("::")
    if len(parts) != 4 or parts[2] != "dds_" or not parts[3].endswith("_"):
        raise DefinitionError("INVALID_DDS_TYPE", f"{dds_name!r} is not a ROS 2 DDS type name",
                              where="type", fix="expect pkg::msg::dds_::Name_")
    return f"{parts[0]}/{parts[1]}/{parts[3][:-1]}"
