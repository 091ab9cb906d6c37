"""ROS 2 tests: every DDS participant stays on 127.0.0.1 (the loopback configuration), each
test on a domain of its own."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runtime_bridge.ros2.dds import LOOPBACK_CONFIG, Participant
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
