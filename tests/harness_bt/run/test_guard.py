"""A node written outside harness-bt that raises ends FAILED (outcome ``NODE_ERROR``, not
retryable) with the traceback as evidence in the trace; the phase's failure transition
fires and the run ends as the task says, instead of the exception taking the run down."""

from __future__ import annotations

from typing import Any

import py_trees
import pytest
from py_trees.common import Status

from harness_bt import FakeClock, Final, Phase, Task, TaskRunner, on
from harness_bt.errors import DefinitionError
from harness_bt.run.guard import is_user_node
from harness_bt.run.why import why_not_done
from harness_bt.testing import FakeRuntime
from harness_bt.testing.example import example_skills


class Raises(py_trees.behaviour.Behaviour):
    """A user's node that raises in the stage it is told to (``never``: it succeeds)."""

    def __init__(self, name: str, stage: str) -> None:
        super().__init__(name)
        self.stage = stage

    def setup(self, **kwargs: Any) -> None:
        if self.stage == "setup":
            raise OSError("no such device")

    def initialise(self) -> None:
        if self.stage == "initialise":
            raise KeyError("calibration")

    def update(self) -> Status:
        if self.stage == "update":
            raise ValueError("the sensor is on fire")
        return Status.SUCCESS

    def terminate(self, new_status: Status) -> None:
        if self.stage == "terminate":
            raise RuntimeError("could not let go")


def run(stage: str) -> TaskRunner:
    task = Task("user_node", [
        Phase("work", lambda: py_trees.composites.Sequence("steps", memory=True, children=[
            Raises("mine", stage), py_trees.behaviours.Success("after")]),
            transitions=[on("succeeded", "done"), on("failed", "aborted_work")]),
        Final("done"), Final("aborted_work")])
    clock = FakeClock()
    runner = TaskRunner(task, bridge=FakeRuntime(clock), clock=clock, skills=example_skills(),
                        run_id="r")
    runner.run(max_ticks=20)
    return runner


@pytest.mark.parametrize(("stage", "exception"), [
    ("update", "ValueError: the sensor is on fire"),
    ("initialise", "KeyError: 'calibration'"),
])
def test_an_exception_in_a_user_node_fails_the_node_with_the_traceback_as_evidence(
        stage: str, exception: str) -> None:
    runner = run(stage)
    res = runner.result
    assert res is not None and (res.outcome, res.reason) == ("aborted", "aborted_work")
    (error,) = runner.trace.of_kind("node_error")
    assert error["data"]["node_path"] == "steps/mine"
    assert (error["data"]["stage"], error["data"]["exception"]) == (stage, exception)
    assert error["data"]["node_class"] == f"{__name__}.Raises"
    assert error["data"]["traceback"].startswith("Traceback (most recent call last):")
    assert f"in {stage}\n" in error["data"]["traceback"]
    (failure,) = runner.trace.of_kind("failure")
    outcome = failure["data"]["outcome"]
    assert (outcome["reason"], outcome["node_path"], outcome["retryable"]) == (
        "NODE_ERROR", "steps/mine", False)
    assert outcome["details"]["exception"] == exception
    changes = [e["data"]["changes"] for e in runner.trace.of_kind("status")]
    assert {"steps": ["INVALID", "FAILURE"], "steps/mine": ["INVALID", "FAILURE"]} in changes
    why = why_not_done(runner.trace.events, res.reason)
    assert why is not None and (why["phase"], why["reason"], why["node"]) == (
        "work", "NODE_ERROR", "steps/mine")


def test_an_exception_while_a_user_node_stops_is_traced_and_the_run_goes_on() -> None:
    runner = run("terminate")
    res = runner.result
    assert res is not None and (res.outcome, res.reason) == ("succeeded", "done")
    errors = runner.trace.of_kind("node_error")  # stopped after it succeeded, and at the exit
    assert errors and {(e["data"]["stage"], e["data"]["exception"]) for e in errors} == {
        ("terminate", "RuntimeError: could not let go")}
    assert not runner.trace.of_kind("failure")


def test_a_user_node_whose_setup_raises_refuses_the_run_before_it_starts() -> None:
    with pytest.raises(DefinitionError, match=r"phase work, node steps/mine: setup\(\) raised "
                       "OSError: no such device") as err:
        run("setup")
    assert err.value.code == "INVALID_TASK"


def test_only_nodes_from_outside_harness_bt_and_py_trees_are_guarded() -> None:
    assert is_user_node(Raises("x", "never"))
    assert not is_user_node(py_trees.behaviours.Success("s"))
    from harness_bt.nodes import Observe

    assert not is_user_node(Observe("look", ["cup"]))
