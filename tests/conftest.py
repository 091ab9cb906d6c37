"""Shared fixtures: fresh state per test, injected clocks, nothing leaked."""

from __future__ import annotations

import threading

import pytest

from harness_bt.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(autouse=True)
def no_leaked_threads():
    before = set(threading.enumerate())
    yield
    leaked = [
        t for t in threading.enumerate()
        if t not in before and t.is_alive() and not t.daemon
    ]
    for t in leaked:
        t.join(timeout=2.0)
    still = [t.name for t in leaked if t.is_alive()]
    assert not still, f"test leaked threads: {still}"
