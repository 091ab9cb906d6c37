"""Observe, Check, WaitFor, Evaluate, Retry and recover(), each through a one-phase task."""

from __future__ import annotations

import random

import py_trees
import pytest

from harness_bt import Backoff, DefinitionError, FakeClock, TaskBudget
from harness_bt.nodes import Check, Evaluate, Observe, Retry, SkillAction, WaitFor, recover
from harness_bt.testing import Script
from harness_bt.testing.example import example_runtime, grasp_effect, slip_effect
from tests.harness_bt.helpers import last_failure, one_phase, run_to_end, runner_for


def seq(*children: py_trees.behaviour.Behaviour) -> py_trees.behaviour.Behaviour:
    return py_trees.composites.Sequence("s", memory=True, children=list(children))


def run(tree_factory, rt=None, clock=None, **kw):  # type: ignore[no-untyped-def]
    clock = clock or FakeClock()
    rt = rt or example_runtime(clock)
    runner = runner_for(one_phase(tree_factory, budget=kw.pop("budget", None)), clock, rt, **kw)
    run_to_end(runner, clock)
    assert runner.result is not None
    return runner


def test_observe_records_a_snapshot_of_confident_fresh_objects() -> None:
    runner = run(lambda: Observe("look", ["cup", "tray"], record="plan"))
    assert runner.result.reason == "done"  # type: ignore[union-attr]
    snap = runner.blackboard["plan"]
    assert set(snap.objects) == {"cup", "tray"} and snap.premises() == {"cup": 1, "tray": 1}


def test_observe_fails_naming_what_was_not_seen() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.scene.occlude("cup", 0.3)
    runner = run(lambda: Observe("look", ["cup", "mug"], timeout_s=0.2), rt, clock)
    out = last_failure(runner)
    assert out["reason"] == "NOT_OBSERVED"
    assert out["details"]["missing"] == {"cup": "confidence 0.30 < 0.50", "mug": "never seen"}


@pytest.mark.parametrize(("kw", "reason"), [
    ({"objects": ["mug"]}, "UNKNOWN_OBJECT"),
    ({"objects": ["cup"], "min_confidence": 1.1}, "LOW_CONFIDENCE"),
    ({"relations": ["cup on tray"]}, "RELATION_FALSE"),
])
def test_check_fails_with_a_named_reason(kw: dict, reason: str) -> None:
    runner = run(lambda: seq(Observe("look", ["cup"]), Check("pre", **kw)))
    assert last_failure(runner)["reason"] == reason


def test_check_fails_on_stale_objects_and_on_a_stale_plan() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.at(0.2, lambda scene: scene.move("cup", [0.6, 0.0, 0.05]))
    runner = run(lambda: seq(Observe("look", ["cup"], record="plan"),
                             WaitFor("pause", seconds=0.3),
                             Check("still", ["cup"], snapshot="plan")), rt, clock)
    out = last_failure(runner)
    assert out["reason"] == "STALE_PLAN"
    assert "cup changed: version 1 -> 2" in out["details"]["detail"]
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.observe = False
    runner = run(lambda: Check("fresh", ["cup"]), rt, clock)
    assert last_failure(runner)["reason"] == "UNKNOWN_OBJECT"


def test_wait_for_key_value_and_timeout() -> None:
    runner = run(lambda: WaitFor("w", key="go", timeout_s=0.2))
    assert last_failure(runner)["reason"] == "TIMEOUT"
    clock = FakeClock()
    rt = example_runtime(clock)

    def setter(ctx):  # type: ignore[no-untyped-def]
        ctx.blackboard.set("go", 3)
        return True

    runner = run(lambda: seq(WaitFor("set", condition=setter), WaitFor("w", key="go", equals=3)),
                 rt, clock)
    assert runner.result.reason == "done"  # type: ignore[union-attr]
    with pytest.raises(DefinitionError, match="exactly one of key, seconds, condition"):
        WaitFor("bad", key="a", seconds=1.0)
    with pytest.raises(DefinitionError, match="timeout_s=-1 must be positive"):
        WaitFor("bad", key="a", timeout_s=-1)


def test_evaluate_without_a_command_fails_and_waits_for_control_done() -> None:
    runner = run(lambda: Evaluate("judge", "nothing"))
    assert (last_failure(runner)["reason"], last_failure(runner)["retryable"]) == (
        "NO_COMMAND", False)


def test_evaluate_gives_up_as_unknown_without_a_new_observation() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)

    def stop_observing(scene, cmd):  # type: ignore[no-untyped-def]
        grasp_effect(scene, cmd)
        rt.observe = False

    rt.script("grasp", Script(duration_s=0.1, effect=stop_observing))
    runner = run(lambda: seq(SkillAction("close", "grasp", params={"object_id": "cup"},
                                         output="g"),
                             Evaluate("judge", "g", observation_timeout_s=0.2)), rt, clock)
    out = last_failure(runner)
    assert (out["kind"], out["reason"]) == ("unknown", "NO_OBSERVATION")
    assert runner.result.reason == "aborted_unknown"  # type: ignore[union-attr]
    assert runner.ledger.get("r/work.1/s/close#1").state.value == "UNKNOWN"


def test_retry_backoff_is_seeded_and_draws_on_the_task_budget() -> None:
    def tree():  # type: ignore[no-untyped-def]
        return Retry("again", SkillAction("go", "navigate", params={"x_m": 1, "y_m": 0}),
                     attempts=3, backoff=Backoff(0.2, 1.0))

    delays = []
    for _ in range(2):
        clock = FakeClock()
        rt = example_runtime(clock)
        rt.script("navigate", Script(outcome="aborted", reason="BLOCKED"))
        runner = run(tree, rt, clock, seed=7)
        delays.append([e["data"]["delay_s"] for e in runner.trace.of_kind("budget")])
        assert runner.result.reason == "aborted_budget"  # type: ignore[union-attr]
        assert last_failure(runner)["reason"] == "ATTEMPTS_EXHAUSTED"
    assert delays[0] == delays[1] and len(delays[0]) == 2
    rng = random.Random("7/work/again")
    assert delays[0] == [Backoff(0.2, 1.0).delay(1, rng), Backoff(0.2, 1.0).delay(2, rng)]
    assert 0 <= delays[0][0] <= 0.2 and 0 <= delays[0][1] <= 0.4


def test_retry_passes_through_failures_that_are_not_retryable() -> None:
    tree = lambda: Retry("again", SkillAction("go", "navigate", params={"x_m": "?"}),  # noqa: E731
                         attempts=3)
    runner = run(tree)
    assert last_failure(runner)["reason"] == "INVALID_PARAMS"
    assert runner.trace.of_kind("budget") == []
    with pytest.raises(DefinitionError, match="retry_on"):
        Retry("r", py_trees.behaviours.Success("s"), retry_on=["oops"])


def test_task_time_left_smaller_than_the_backoff_refuses_the_retry() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(outcome="aborted", reason="BLOCKED", duration_s=0.9))
    tree = lambda: Retry("again", SkillAction("go", "navigate", params={"x_m": 1, "y_m": 0}),  # noqa: E731
                         attempts=3, backoff=Backoff(5.0, 5.0))
    runner = run(tree, rt, clock, budget=TaskBudget(max_time_s=1.2), seed=0)  # draws 1.54 s
    (draw,) = runner.trace.of_kind("budget")
    assert draw["data"]["granted"] is False
    assert draw["data"]["refused"] == "TASK_TIME_EXHAUSTED"
    assert draw["data"]["delay_s"] > draw["data"]["time_left_s"]
    out = last_failure(runner)
    assert (out["kind"], out["reason"], out["cause"]["reason"]) == (
        "budget_exhausted", "TASK_TIME_EXHAUSTED", "BLOCKED")
    assert runner.result.retries == 0  # type: ignore[union-attr]
    assert runner.result.reason == "aborted_budget"  # type: ignore[union-attr]


def _grasp_then_judge() -> py_trees.behaviour.Behaviour:
    return seq(SkillAction("close", "grasp", params={"object_id": "cup"}, output="g"),
               Evaluate("judge", "g"))


def test_recover_runs_the_attempt_again_after_a_successful_recovery() -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(effect=slip_effect), Script(effect=grasp_effect)])
    recovery = SkillAction("open", "release", params={"object_id": "cup"}, output="rel")
    runner = run(lambda: recover(_grasp_then_judge(), seq_named("fix", recovery,
                                                                Evaluate("opened", "rel")),
                                 budget=2), rt, clock)
    assert runner.result.reason == "done"  # type: ignore[union-attr]
    assert runner.result.recoveries == 1 and rt.starts["grasp"] == 2  # type: ignore[union-attr]


def seq_named(name: str, *children: py_trees.behaviour.Behaviour) -> py_trees.behaviour.Behaviour:
    return py_trees.composites.Sequence(name, memory=True, children=list(children))


def test_a_successful_recovery_never_makes_the_branch_succeed() -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(effect=slip_effect)])
    runner = run(lambda: recover(_grasp_then_judge(), py_trees.behaviours.Success("fine"),
                                 budget=3), rt, clock)
    assert runner.result.reason == "aborted_budget"  # type: ignore[union-attr]
    out = last_failure(runner)
    assert out["reason"] == "ATTEMPTS_EXHAUSTED"
    assert out["cause"]["reason"] == "RECOVERED"
    assert rt.starts["grasp"] == 3 and runner.result.recoveries == 2  # type: ignore[union-attr]


def test_a_failed_recovery_ends_the_branch_and_unknown_is_not_recovered() -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(effect=slip_effect)])
    runner = run(lambda: recover(_grasp_then_judge(), py_trees.behaviours.Failure("broken")),
                 rt, clock)
    out = last_failure(runner)
    assert (out["kind"], out["reason"], out["retryable"]) == ("failed", "RECOVERY_FAILED", False)
    assert rt.starts["grasp"] == 1
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(effect=lambda s, c: (grasp_effect(s, c),
                                                                   s.occlude("cup")))])
    runner = run(lambda: recover(_grasp_then_judge(), py_trees.behaviours.Success("fine")),
                 rt, clock)
    assert runner.result.reason == "aborted_unknown"  # type: ignore[union-attr]
    assert runner.result.recoveries == 0 and rt.starts["grasp"] == 1  # type: ignore[union-attr]


def test_evaluate_ignores_observations_taken_before_the_control_done_step() -> None:
    import dataclasses

    from harness_bt.testing import FakeRuntime

    class LaggingCamera(FakeRuntime):
        def observation(self):  # type: ignore[no-untyped-def]
            return dataclasses.replace(super().observation(), timestep=self.timestep - 3)

    clock = FakeClock()
    rt = LaggingCamera(clock, scene=example_runtime(clock).scene)
    rt.script("grasp", Script(duration_s=0.1, effect=grasp_effect))
    runner = run(lambda: seq(SkillAction("close", "grasp", params={"object_id": "cup"},
                                         output="g"), Evaluate("judge", "g")), rt, clock)
    (verdict,) = runner.trace.of_kind("verdict")
    done = next(e for e in runner.ledger.get("r/work.1/s/close#1").events
                if e.op == "event:control_done")
    step = runner.context.control_done_step["r/work.1/s/close#1"]
    assert verdict["data"]["timestep"] >= step
    assert verdict["mono"] > done.mono  # it waited for the camera to catch up
    assert verdict["data"]["verdict"] == "SUCCEEDED"
