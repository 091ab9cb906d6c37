"""Fixtures for runtime tests: fresh hosts on a fake clock, and leak checks (no test may leave a
thread, a child process or a shared-memory segment behind)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from harness_bt.clock import FakeClock
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import ExecutorHost, HostConfig
from runtime_bridge.host.journal_log import LoggedRuntimeJournal
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


@pytest.fixture(autouse=True)
def _no_leaked_segments() -> Iterator[None]:
    """A GenManip server of this process unlinks its /dev/shm segments when it stops."""
    yield
    mine = f"hbt-{os.getpid()}-"
    left = [n for n in os.listdir("/dev/shm") if n.startswith(mine)] if os.path.isdir(
        "/dev/shm") else []
    assert not left, f"the test left shared-memory segments behind: {left}"


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
        j = LoggedRuntimeJournal(tmp_path / "runtime.db") if journal else None
        host = ExecutorHost(backend, executors.factory, journal=j, clock=clock,
                            config=HostConfig(**config))  # type: ignore[arg-type]
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()
