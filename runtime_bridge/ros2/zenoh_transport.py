"""ROS 2 topics and services over Zenoh (the ``eclipse-zenoh`` wheel), as rmw_zenoh maps them.

Why rmw_zenoh's conventions and not zenoh-bridge-ros2dds's: the bridge is a ROS 2 node of its
own, so it should look like one on the wire; rmw_zenoh is the ROS 2 middleware whose peers are
plain Zenoh sessions (no DDS behind), and its key expressions carry the domain and the type,
so two robots on one router stay apart. docs/ros2.md gives the sources, and what could not
be checked against a real rmw_zenoh peer.

- A topic ``/ns/name`` of type ``pkg/msg/T`` is the key expression
  ``<domain>/ns/name/pkg::msg::dds_::T_/<type hash>`` (rmw_zenoh ``liveliness_utils.cpp``,
  ``TopicInfo``: domain id, the name without its leading and trailing ``/``, the DDS type name,
  the type hash). The type hash is :data:`TYPE_HASH` (``TypeHashNotSupported``, what rmw_zenoh
  writes where the type hash is not known, as on Humble): no RIHS01 hash is computed here.
- Payloads are CDR (XCDR1, little-endian, the 4-byte encapsulation header) made by
  ``rosbags``, as rmw_zenoh sends them ("Serialization/Deserialization" in its design.md).
- Every put, query and reply carries rmw_zenoh's attachment: the sequence number (int64), the
  source timestamp (int64, ns) and the source GID (16 bytes), in Zenoh's serialization format
  (``zenoh.ext.z_serialize``; rmw_zenoh ``attachment_helpers.cpp``). A service reply echoes the
  request's sequence number and the client's GID; a client keeps the replies with its own
  sequence numbers.
- Services are queryables on the service's key expression (``pkg::srv::dds_::S_``,
  ``pkg::action::dds_::A_SendGoal_`` ...); a request is a ``get`` with the request as payload.
- Discovery is by liveliness tokens ``@ros2_lv/<domain>/<zid>/<nid>/<id>/<MP|MS|SS|SC|NN>/
  <enclave>/<namespace>/<node>/<name>/<type>/<hash>/<qos>`` with ``/`` in names mangled to
  ``%``; "matched" means a live token of the other side (a publisher's ``MP``, a service's
  ``SS``) is there; a closed or killed session's tokens go away with it.
- Durability: a transient-local topic (``/tf_static``, an action's status) is an advanced
  publisher with a cache of its depth and an advanced subscriber that asks late joiners for
  their history (the successor in Zenoh 1.x of the publication cache and querying subscriber
  that rmw_zenoh's design.md describes). Best-effort topics (images) drop under congestion.

Nothing here runs Python on Zenoh's threads: every subscriber, queryable and reply channel is
a Zenoh-side channel polled (``try_recv``) by its owner's thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import zenoh
import zenoh.ext as zext

from harness_bt.errors import BridgeError
from runtime_bridge.ros2.names import dds_type_name, validate_ros_name
from runtime_bridge.ros2.transport import Request
from runtime_bridge.ros2.types import RosTypes

__all__ = ["DEFAULT_ENDPOINT", "TYPE_HASH", "ZenohEndpoints", "ZenohSession", "key_expr",
           "liveliness_key", "make_attachment", "read_attachment"]

log = logging.getLogger(__name__)

#: Where rmw_zenoh's sessions find their router by default (its design.md, "Router").
DEFAULT_ENDPOINT = "tcp/127.0.0.1:7447"
#: The type hash of every key expression (see the module docstring).
TYPE_HASH = "TypeHashNotSupported"
#: How long a service request may wait for its reply (a get_result waits for the whole goal).
QUERY_TIMEOUT_S = 24 * 3600.0

#: (reliable, transient local, depth) of each QoS profile (the same profiles as dds.QOS).
_QOS = {"default": (True, False, 10), "sensor_data": (False, False, 5),
        "services": (True, False, 10), "action_status": (True, True, 1),
        "tf_static": (True, True, 1)}


@dataclass(frozen=True)
class ZenohEndpoints:
    """Where a session listens and what it connects to (Zenoh endpoints such as
    ``tcp/127.0.0.1:7447``); peer mode, no multicast scouting. ``ZENOH_SESSION_CONFIG_URI``
    (rmw_zenoh's variable) names a Zenoh configuration file to start from instead."""

    listen: tuple[str, ...] = ()
    connect: tuple[str, ...] = ()
    node: str = "harness"
    mode: str = "peer"

    def config(self) -> Any:
        path = os.environ.get("ZENOH_SESSION_CONFIG_URI")
        try:
            cfg = zenoh.Config.from_file(path) if path else zenoh.Config()
            if not path:
                cfg.insert_json5("mode", json.dumps(self.mode))
                cfg.insert_json5("scouting/multicast/enabled", "false")
            cfg.insert_json5("timestamping/enabled", "true")  # the advanced publishers' cache
            # no listen endpoint given: a loopback one on a free port, never every interface
            cfg.insert_json5("listen/endpoints", json.dumps(list(self.listen or (
                "tcp/127.0.0.1:0",))))
            if self.connect:
                cfg.insert_json5("connect/endpoints", json.dumps(list(self.connect)))
        except (zenoh.ZError, OSError, ValueError) as exc:
            raise BridgeError("ZENOH_CONFIG", f"the Zenoh configuration is invalid: {exc}",
                              where=path or f"listen={list(self.listen)} connect="
                              f"{list(self.connect)}", fix="write endpoints like "
                              "tcp/127.0.0.1:7447, or fix ZENOH_SESSION_CONFIG_URI") from exc
        return cfg


def key_expr(domain: int, ros_name: str, ros_type: str) -> str:
    """``0``, ``/joint_states``, ``sensor_msgs/msg/JointState`` ->
    ``0/joint_states/sensor_msgs::msg::dds_::JointState_/TypeHashNotSupported``."""
    name = validate_ros_name(ros_name).strip("/")
    return f"{int(domain)}/{name}/{dds_type_name(ros_type)}/{TYPE_HASH}"


def _mangle(name: str) -> str:
    return name.replace("/", "%") or "%"


def _qos_key(reliable: bool, durable: bool, depth: int) -> str:
    """rmw_zenoh's ``qos_to_keyexpr``: a field equal to rmw's default profile (reliable,
    volatile, keep last 10) is left empty; RELIABILITY_BEST_EFFORT is 2, DURABILITY_
    TRANSIENT_LOCAL 1."""
    return (f"{'' if reliable else 2}:{1 if durable else ''}:,{'' if depth == 10 else depth}"
            ":,:,:,,")


def liveliness_key(domain: int, zid: str, entity: tuple[int, str], node: str,
                   topic: tuple[str, str, str] | None = None) -> str:
    """The liveliness token of an entity: ``entity`` is (id, kind: NN MP MS SS SC) and
    ``topic`` (ROS name, ROS type, QoS key) for all but nodes."""
    parts = ["@ros2_lv", str(domain), zid, "0", str(entity[0]), entity[1], "%", "%",
             _mangle(node)]
    if topic is not None:
        parts += [_mangle(topic[0]), _mangle(dds_type_name(topic[1])), TYPE_HASH, topic[2]]
    return "/".join(parts)


def make_attachment(seq: int, timestamp_ns: int, gid: bytes) -> Any:
    """rmw_zenoh's attachment: int64 sequence number, int64 source timestamp, the GID."""
    return zext.z_serialize((zext.Int64(seq), zext.Int64(timestamp_ns), bytes(gid)))


def read_attachment(attachment: Any) -> tuple[int, int, bytes]:
    """(sequence number, timestamp, GID) of an attachment; BridgeError when malformed."""
    try:
        seq, stamp, gid = zext.z_deserialize(tuple[zext.Int64, zext.Int64, bytes], attachment)
    except (zext.ZDeserializeError, TypeError, ValueError) as exc:
        raise BridgeError("MALFORMED_ATTACHMENT", f"a Zenoh attachment is not rmw_zenoh's "
                          f"(sequence number, timestamp, GID): {exc}", where="attachment",
                          fix="check that the peer speaks rmw_zenoh's conventions") from exc
    return int(seq), int(stamp), bytes(gid)


def _payload(sample: Any) -> bytes:
    return bytes(sample.payload.to_bytes())


class ZenohSession:
    """A :class:`~runtime_bridge.ros2.transport.Transport` over one Zenoh session on
    ``domain`` (see the module docstring). Everything made through it is undeclared by
    ``close()``, which also closes the session it opened. Given an open ``session``, it is one
    more ROS 2 node on it (as rmw_zenoh puts every node of a context on one session): what it
    declares goes at ``close()``, the session stays its owner's."""

    def __init__(self, domain: int, types: RosTypes, endpoints: ZenohEndpoints,
                 session: Any = None) -> None:
        if not 0 <= int(domain) <= 232:
            raise BridgeError("INVALID_DOMAIN", f"ROS_DOMAIN_ID {domain!r} is outside 0..232",
                              where="zenoh://", fix="pick a domain id from 0 to 232")
        self.domain, self.types, self.endpoints = int(domain), types, endpoints
        self._owns_session = session is None
        try:
            self.session = zenoh.open(endpoints.config()) if session is None else session
        except zenoh.ZError as exc:
            raise BridgeError("ZENOH_UNAVAILABLE", f"a Zenoh session could not open: {exc}",
                              where=f"listen={list(endpoints.listen)} connect="
                              f"{list(endpoints.connect)}", fix="check the endpoints (is the "
                              "port free to listen on? is the address right?)") from exc
        self.zid = str(self.session.info.zid())
        self._ids = itertools.count(1)
        self._owned: list[Any] = []
        self._closed = False
        self._own(self.session.liveliness().declare_token(
            liveliness_key(self.domain, self.zid, (next(self._ids), "NN"), endpoints.node)))

    def _own(self, thing: Any) -> Any:
        self._owned.append(thing)
        return thing

    def token(self, kind: str, name: str, ros_type: str, qos: str) -> bytes:
        """Declare the liveliness token of a new entity; its 16-byte GID (a hash of the
        token, as rmw_zenoh derives it; rmw_zenoh uses XXH3-128, this SHA-256)."""
        reliable, durable, depth = _QOS[qos]
        key = liveliness_key(self.domain, self.zid, (next(self._ids), kind),
                             self.endpoints.node, (name, ros_type,
                                                   _qos_key(reliable, durable, depth)))
        self._own(self.session.liveliness().declare_token(key))
        return hashlib.sha256(key.encode()).digest()[:16]

    def watch(self, kind: str, name: str) -> _Peers:
        """The live tokens of ``kind`` entities on ROS name ``name``."""
        key = f"@ros2_lv/{self.domain}/*/*/*/{kind}/*/*/*/{_mangle(name)}/**"
        return _Peers(self._own(self.session.liveliness().declare_subscriber(key,
                                                                             history=True)))

    # ----------------------------------------------------------------- topics

    def writer(self, ros_topic: str, ros_type: str, qos: str = "default") -> Callable[[Any], None]:
        """A function publishing messages of ``ros_type`` on ``ros_topic``."""
        self.types.require(ros_type, where=ros_topic)
        reliable, durable, depth = _QOS[qos]
        key = key_expr(self.domain, ros_topic, ros_type)
        reliability = zenoh.Reliability.RELIABLE if reliable else zenoh.Reliability.BEST_EFFORT
        congestion = zenoh.CongestionControl.BLOCK if reliable else zenoh.CongestionControl.DROP
        pub = self._own(zext.declare_advanced_publisher(
            self.session, key, cache=zext.CacheConfig(depth), publisher_detection=True,
            reliability=reliability, congestion_control=congestion) if durable
            else self.session.declare_publisher(key, reliability=reliability,
                                                congestion_control=congestion))
        gid = self.token("MP", ros_topic, ros_type, qos)
        seq = itertools.count(1)

        def publish(message: Any) -> None:
            pub.put(self.types.serialize(message, ros_type),
                    attachment=make_attachment(next(seq), _now_ns(), gid))

        return publish

    def reader(self, ros_topic: str, ros_type: str, qos: str = "default") -> _Reader:
        """A subscription to ``ros_topic``; ``take(N)`` returns rosbags messages."""
        self.types.require(ros_type, where=ros_topic)
        _, durable, depth = _QOS[qos]
        key = key_expr(self.domain, ros_topic, ros_type)
        channel: Any = zenoh.handlers.RingChannel(max(depth, 64 if qos == "default"
                                                      else depth))
        sub = self._own(zext.declare_advanced_subscriber(
            self.session, key, channel, history=zext.HistoryConfig(
                detect_late_publishers=True, max_samples=depth)) if durable
            else self.session.declare_subscriber(key, channel))
        self.token("MS", ros_topic, ros_type, qos)
        return _Reader(sub, self.watch("MP", ros_topic), self.types, ros_type)

    # ----------------------------------------------------------------- services

    def service_client(self, service: str, srv_type: str) -> ZenohServiceClient:
        return ZenohServiceClient(self, service, srv_type)

    def service_server(self, service: str, srv_type: str) -> ZenohServiceServer:
        return ZenohServiceServer(self, service, srv_type)

    def close(self) -> None:
        """Undeclare everything and close the session (its tokens go with it)."""
        if self._closed:
            return
        self._closed = True
        for thing in reversed(self._owned):
            # ZError: already gone with its session; RuntimeError: in use by a thread that was
            # not stopped first (closing the session below undeclares it all the same)
            with contextlib.suppress(zenoh.ZError, RuntimeError):
                thing.undeclare()
        self._owned.clear()
        if self._owns_session:
            self.session.close()


def _now_ns() -> int:
    return time.time_ns()


class _Peers:
    """The live liveliness tokens under a key expression, kept up to date on each look."""

    def __init__(self, subscriber: Any) -> None:
        self._sub = subscriber
        self.alive: set[str] = set()
        self.appeared = 0

    def refresh(self) -> set[str]:
        while True:
            try:
                sample = self._sub.try_recv()
            except zenoh.ZError:
                break  # the session is closed
            if sample is None:
                break
            key = str(sample.key_expr)
            if sample.kind == zenoh.SampleKind.DELETE:
                self.alive.discard(key)
            elif key not in self.alive:
                self.alive.add(key)
                self.appeared += 1
        return self.alive


class _Reader:
    """A topic subscription meeting :class:`~runtime_bridge.ros2.transport.TopicReader`."""

    def __init__(self, subscriber: Any, publishers: _Peers, types: RosTypes,
                 ros_type: str) -> None:
        self._sub, self._publishers = subscriber, publishers
        self._types, self._type = types, ros_type
        self.malformed = 0

    def take(self, N: int = 1) -> list[Any]:
        out: list[Any] = []
        while len(out) < N:
            try:
                sample = self._sub.try_recv()
            except zenoh.ZError:
                break
            if sample is None:
                break
            try:
                out.append(self._types.deserialize(_payload(sample), self._type))
            except Exception as exc:  # a peer's bytes: count, say, go on
                self.malformed += 1
                log.warning("a %s sample on %s does not decode: %s", self._type,
                            sample.key_expr, exc)
        return out

    def get_matched_publications(self) -> list[str]:
        return sorted(self._publishers.refresh())


class ZenohServiceClient:
    """Sends requests of ``srv_type`` to ``service`` (Zenoh gets) and takes their replies."""

    def __init__(self, session: ZenohSession, service: str, srv_type: str) -> None:
        self.service, self._session = service, session
        self._req_t, self._rep_t = srv_type + "_Request", srv_type + "_Response"
        session.types.require(self._req_t, where=service)
        self._key = key_expr(session.domain, service, srv_type)
        self._gid = session.token("SC", service, srv_type, "services")
        self.client_id = int.from_bytes(self._gid[:8], "little")
        self._servers = session.watch("SS", service)
        self._pending: list[tuple[int, Any]] = []
        self._seq = 0

    @property
    def ready(self) -> bool:
        return bool(self._servers.refresh())

    def send(self, message: Any) -> int:
        self._seq += 1
        handler = self._session.session.get(
            self._key, payload=self._session.types.serialize(message, self._req_t),
            attachment=make_attachment(self._seq, _now_ns(), self._gid),
            target=zenoh.QueryTarget.ALL_COMPLETE, timeout=QUERY_TIMEOUT_S)
        self._pending.append((self._seq, handler))
        return self._seq

    def replies(self) -> list[tuple[int, Any]]:
        out: list[tuple[int, Any]] = []
        still: list[tuple[int, Any]] = []
        for seq, handler in self._pending:
            done = False
            while True:
                try:
                    reply = handler.try_recv()
                except zenoh.ZError:
                    done = True  # every replier finished (or the query timed out)
                    break
                if reply is None:
                    break
                sample = reply.ok
                if sample is None:
                    log.warning("%s answered an error to request %d", self.service, seq)
                    continue
                try:
                    got_seq = read_attachment(sample.attachment)[0] \
                        if sample.attachment is not None else seq
                    out.append((got_seq, self._session.types.deserialize(_payload(sample),
                                                                         self._rep_t)))
                except Exception as exc:
                    log.warning("a reply of %s does not decode: %s", self.service, exc)
            if not done:
                still.append((seq, handler))
        self._pending = still
        return out


class ZenohServiceServer:
    """Answers requests to ``service`` (a queryable on its key expression)."""

    def __init__(self, session: ZenohSession, service: str, srv_type: str) -> None:
        self.service, self._session = service, session
        self._req_t, self._rep_t = srv_type + "_Request", srv_type + "_Response"
        session.types.require(self._req_t, where=service)
        self._queryable = session._own(session.session.declare_queryable(
            key_expr(session.domain, service, srv_type), complete=True))
        self._gid = session.token("SS", service, srv_type, "services")
        self.malformed = 0

    def requests(self) -> list[Request]:
        out: list[Request] = []
        while True:
            try:
                query = self._queryable.try_recv()
            except zenoh.ZError:
                break
            if query is None:
                break
            try:
                seq, _, gid = read_attachment(query.attachment)
                message = self._session.types.deserialize(bytes(query.payload.to_bytes()),
                                                          self._req_t)
            except Exception as exc:  # a request that cannot be answered: say why, drop it
                self.malformed += 1
                log.warning("a request to %s is malformed: %s", self.service, exc)
                query.drop()
                continue
            out.append(Request(int.from_bytes(gid[:8], "little"), seq, message,
                               sample_info=(query, gid)))
        return out

    def reply(self, request: Request, message: Any) -> None:
        query, gid = request.sample_info
        try:
            query.reply(query.key_expr, self._session.types.serialize(message, self._rep_t),
                        attachment=make_attachment(request.seq, _now_ns(), gid))
        finally:
            query.drop()
