"""A run resumed after a crash, from the durable ledger: nothing done is done twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt import FakeClock, Ledger, TaskRunner
from harness_bt.ledger import CommandState
from harness_bt.run.settings import RunParts
from harness_bt.testing import Script
from harness_bt.testing.example import (
    example_runtime,
    example_skills,
    fetch_cup_task,
    grasp_effect,
)
from tests.harness_bt.helpers import run_to_end

CLOSE = "r1/grasp.1/pick/steps/close#1"


@pytest.mark.parametrize("cup_moved", [False, True])
def test_a_resumed_run_reconciles_and_never_repeats_a_command(tmp_path: Path,
                                                              cup_moved: bool) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    journal = tmp_path / "run.db"
    ledger = Ledger.open(journal, wall_clock=clock.wall, now=clock.monotonic())
    first = TaskRunner(
        fetch_cup_task(),
        bridge=rt,
        clock=clock,
        skills=example_skills(),
        run_id="r1",
        parts=RunParts(ledger=ledger),
    )
    while not (CLOSE in ledger and ledger.get(CLOSE).state is CommandState.RUNNING):
        first.tick()
        clock.advance(0.05)
    first.close()
    ledger.close()  # the harness dies here; the runtime goes on and finishes the grasp
    clock.advance(1.0)
    if cup_moved:  # the re-plan differs from the journaled commands: their ids still stand
        rt.scene.move("cup", [0.53, 0.0, 0.05])

    ledger = Ledger.open(journal, wall_clock=clock.wall, now=clock.monotonic())
    assert ledger.restarted == [CLOSE]
    assert ledger.get(CLOSE).state is CommandState.UNKNOWN
    again = TaskRunner(
        fetch_cup_task(),
        bridge=rt,
        clock=clock,
        skills=example_skills(),
        run_id="r1",
        parts=RunParts(ledger=ledger),
    )
    run_to_end(again, clock)
    res = again.result
    assert res is not None and res.succeeded
    assert rt.starts == {"navigate": 1, "align": 1, "approach": 1, "grasp": 1, "place": 1}
    assert len(set(rt.dispatch_calls)) == len(rt.received) == 5
    assert [e["data"]["open"] for e in again.trace.of_kind("resumed")] == [{CLOSE: "UNKNOWN"}]
    close = ledger.get(CLOSE)
    states = [h.state_after.value for h in close.events if h.state_before is not h.state_after]
    assert states[-4:] == ["RUNNING", "UNKNOWN", "RECONCILING", "SUCCEEDED"]
    assert close.control_done_seen  # learnt from the runtime's record while reconciling
    adopted = [e["command_id"] for e in again.trace.of_kind("adopted")]
    assert adopted == ([
        "r1/grasp.1/pick/steps/align/align.act#1",
        "r1/grasp.1/pick/steps/approach/approach.act#1"] if cup_moved else [])
    ledger.close()
