"""ROS 2 topics and services on Cyclone DDS (the ``cyclonedds`` Python binding), without rclpy.

- :class:`Participant`: one DDS domain participant (domain id = ``ROS_DOMAIN_ID``), the owner
  of every reader and writer made through it; ``close()`` deletes them all.
- A topic's samples are CDR bytes made by ``rosbags`` (:class:`~runtime_bridge.ros2.types.
  RosTypes`): the DDS topic type is named as ROS 2 names it (``pkg::msg::dds_::Name_``) and
  carries the rosbags encoding unchanged (XCDR1, little-endian, as rmw_cyclonedds writes).
- :data:`QOS`: ROS 2's QoS profiles (rmw's ``qos_profiles.h``): ``default`` (reliable,
  volatile, keep last 10), ``sensor_data`` (best effort, volatile, keep last 5), ``services``
  (reliable, volatile, keep last 10), ``action_status`` (reliable, transient local, keep last
  1: rcl_action's ``rcl_action_qos_profile_status_default``) and ``tf_static`` (reliable,
  transient local, keep last 1, as tf2_ros' ``StaticBroadcasterQoS``).
- Services: a request travels on ``rq/<service>Request`` and its reply on
  ``rr/<service>Reply``; both carry rmw_cyclonedds' request header before the message body
  (``cdds_request_header_t``: a 64-bit client id and a 64-bit sequence number, in the
  sample's byte order, right after the encapsulation header). A client takes only the replies
  carrying its own id.

Nothing here starts a thread: readers are polled (``take``) by their owner's thread.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Callable
from typing import Any

from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import make_idl_struct
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from harness_bt.errors import BridgeError
from runtime_bridge.ros2.names import dds_type_name, reply_topic, request_topic, topic_name
from runtime_bridge.ros2.transport import Request
from runtime_bridge.ros2.types import RosTypes

__all__ = ["LOOPBACK_CONFIG", "QOS", "Participant", "Request", "ServiceClient",
           "ServiceServer", "loopback_config"]

_REL = 1_000_000_000  # max blocking time of a reliable writer (ns)

QOS: dict[str, Qos] = {
    "default": Qos(Policy.Reliability.Reliable(_REL), Policy.Durability.Volatile,
                   Policy.History.KeepLast(10)),
    "sensor_data": Qos(Policy.Reliability.BestEffort, Policy.Durability.Volatile,
                       Policy.History.KeepLast(5)),
    "services": Qos(Policy.Reliability.Reliable(_REL), Policy.Durability.Volatile,
                    Policy.History.KeepLast(10)),
    "action_status": Qos(Policy.Reliability.Reliable(_REL), Policy.Durability.TransientLocal,
                         Policy.History.KeepLast(1)),
    "tf_static": Qos(Policy.Reliability.Reliable(_REL), Policy.Durability.TransientLocal,
                     Policy.History.KeepLast(1)),
}


def loopback_config(lease_s: float = 2.0) -> str:
    """A Cyclone DDS configuration that keeps every packet on 127.0.0.1 (no multicast, the
    loopback interface only, unicast discovery of local participants) and notices a dead peer
    after ``lease_s`` (Cyclone's default lease is 10 s)."""
    return ("<CycloneDDS><Domain Id=\"any\"><General><Interfaces>"
            "<NetworkInterface address=\"127.0.0.1\" multicast=\"false\"/></Interfaces>"
            "<AllowMulticast>false</AllowMulticast></General>"
            f"<Discovery><LeaseDuration>{lease_s:g}s</LeaseDuration>"
            "<ParticipantIndex>auto</ParticipantIndex>"
            "<MaxAutoParticipantIndex>60</MaxAutoParticipantIndex>"
            "<Peers><Peer address=\"127.0.0.1\"/></Peers></Discovery></Domain></CycloneDDS>")


#: What ``CYCLONEDDS_URI`` holds in the tests and in ``harness sim serve --ros2`` by default.
LOOPBACK_CONFIG = loopback_config()


_BASES = {"bool": bool, "byte": "uint8", "octet": "uint8", "char": "uint8", "int8": "int8",
          "uint8": "uint8", "int16": "int16", "uint16": "uint16", "int32": "int32",
          "uint32": "uint32", "int64": "int64", "uint64": "uint64", "float32": "float32",
          "float64": "float64"}


def _idl_field(types: RosTypes, node: int, arg: Any, cache: dict[str, Any]) -> Any:
    from cyclonedds.idl import types as idl_types

    T: Any = idl_types
    if node == 1:  # a base type
        base, bound = arg
        if base == "string":
            return T.bounded_str[bound] if bound else str
        kind = _BASES[base]
        return kind if kind is bool else getattr(T, str(kind))
    if node == 2:  # a message
        return _idl_struct(types, arg, cache)
    (sub_node, sub_arg), count = arg
    sub = _idl_field(types, int(sub_node), sub_arg, cache)
    if node == 3:
        return T.array[sub, count]
    return T.sequence[sub, count] if count else T.sequence[sub]


def _idl_struct(types: RosTypes, ros_type: str, cache: dict[str, Any],
                dds_name: str | None = None) -> Any:
    """An IDL struct mirroring ``ros_type``'s fields (for DDS type matching)."""
    name = dds_name or dds_type_name(ros_type)
    if name not in cache:
        _, fields = types.store.fielddefs[ros_type]
        cache[name] = make_idl_struct(
            name.replace("::", "_"), name,
            {f: _idl_field(types, int(node), arg, cache) for f, (node, arg) in fields})
    return cache[name]


def _sample_class(types: RosTypes, ros_type: str, decode: Callable[[bytes], Any],
                  header: bool) -> type:
    """A DDS topic type named as ROS 2 names ``ros_type``, mirroring its fields (a service's
    request and reply begin with rmw_cyclonedds' header), whose samples are ready-made CDR."""
    fields = {"client_id": "uint64", "seq": "int64"} if header else {}
    from cyclonedds.idl import types as T

    cache: dict[str, Any] = {}
    _, defs = types.store.fielddefs[ros_type]
    body = {f: _idl_field(types, int(node), arg, cache) for f, (node, arg) in defs}
    name = dds_type_name(ros_type)
    cls: Any = make_idl_struct(name.replace("::", "_") + ("_framed" if header else ""), name,
                               {**{k: getattr(T, v) for k, v in fields.items()}, **body})

    def serialize(self: Any, buffer: Any = None, endianness: Any = None,
                  use_version_2: Any = None) -> bytes:
        return self.__dict__["_cdr"]

    cls.serialize = serialize
    cls.deserialize = classmethod(lambda c, data, has_header=True, use_version_2=None:
                                  decode(bytes(data)))
    return cls


def _wrap(cls: type, cdr: bytes) -> Any:
    sample: Any = object.__new__(cls)
    sample.__dict__["_cdr"] = cdr
    return sample


class Participant:
    """A DDS participant on ``domain`` speaking ROS 2's conventions (see the module docstring).
    Readers and writers are made once per (topic, role) and kept until ``close()``."""

    def __init__(self, domain: int, types: RosTypes) -> None:
        if not 0 <= int(domain) <= 232:
            raise BridgeError("INVALID_DOMAIN", f"ROS_DOMAIN_ID {domain!r} is outside 0..232",
                              where="ros2://", fix="pick a domain id from 0 to 232 (ROS 2's "
                              "default is 0)")
        self.domain = int(domain)
        self.types = types
        try:
            self.dp = DomainParticipant(self.domain)
        except Exception as exc:
            raise BridgeError("DDS_UNAVAILABLE", f"Cyclone DDS could not join domain "
                              f"{domain}: {exc}", where=os.environ.get("CYCLONEDDS_URI", ""),
                              fix="check CYCLONEDDS_URI (docs/ros2.md has a loopback "
                              "configuration)") from exc
        self._topics: dict[str, Topic] = {}
        self._classes: dict[tuple[str, str], type] = {}
        self._closed = False

    def _topic(self, dds_topic: str, ros_type: str, decode: Callable[[bytes], Any]) -> Any:
        key = (dds_topic, ros_type)
        cls = self._classes.get(key)
        if cls is None:
            cls = self._classes[key] = _sample_class(self.types, ros_type, decode,
                                                     dds_topic.startswith(("rq/", "rr/")))
            self._topics[dds_topic] = Topic(self.dp, dds_topic, cls)
        return self._topics[dds_topic], cls

    # ----------------------------------------------------------------- topics

    def writer(self, ros_topic: str, ros_type: str, qos: str = "default") -> Callable[[Any], None]:
        """A function publishing messages of ``ros_type`` on ROS topic ``ros_topic``."""
        self.types.require(ros_type, where=ros_topic)
        topic, cls = self._topic(topic_name(ros_topic), ros_type,
                                 lambda b: self.types.deserialize(b, ros_type))
        w = DataWriter(self.dp, topic, qos=QOS[qos])

        def publish(message: Any) -> None:
            w.write(_wrap(cls, self.types.serialize(message, ros_type)))

        publish.writer = w  # type: ignore[attr-defined]
        return publish

    def reader(self, ros_topic: str, ros_type: str, qos: str = "default") -> DataReader:
        """A reader of ROS topic ``ros_topic``; ``take(N)`` returns rosbags messages."""
        self.types.require(ros_type, where=ros_topic)
        topic, _ = self._topic(topic_name(ros_topic), ros_type,
                               lambda b: self.types.deserialize(b, ros_type))
        return DataReader(self.dp, topic, qos=QOS[qos])

    # ----------------------------------------------------------------- services

    def _service_pair(self, service: str, srv_type: str, role: str) -> tuple[Any, Any, Any, Any]:
        req_t, rep_t = srv_type + "_Request", srv_type + "_Response"
        self.types.require(req_t, where=service)
        rq, rq_cls = self._topic(request_topic(service), req_t,
                                 lambda b: _unframe(b, self.types, req_t))
        rr, rr_cls = self._topic(reply_topic(service), rep_t,
                                 lambda b: _unframe(b, self.types, rep_t))
        qos = QOS["services"]
        if role == "client":
            return DataWriter(self.dp, rq, qos=qos), rq_cls, DataReader(self.dp, rr, qos=qos), rep_t
        return DataWriter(self.dp, rr, qos=qos), rr_cls, DataReader(self.dp, rq, qos=qos), req_t

    def service_client(self, service: str, srv_type: str) -> ServiceClient:
        return ServiceClient(self, service, srv_type)

    def service_server(self, service: str, srv_type: str) -> ServiceServer:
        return ServiceServer(self, service, srv_type)

    def close(self) -> None:
        """Delete the participant and everything made through it."""
        if self._closed:
            return
        self._closed = True
        self._topics.clear()
        self.dp.__del__()


def _frame(types: RosTypes, message: Any, ros_type: str, client_id: int, seq: int) -> bytes:
    body = types.serialize(message, ros_type)
    little = body[1] == 1
    header = struct.pack("<Qq" if little else ">Qq", client_id, seq)
    return body[:4] + header + body[4:]


def _unframe(data: bytes, types: RosTypes, ros_type: str) -> Request:
    if len(data) < 20:
        raise BridgeError("MALFORMED_SAMPLE", f"a {ros_type} sample of {len(data)} bytes is "
                          "shorter than the request header", where=ros_type,
                          fix="check that the peer speaks rmw_cyclonedds' service framing")
    little = data[1] == 1
    client_id, seq = struct.unpack("<Qq" if little else ">Qq", data[4:20])
    return Request(client_id, seq, types.deserialize(data[:4] + data[20:], ros_type))


class ServiceClient:
    """Sends requests of ``srv_type`` to ``service`` and takes the replies meant for it."""

    def __init__(self, participant: Participant, service: str, srv_type: str) -> None:
        self.service = service
        self.types = participant.types
        self._w, self._cls, self._r, _ = participant._service_pair(service, srv_type, "client")
        self._req_t = srv_type + "_Request"
        self.client_id = uuid.uuid4().int & 0xFFFF_FFFF_FFFF_FFFF
        self._seq = 0

    @property
    def ready(self) -> bool:
        """Whether a server's request reader and reply writer are matched."""
        return bool(self._w.get_matched_subscriptions()) and bool(
            self._r.get_matched_publications())

    def send(self, message: Any) -> int:
        """Send one request; returns its sequence number."""
        self._seq += 1
        self._w.write(_wrap(self._cls, _frame(self.types, message, self._req_t,
                                              self.client_id, self._seq)))
        return self._seq

    def replies(self) -> list[tuple[int, Any]]:
        """(sequence number, reply) for every reply to this client that arrived."""
        out = []
        for sample in self._r.take(64):
            if isinstance(sample, Request) and sample.client_id == self.client_id:
                out.append((sample.seq, sample.message))
        return out


class ServiceServer:
    """Takes requests to ``service`` and sends the replies."""

    def __init__(self, participant: Participant, service: str, srv_type: str) -> None:
        self.service = service
        self.types = participant.types
        self._w, self._cls, self._r, _ = participant._service_pair(service, srv_type, "server")
        self._rep_t = srv_type + "_Response"

    def requests(self) -> list[Request]:
        return [s for s in self._r.take(64) if isinstance(s, Request)]

    def reply(self, request: Request, message: Any) -> None:
        self._w.write(_wrap(self._cls, _frame(self.types, message, self._rep_t,
                                              request.client_id, request.seq)))
