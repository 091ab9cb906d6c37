"""ZeroMQ test fixtures in pyzmq's style: a fresh context per test that must terminate (so no
socket was left open), raw sockets tracked and closed with LINGER 0, random ports."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
import zmq

from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import HostConfig
from runtime_bridge.testing.fault_proxy import FaultProxy
from runtime_bridge.zmq import RuntimeServer, RuntimeServerConfig, ZmqBridge, ZmqBridgeConfig
from tests.runtime_bridge import executors

LOOPBACK = "tcp://127.0.0.1"


@pytest.fixture
def zctx() -> Iterator[zmq.Context]:
    ctx = zmq.Context()
    yield ctx
    t = threading.Thread(target=ctx.term, daemon=True)
    t.start()
    t.join(5.0)
    assert not t.is_alive(), "the zmq context did not terminate: a socket was left open"


@pytest.fixture
def raw_socket(zctx: zmq.Context) -> Iterator[Callable[..., zmq.Socket]]:
    """Raw sockets for hostile-peer tests; each is closed with LINGER 0 at teardown."""
    made: list[zmq.Socket] = []

    def make(kind: int, connect: str | None = None) -> zmq.Socket:
        sock = zctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        made.append(sock)
        if connect:
            sock.connect(connect)
        return sock

    yield make
    for sock in made:
        sock.close(0)


@pytest.fixture
def start_server(zctx: zmq.Context, tmp_path) -> Iterator[Callable[..., RuntimeServer]]:
    servers: list[RuntimeServer] = []

    def start(*, journal: str | None = "runtime.db", lease_s: float | None = 2.0,
              dt: float = 0.01, **config: object) -> RuntimeServer:
        server = RuntimeServer(
            KinematicBackend(dt=dt), executors.factory,
            RuntimeServerConfig(bind=f"{LOOPBACK}:*", telemetry=f"{LOOPBACK}:*",
                                journal=None if journal is None else str(tmp_path / journal),
                                host=HostConfig(lease_s=lease_s), **config),  # type: ignore[arg-type]
            context=zctx)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def make_bridge(zctx: zmq.Context) -> Iterator[Callable[..., ZmqBridge]]:
    bridges: list[ZmqBridge] = []

    def make(endpoint: str, **config: object) -> ZmqBridge:
        bridge = ZmqBridge(ZmqBridgeConfig(endpoint=endpoint, **config),  # type: ignore[arg-type]
                           context=zctx)
        bridges.append(bridge)
        return bridge

    yield make
    for bridge in bridges:
        bridge.close()


@pytest.fixture
def proxy(zctx: zmq.Context) -> Iterator[Callable[[str], FaultProxy]]:
    """Start fault proxies in front of an endpoint; each is stopped at teardown."""
    proxies: list[FaultProxy] = []

    def start(upstream: str) -> FaultProxy:
        p = FaultProxy(upstream, context=zctx)
        p.start()
        proxies.append(p)
        return p

    yield start
    for p in proxies:
        p.stop()


@pytest.fixture
def faulty_link(start_server, make_bridge, proxy):  # type: ignore[no-untyped-def]
    """``faulty_link(server=None, **bridge_config)`` -> (server, fault proxy, bridge): a runtime
    server (a fresh one unless given) behind a fault proxy, and a bridge through the proxy,
    without telemetry unless ``telemetry`` is given."""

    def make(server: RuntimeServer | None = None, **bridge_config: object
             ) -> tuple[RuntimeServer, FaultProxy, ZmqBridge]:
        server = server or start_server()
        faults = proxy(server.endpoints["bind"])
        return server, faults, make_bridge(faults.endpoint, **{"telemetry": "", **bridge_config})

    return make
