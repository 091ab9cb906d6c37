"""The flow decorators tick on the injected clock: timeout, delay, repeat, force_success,
force_failure, keep_running_until_failure (and wait_for 'when')."""

from __future__ import annotations

import py_trees

from harness_bt import FakeClock
from harness_bt.nodes import (
    Delay,
    ForceFailure,
    ForceSuccess,
    KeepRunningUntilFailure,
    Repeat,
    SkillAction,
    Timeout,
    WaitFor,
)
from harness_bt.testing.example import example_runtime
from tests.harness_bt.helpers import last_failure, one_phase, run_to_end, runner_for, tick_views


def test_timeout_halts_a_running_command_and_fails_with_its_reason(clock: FakeClock) -> None:
    tree = Timeout("limit", SkillAction("go", "navigate", params={"x_m": 1.0, "y_m": 0.0}),
                   seconds=0.12)
    runner = runner_for(one_phase(lambda: tree), clock, example_runtime(clock))
    views = tick_views(runner, clock, 4)
    assert [v[1].get("work") for v in views] == ["limit=R go=R", "limit=R go=R", "limit=R go=R",
                                                 None]
    assert last_failure(runner)["reason"] == "TIMEOUT"
    (cmd,) = runner.ledger.records()
    assert cmd.state.value in ("CANCELING", "CANCELED")  # the halt cancelled the command
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "aborted_failed"


def test_delay_waits_then_runs_its_child(clock: FakeClock) -> None:
    tree = Delay("later", py_trees.behaviours.Success("ok"), seconds=0.1)
    runner = runner_for(one_phase(lambda: tree), clock, example_runtime(clock))
    views = tick_views(runner, clock, 3)
    assert [v[1].get("work") for v in views] == ["later=R ok=-", "later=R ok=-", None]
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "done"


def test_repeat_counts_successes_and_keep_running_never_succeeds(clock: FakeClock) -> None:
    repeat = Repeat("thrice", py_trees.behaviours.Success("ok"), times=3)
    runner = runner_for(one_phase(lambda: repeat), clock, example_runtime(clock))
    views = run_to_end(runner, clock)
    assert len(views) == 3 and runner.result is not None and runner.result.reason == "done"
    keep = KeepRunningUntilFailure("loop", py_trees.behaviours.Success("ok"))
    runner = runner_for(one_phase(lambda: keep), clock, example_runtime(clock))
    assert [v[1]["work"] for v in tick_views(runner, clock, 3)] == ["loop=R ok=S"] * 3


def test_force_success_and_force_failure(clock: FakeClock) -> None:
    runner = runner_for(one_phase(lambda: ForceSuccess("fine", py_trees.behaviours.Failure("no"))),
                        clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "done"
    runner = runner_for(one_phase(lambda: ForceFailure("nope", py_trees.behaviours.Success("yes"))),
                        clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "aborted_failed"
    assert last_failure(runner)["reason"] == "FORCED_FAILURE"


def test_wait_for_when_reads_the_blackboard_and_the_world(clock: FakeClock) -> None:
    tree = py_trees.composites.Sequence("s", memory=True, children=[
        WaitFor("seen", when="exists(world.cup) and world.cup.confidence > 0.5"),
        WaitFor("never", when="bb.flag == true", timeout_s=0.1)])
    runner = runner_for(one_phase(lambda: tree), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "aborted_failed"
    assert last_failure(runner)["node_path"] == "s/never"
    assert last_failure(runner)["reason"] == "TIMEOUT"
    assert WaitFor("w", when="not exists(world.cup)").params() == {
        "when": "not exists(world.cup)"}
