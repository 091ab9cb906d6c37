"""The transport seam of the ROS 2 bridge: what the action protocol, the bridge, the runtime and
the robot server need from a middleware, met by Cyclone DDS (:mod:`runtime_bridge.ros2.dds`)
and by Zenoh (:mod:`runtime_bridge.ros2.zenoh_transport`).

A transport carries ROS 2 messages as CDR bytes made by ``rosbags`` (the ``types`` it holds),
on ROS names (``/joint_states``, ``/a/_action/send_goal``); how a name becomes a DDS topic or a
Zenoh key expression is the transport's business. Nothing here blocks or starts a thread: every
reader and service end is polled by its owner's thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from runtime_bridge.ros2.types import RosTypes

__all__ = ["QOS_PROFILES", "Request", "ServiceClientEnd", "ServiceServerEnd", "TopicReader",
           "Transport"]

#: The QoS profile names both transports know (ROS 2's, see ``dds.QOS``).
QOS_PROFILES = ("default", "sensor_data", "services", "action_status", "tf_static")


@dataclass
class Request:
    """One service request as a server takes it: the client's id and sequence number (the
    reply must carry both) and the message."""

    client_id: int
    seq: int
    message: Any
    sample_info: Any = None  # what the transport adds (a DDS sample info, a Zenoh query)


class TopicReader(Protocol):
    """A subscription: ``take(N)`` returns up to N messages that arrived (rosbags messages;
    a DDS reader may also return status samples, which callers skip by type)."""

    def take(self, N: int = ...) -> list[Any]: ...

    def get_matched_publications(self) -> list[Any]:
        """The publishers of this topic the transport knows to be alive."""
        ...


class ServiceClientEnd(Protocol):
    service: str

    @property
    def ready(self) -> bool:
        """Whether a server of the service is there."""
        ...

    def send(self, message: Any) -> int:
        """Send one request; its sequence number."""
        ...

    def replies(self) -> list[tuple[int, Any]]:
        """(sequence number, reply) for every reply to this client that arrived."""
        ...


class ServiceServerEnd(Protocol):
    service: str

    def requests(self) -> list[Request]: ...

    def reply(self, request: Request, message: Any) -> None: ...


class Transport(Protocol):
    """One middleware endpoint (a DDS participant, a Zenoh session) on one ROS 2 domain; the
    owner of everything made through it, all released by ``close()``."""

    domain: int
    types: RosTypes

    def writer(self, ros_topic: str, ros_type: str,
               qos: str = "default") -> Callable[[Any], None]: ...

    def reader(self, ros_topic: str, ros_type: str, qos: str = "default") -> TopicReader: ...

    def service_client(self, service: str, srv_type: str) -> ServiceClientEnd: ...

    def service_server(self, service: str, srv_type: str) -> ServiceServerEnd: ...

    def close(self) -> None: ...
