"""ROS 2 tests: every DDS participant stays on 127.0.0.1 (the loopback configuration), each
test on a domain of its own; every Zenoh session listens and connects on 127.0.0.1 only (no
multicast scouting), through a Zenoh router of the test's own on a free port (the topology
rmw_zenoh runs: sessions find each other through a router)."""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runtime_bridge.ros2.dds import LOOPBACK_CONFIG, Participant
from runtime_bridge.ros2.transport import Transport
from runtime_bridge.ros2.types import RosTypes

os.environ["CYCLONEDDS_URI"] = LOOPBACK_CONFIG  # before any participant of this process

_DOMAINS = itertools.count(120 + os.getpid() % 60)


@pytest.fixture
def domain() -> int:
    return next(_DOMAINS) % 233


@pytest.fixture
def types() -> RosTypes:
    return RosTypes()


@pytest.fixture
def participant(domain: int, types: RosTypes,
                closing: Callable[..., Any]) -> Iterator[Callable[[], Participant]]:
    """``participant()``: a new participant on the test's domain, deleted at teardown."""
    yield lambda: closing(Participant(domain, types))


def free_endpoint() -> str:
    """A Zenoh TCP endpoint on 127.0.0.1 whose port was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp/127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def zenoh_router(closing: Callable[..., Any]) -> str:
    """A Zenoh router listening on a free loopback port for the test; its endpoint."""
    import zenoh

    from runtime_bridge.ros2.zenoh_transport import ZenohEndpoints

    endpoint = free_endpoint()
    closing(zenoh.open(ZenohEndpoints(listen=(endpoint,), mode="router").config()))
    return endpoint


@pytest.fixture(params=["dds", "zenoh"])
def transport(request: pytest.FixtureRequest, domain: int, types: RosTypes,
              closing: Callable[..., Any]) -> Callable[[], Transport]:
    """``transport()``: a new DDS participant, or a new ROS 2 node on one Zenoh session of the
    test's (as rmw_zenoh puts the nodes of one process on one session, which delivers between
    them at once, so the fault table needs no waiting), on the test's domain; closed at
    teardown. A test taking it runs on both. Zenoh across sessions and processes:
    test_zenoh_wire.py, test_end_to_end.py."""
    if request.param == "dds":
        return lambda: closing(Participant(domain, types))
    import zenoh

    from runtime_bridge.ros2.zenoh_transport import ZenohEndpoints, ZenohSession

    endpoints = ZenohEndpoints()
    shared = closing(zenoh.open(endpoints.config()))
    return lambda: closing(ZenohSession(domain, types, endpoints, session=shared))
