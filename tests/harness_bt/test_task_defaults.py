"""A task's blackboard defaults are written (and traced) before the first tick; its
instruction travels in the structure."""

from __future__ import annotations

import pytest

from harness_bt import DefinitionError, FakeClock, Task
from harness_bt.authoring.neutral import task_from_dict
from harness_bt.testing.example import example_runtime
from tests.harness_bt.helpers import run_to_end, runner_for

DATA = {
    "name": "defaults", "instruction": "wait for the flag", "blackboard": {"flag": True},
    "phases": [
        {"id": "work", "tree": {"type": "wait_for", "name": "w", "key": "flag", "equals": True,
                                "timeout_s": 0.2},
         "transitions": [{"event": "succeeded", "target": "done"},
                         {"event": "failed", "target": "aborted_work"}]},
        {"id": "done", "kind": "final"}, {"id": "aborted_work", "kind": "final"}],
}


def test_blackboard_defaults_are_written_before_the_first_tick(clock: FakeClock) -> None:
    task = task_from_dict(DATA)
    structure = task.structure()
    assert (structure["instruction"], structure["blackboard"]) == ("wait for the flag",
                                                                   {"flag": True})
    runner = runner_for(task, clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "done"
    (write,) = runner.trace.of_kind("blackboard")
    assert (write["seq"], write["data"]) == (3, {"key": "flag", "writer": "task", "value": True})
    runner = runner_for(task_from_dict({**DATA, "blackboard": {}}), clock,
                        example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "aborted_work"


def test_defaults_are_copied_per_run_and_checked(clock: FakeClock) -> None:
    task = task_from_dict({**DATA, "blackboard": {"flag": True, "poses": [[0.0, 0.0, 0.0]]}})
    runner = runner_for(task, clock, example_runtime(clock))
    runner.tick()
    runner.blackboard["poses"][0].append(9.0)  # a run changing its copy
    assert task.blackboard == {"flag": True, "poses": [[0.0, 0.0, 0.0]]}
    with pytest.raises(DefinitionError, match="blackboard: expected a mapping"):
        task_from_dict({**DATA, "blackboard": ["flag"]})
    with pytest.raises(DefinitionError, match="need non-empty string keys"):
        Task("t", task_from_dict(DATA).phases, blackboard={"": 1})



def test_a_task_carries_its_scene_and_parameter_values() -> None:
    task = task_from_dict({**DATA, "scene": "pick_cube", "params": {"target": "red_cube"}})
    assert (task.scene, task.params) == ("pick_cube", {"target": "red_cube"})
    structure = task.structure()
    assert (structure["scene"], structure["params"]) == ("pick_cube", {"target": "red_cube"})
    plain = task_from_dict(DATA).structure()
    assert (plain["scene"], plain["params"]) == (None, {})
    with pytest.raises(DefinitionError, match=r"params \[''\] need non-empty string keys"):
        Task("t", task_from_dict(DATA).phases, params={"": 1})
