"""SkillAction: planning, dispatch, the ledger-state mapping, halting, deduplication."""

from __future__ import annotations

import py_trees
import pytest

from harness_bt import DefinitionError, FakeClock, Final, Ledger, Parallel, Phase, Task, on
from harness_bt.ledger import CommandState
from harness_bt.nodes import SkillAction, WaitFor
from harness_bt.testing import Script
from harness_bt.testing.example import example_runtime
from tests.harness_bt.helpers import last_failure, one_phase, run_to_end, runner_for

NAV = {"x_m": 1.0, "y_m": 0.0}


def nav(name: str = "go", **kw: object) -> SkillAction:
    return SkillAction(name, "navigate", params=kw.pop("params", NAV), **kw)  # type: ignore[arg-type]


def test_success_means_control_done_not_a_verdict() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    runner = runner_for(one_phase(lambda: nav()), clock, rt)
    statuses = []
    for _ in range(12):
        runner.tick()
        statuses.append(runner.status_map().get("work", {}).get("go"))
        clock.advance(0.05)
    assert statuses[:8] == ["RUNNING"] * 7 + [None]  # SUCCESS at the 8th tick ends the phase
    rec = runner.ledger.get("r/work.1/go#1")
    # nobody judged it: the phase exit closed it instead of leaving it EVALUATING
    assert (rec.state, rec.reason) == (CommandState.CANCELED, "CANCELED_AFTER_CONTROL_DONE")
    assert runner.result is not None and runner.result.reason == "done"
    assert runner.ledger.held_resources() == {}


def test_halt_while_running_cancels_and_holds_the_resource_until_stop_confirmed() -> None:
    clock = FakeClock()
    rt = example_runtime(clock, stop_delay_s=0.2)
    rt.script("navigate", Script(outcome="hang", progress_every_s=0.05))
    task = Task("halt", [
        Parallel("both", [
            Phase("drive", lambda: nav()),
            Phase("watch", lambda: WaitFor("enough", seconds=0.3),
                  transitions=[on("succeeded", "done")]),
        ], transitions=[on("failed", "aborted_failed")]),
        Final("done"), Final("aborted_failed"),
    ])
    runner = runner_for(task, clock, rt)
    cid = "r/drive.1/go#1"
    for _ in range(8):
        runner.tick()
        clock.advance(0.05)
    assert runner.phase == "draining" and runner.configuration == ("done",)
    assert runner.ledger.get(cid).state is CommandState.CANCELING
    assert runner.ledger.held_resources() == {"base": cid}
    assert rt.cancel_calls == [cid]
    run_to_end(runner, clock)
    rec = runner.ledger.get(cid)
    assert (rec.state, rec.reason) == (CommandState.CANCELED, "STOP_CONFIRMED")
    assert runner.ledger.held_resources() == {}
    assert runner.result is not None
    (latency,) = runner.result.protection_latency_s
    assert latency is not None and 0.2 <= latency <= 0.25 + 1e-9  # stop delay, tick-quantised


def test_command_ids_are_deterministic_and_a_restarted_run_is_deduplicated() -> None:
    clock = FakeClock()
    ledger = Ledger(wall_clock=clock.wall)
    rt = example_runtime(clock)
    tree = lambda: py_trees.composites.Sequence("s", memory=True, children=[  # noqa: E731
        nav(), py_trees.behaviours.Running("hold")])
    first = runner_for(one_phase(tree), clock, rt, ledger=ledger)
    for _ in range(10):
        first.tick()
        clock.advance(0.05)
    assert [c.command_id for c in rt.received] == ["r/work.1/s/go#1"]
    assert ledger.get("r/work.1/s/go#1").state is CommandState.EVALUATING
    first.close()
    again = runner_for(one_phase(tree), clock, rt, ledger=ledger)  # same run id, same ledger
    for _ in range(3):
        again.tick()
        clock.advance(0.05)
    assert again.status_map()["work"]["s/go"] == "SUCCESS"
    assert rt.dispatch_calls == ["r/work.1/s/go#1"]  # not sent again, not executed again


def test_invalid_params_fail_without_a_command_and_are_not_retried() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    runner = runner_for(one_phase(lambda: nav(params={"x_m": "far"})), clock, rt)
    run_to_end(runner, clock)
    out = last_failure(runner)
    assert (out["reason"], out["retryable"]) == ("INVALID_PARAMS", False)
    assert {p["field"] for p in out["details"]["problems"]} == {"params.x_m", "params.y_m"}
    assert rt.received == [] and len(runner.ledger) == 0


def test_a_broken_physical_contract_names_the_problem() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    far = SkillAction("reach", "align", params={"target": [2.0, 0.0, 0.1]})
    runner = runner_for(one_phase(lambda: far), clock, rt)
    run_to_end(runner, clock)
    out = last_failure(runner)
    assert out["reason"] == "CONTRACT_VIOLATION"
    assert out["details"]["problems"][0]["message"] == "outside the arm's 0.85 m workspace"
    assert runner.result is not None and runner.result.reason == "aborted_failed"


def test_unknown_skill_is_a_definition_error_with_a_suggestion() -> None:
    clock = FakeClock()
    with pytest.raises(DefinitionError, match=r"unknown skill 'navigat'.*did you mean 'navigate'"):
        runner_for(one_phase(lambda: SkillAction("go", "navigat")), clock, example_runtime(clock))


def test_runtime_refusal_is_rejected_and_retryable() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(outcome="reject", reason="BUSY"))
    runner = runner_for(one_phase(lambda: nav()), clock, rt)
    run_to_end(runner, clock)
    rec = runner.ledger.get("r/work.1/go#1")
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "RUNTIME_REJECTED: BUSY")
    assert last_failure(runner)["retryable"] is True


def test_transport_failure_on_dispatch_is_resent_and_executed_once() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.fail_transport = 1  # the first call (the first poll) fails
    runner = runner_for(one_phase(lambda: nav()), clock, rt)
    runner.tick()  # poll fails; the leaf dispatches successfully
    rt.fail_transport = 1
    clock.advance(0.05)
    runner.tick()  # poll fails again
    run_to_end(runner, clock)
    assert rt.starts == {"navigate": 1}
    errors = runner.trace.of_kind("error")
    assert [e["data"]["where"] for e in errors] == ["poll", "poll"]


def test_silent_executor_is_stopped_after_its_start_deadline() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(outcome="silent"))
    runner = runner_for(one_phase(lambda: nav()), clock, rt)
    run_to_end(runner, clock)
    rec = runner.ledger.get("r/work.1/go#1")
    states = [h.state_after.value for h in rec.events if h.state_before is not h.state_after]
    assert states == ["ACCEPTED", "CANCELING", "CANCELED"]
    canceling = next(h for h in rec.events if h.state_after is CommandState.CANCELING)
    assert (canceling.op, canceling.reason) == ("tick", "START_UNCONFIRMED")
    assert rt.cancel_calls == ["r/work.1/go#1"]
    assert rt.starts == {}


def test_no_progress_cancels_and_fails_with_reason() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(outcome="hang", progress_every_s=0.5))
    runner = runner_for(one_phase(lambda: nav(no_progress_s=0.3)), clock, rt)
    run_to_end(runner, clock)
    out = last_failure(runner)
    assert (out["kind"], out["reason"]) == ("failed", "NO_PROGRESS")
    assert runner.ledger.get("r/work.1/go#1").state is CommandState.CANCELED


def test_breaker_opens_after_repeated_failures() -> None:
    from harness_bt.nodes import Retry

    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(outcome="aborted", reason="BLOCKED"))
    tree = lambda: Retry("again", nav(), attempts=5, backoff={"base_s": 0, "cap_s": 0})  # noqa: E731
    runner = runner_for(one_phase(tree), clock, rt)
    run_to_end(runner, clock)
    reasons = [e["data"]["outcome"]["reason"] for e in runner.trace.of_kind("failure")]
    assert reasons[:4] == ["BLOCKED", "BLOCKED", "BLOCKED", "CIRCUIT_OPEN:skill:navigate"]
    assert rt.starts == {"navigate": 3}
    assert [e["data"]["state_after"] for e in runner.trace.of_kind("breaker")] == ["OPEN"]


def test_constructor_refuses_a_param_given_twice() -> None:
    with pytest.raises(DefinitionError, match="params given twice"):
        SkillAction("x", "align", params={"target": [0, 0, 0]}, objects={"target": "cup"})


def test_an_executor_that_goes_silent_mid_run_is_caught_by_no_progress() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(outcome="hang", progress_every_s=0.1, silent_after_s=0.35))
    runner = runner_for(one_phase(lambda: nav()), clock, rt)
    run_to_end(runner, clock)
    rec = runner.ledger.get("r/work.1/go#1")
    progress = [h for h in rec.events if h.op == "event:progress"]
    assert len(progress) == 3  # 0.1, 0.2, 0.3 s; then silence
    out = last_failure(runner)
    assert out["reason"] == "NO_PROGRESS" and out["details"]["limit_s"] == 2.0
    assert out["details"]["silent_s"] == pytest.approx(2.05, abs=0.051)
    assert rec.state is CommandState.CANCELED  # the stop itself was still confirmed
