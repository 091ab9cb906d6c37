from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness_bt.ledger import Command, Ledger


def make_command(command_id: str = "nav-1", **overrides: Any) -> Command:
    fields: dict[str, Any] = dict(
        command_id=command_id,
        task_id="t1",
        robot_id="robot-01",
        skill="navigate_to_pose",
        params={"x_m": 1.6, "y_m": 0.5, "frame_id": "map"},
        resources=("base",),
        world_version=7,
        start_within_ms=500,
        execution_timeout_ms=10_000,
    )
    fields.update(overrides)
    return Command(**fields)


@pytest.fixture
def cmd() -> Callable[..., Command]:
    return make_command


@pytest.fixture
def ledger() -> Ledger:
    led = Ledger(wall_clock=lambda: 1_700_000_000.0)
    led.world_version = 7
    return led


@pytest.fixture
def journal_path(tmp_path):
    return tmp_path / "run.db"
