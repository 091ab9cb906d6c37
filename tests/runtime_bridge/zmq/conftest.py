"""ZeroMQ test fixtures in pyzmq's style: a fresh context per test that must terminate (so no
socket was left open), raw sockets closed with LINGER 0, random ports; servers, bridges and
fault proxies closed at teardown."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zmq

from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import HostConfig
from runtime_bridge.testing.fault_proxy import FaultProxy
from runtime_bridge.zmq import RuntimeServer, RuntimeServerConfig, ZmqBridge, ZmqBridgeConfig
from tests.runtime_bridge import executors

LOOPBACK = "tcp://127.0.0.1"


@pytest.fixture
def zctx(closing: Callable[..., Any]) -> zmq.Context:
    """A fresh context, terminated at teardown after everything the test made with it was
    closed (``closing`` closes the last made first); it must terminate, so no socket was left
    open."""
    ctx = zmq.Context()

    def terminate() -> None:
        t = threading.Thread(target=ctx.term, daemon=True)
        t.start()
        t.join(5.0)
        assert not t.is_alive(), "the zmq context did not terminate: a socket was left open"

    return closing(ctx, terminate)


@pytest.fixture
def raw_socket(zctx: zmq.Context, closing: Callable[..., Any]) -> Callable[..., zmq.Socket]:
    """Raw sockets for hostile-peer tests; each is closed with LINGER 0 at teardown."""

    def make(kind: int, connect: str | None = None) -> zmq.Socket:
        sock = closing(zctx.socket(kind), lambda: sock.close(0))
        sock.setsockopt(zmq.LINGER, 0)
        if connect:
            sock.connect(connect)
        return sock

    return make


@pytest.fixture
def start_server(zctx: zmq.Context, tmp_path: Path,
                 closing: Callable[..., Any]) -> Callable[..., RuntimeServer]:
    def start(*, journal: str | None = "runtime.db", lease_s: float | None = 2.0,
              dt: float = 0.01, **config: Any) -> RuntimeServer:
        server = RuntimeServer(
            KinematicBackend(dt=dt), executors.factory,
            RuntimeServerConfig(bind=f"{LOOPBACK}:*", telemetry=f"{LOOPBACK}:*",
                                journal=None if journal is None else str(tmp_path / journal),
                                host=HostConfig(lease_s=lease_s), **config),
            context=zctx)
        closing(server, server.stop)
        server.start()
        return server

    return start


@pytest.fixture
def make_bridge(zctx: zmq.Context, closing: Callable[..., Any]) -> Callable[..., ZmqBridge]:
    def make(endpoint: str, **config: Any) -> ZmqBridge:
        return closing(ZmqBridge(ZmqBridgeConfig(endpoint=endpoint, **config), context=zctx))

    return make


@pytest.fixture
def proxy(zctx: zmq.Context, closing: Callable[..., Any]) -> Callable[[str], FaultProxy]:
    """Start fault proxies in front of an endpoint; each is stopped at teardown."""

    def start(upstream: str) -> FaultProxy:
        p = FaultProxy(upstream, context=zctx)
        closing(p, p.stop)
        p.start()
        return p

    return start


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
