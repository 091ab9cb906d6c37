"""Fixtures for the shared-memory fast path: a prefix of its own per test, and no segment left
behind in /dev/shm afterwards."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from runtime_bridge.genmanip.shm import ShmConfig

SHM_DIR = "/dev/shm"


def segments(prefix: str) -> list[str]:
    return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(f"{prefix}-"))


@pytest.fixture
def shm_config() -> Iterator[ShmConfig]:
    if not os.path.isdir(SHM_DIR):
        pytest.skip("no /dev/shm on this system")
    config = ShmConfig(prefix=f"hbttest{secrets.token_hex(4)}", slots=3, max_sessions=4)
    yield config
    left = segments(config.prefix)
    for name in left:  # do not pollute the next run, then fail
        os.unlink(os.path.join(SHM_DIR, name))
    assert not left, f"the test left shared-memory segments behind: {left}"
