"""Fixtures for runtime tests: fresh hosts on a fake clock, and leak checks (no test may leave a
thread or a child process behind)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from harness_bt.clock import FakeClock
from runtime_bridge.host import ExecutorHost, HostConfig
from runtime_bridge.journal import SqliteRuntimeJournal
from runtime_bridge.kinematic import KinematicBackend
from tests.runtime_bridge import executors

DT = 1.0 / 30.0


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    executors.STARTS.clear()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not extra, f"the test left threads running: {extra}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(100.0)


@pytest.fixture
def backend() -> KinematicBackend:
    return KinematicBackend(dt=DT)


@pytest.fixture
def make_host(clock: FakeClock, backend: KinematicBackend, tmp_path):  # type: ignore[no-untyped-def]
    hosts: list[ExecutorHost] = []

    def make(*, journal: bool = True, **config: object) -> ExecutorHost:
        j = SqliteRuntimeJournal(tmp_path / "runtime.db") if journal else None
        host = ExecutorHost(backend, executors.factory, journal=j, clock=clock,
                            config=HostConfig(**config))  # type: ignore[arg-type]
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()
