"""Fixtures for runtime tests: a backend, and fresh executor hosts on the test's clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_bt.clock import FakeClock
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import ExecutorHost, HostConfig
from runtime_bridge.host.record_log import LoggedRuntimeJournal
from tests.runtime_bridge import executors

DT = 1.0 / 30.0


@pytest.fixture(autouse=True)
def fresh_execution_counts() -> Iterator[None]:
    """The test executors count their starts per command id: from zero in every test."""
    executors.STARTS.clear()
    yield


@pytest.fixture
def backend() -> KinematicBackend:
    return KinematicBackend(dt=DT)


@pytest.fixture
def make_host(clock: FakeClock, backend: KinematicBackend, tmp_path: Path,
              closing: Callable[..., Any]) -> Callable[..., ExecutorHost]:
    """``make_host(journal=True, **HostConfig fields)``: a host over ``backend`` running the
    test executors, journaling to ``runtime.db`` in the test's directory."""

    def make(*, journal: bool = True, **config: Any) -> ExecutorHost:
        j = LoggedRuntimeJournal(tmp_path / "runtime.db") if journal else None
        return closing(ExecutorHost(backend, executors.factory, journal=j, clock=clock,
                                    config=HostConfig(**config)))

    return make
