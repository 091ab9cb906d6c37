"""Faults as data on the harness's side: a fault the runtime reports is traced as it comes in,
attributed to the node and command it hit; an episode's faults say what the tree did after
them and whether it recovered; a run that asked for faults that never fired says so."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness_bt.clock import FakeClock
from harness_bt.events import FaultInjectedEvent, TraceKind, parse_event
from harness_bt.run.episodes import RunReport
from harness_bt.run.faults import fault_counts, fault_outcomes, faults_note, late_faults
from harness_bt.run.runner import TaskRunner
from harness_bt.run.settings import RunnerSettings
from harness_bt.runtime.bridge import PollResult
from harness_bt.runtime.episodes import RunOptions
from harness_bt.runtime.faults import FaultFired
from harness_bt.testing.example import (
    example_runtime,
    example_skills,
    fetch_cup_task,
    grasp_effect,
    slip_effect,
)
from harness_bt.testing.fake_runtime import FakeRuntime, Script
from tests.harness_bt.run.test_episodes import episode


class _SlipWhileGrasping:
    """The example's runtime, reporting a slip in the first poll while a grasp runs (with
    the commands running then, as the in-process runtime does)."""

    def __init__(self, inner: FakeRuntime) -> None:
        self.inner = inner
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def poll(self) -> PollResult:
        result = self.inner.poll()
        grasping = [c for c in self.inner.running() if "/close#" in c]
        if grasping and not self.fired:
            self.fired = True
            fault = FaultFired("slip", 42, 1.4, "0", {"object": "cup", "steps": 8},
                               tuple(self.inner.running()))
            return dataclasses.replace(result, faults=(fault,))
        return result


def _run(inner: FakeRuntime, clock: FakeClock) -> TaskRunner:
    runner = TaskRunner(fetch_cup_task(), bridge=_SlipWhileGrasping(inner), clock=clock,
                        skills=example_skills(), run_id="ex",
                        settings=RunnerSettings(tick_period_s=0.05))
    runner.run(max_ticks=2_000)
    runner.close()
    return runner


def test_a_fault_is_traced_as_it_comes_in_with_the_node_and_command_it_hit() -> None:
    clock = FakeClock()
    runner = _run(example_runtime(clock, grasps=[Script(effect=slip_effect),
                                                 Script(effect=grasp_effect)]), clock)
    events = [parse_event(e) for e in runner.trace.events]
    (fault,) = [e for e in events if isinstance(e, FaultInjectedEvent)]
    assert (fault.fault, fault.timestep, fault.sim_time_s, fault.worker_id) == ("slip", 42, 1.4,
                                                                                 "0")
    assert fault.command_id == "ex/grasp.1/pick/steps/close#1"
    assert (fault.phase, fault.node_path, fault.skill) == ("grasp", "pick/steps/close", "grasp")
    assert fault.details == {"object": "cup", "steps": 8}
    assert fault.running == ("ex/grasp.1/pick/steps/close#1",)
    # traced when it came in, while the run was going, not at its end
    assert fault.seq < next(e.seq for e in events if e.kind == TraceKind.RUN_END)
    assert fault.tick < runner.ticks


def test_the_slip_the_tree_recovered_from_is_counted_recovered() -> None:
    clock = FakeClock()
    runner = _run(example_runtime(clock, grasps=[Script(effect=slip_effect),
                                                 Script(effect=grasp_effect)]), clock)
    assert runner.result is not None and runner.result.outcome == "succeeded"
    (fault,) = fault_outcomes(runner.trace.events, succeeded=True, sim_success=None)
    assert fault["response"]["kind"] == "recovery"
    assert fault["response"]["node"] == "hold_cup/hold_cup.try/hold_cup.recovery/hold_cup.again"
    assert fault["response"]["after_s"] > 0
    assert (fault["recovered"], fault["tolerated"]) == (True, False)
    assert (fault["kind"], fault["node"], fault["command"]) == (
        "slip", "pick/steps/close", "ex/grasp.1/pick/steps/close#1")
    # the simulator judging the episode failed makes it no recovery
    (judged,) = fault_outcomes(runner.trace.events, succeeded=True, sim_success=False)
    assert (judged["recovered"], judged["tolerated"]) == (False, False)


def test_a_fault_the_tree_never_had_to_answer_is_tolerated() -> None:
    clock = FakeClock()
    runner = _run(example_runtime(clock), clock)  # the grasp holds: nothing to redo
    (fault,) = fault_outcomes(runner.trace.events, succeeded=True, sim_success=True)
    assert fault["response"] is None
    assert (fault["recovered"], fault["tolerated"]) == (False, True)


def _fault_event(seq: int, mono: float) -> dict[str, Any]:
    return {"seq": seq, "kind": "fault_injected", "mono": mono,
            "data": {"fault": "nudge" if seq == 1 else "slip", "timestep": seq * 10}}


def test_a_response_belongs_to_the_last_fault_before_it() -> None:
    events = [_fault_event(1, 1.0), _fault_event(2, 3.0),
              {"seq": 3, "kind": "budget", "mono": 3.5,
               "data": {"kind": "time", "granted": True}},  # not a redo
              {"seq": 4, "kind": "budget", "mono": 4.0,
               "data": {"kind": "retries", "granted": True, "node_path": "grasp/again"}}]
    nudge, slip = fault_outcomes(events, succeeded=False, sim_success=False)
    assert nudge["response"] is None
    assert slip["response"] == {"kind": "retry", "node": "grasp/again", "after_s": 1.0}
    assert [f["recovered"] or f["tolerated"] for f in (nudge, slip)] == [False, False]


def test_a_run_that_asked_for_faults_that_never_fired_says_so() -> None:
    fired = [{"kind": "slip"}]
    assert faults_note({}, []) is None
    assert faults_note({"slip": 0.0}, []) is None
    assert faults_note({"slip": 0.3}, []) == "asked slip=0.3; none fired in this episode"
    assert faults_note({"slip": 0.3, "nudge": 0.3}, fired) == \
        "asked slip=0.3,nudge=0.3; nudge did not fire in this episode"
    assert faults_note({"slip": 0.3}, fired) is None


def test_the_json_summary_lists_each_fault_and_counts_them_per_kind() -> None:
    slip = {"kind": "slip", "timestep": 90, "sim_time_s": 3.0, "phase": "grasp",
            "node": "grasp/raise", "command": "r/grasp.1/grasp/raise#1", "skill": "lift",
            "details": {"object": "red_cube"}, "response": {"kind": "recovery", "node": "held",
                                                            "after_s": 0.8},
            "recovered": True, "tolerated": False}
    late = late_faults([{"kind": "occlude", "timestep": 400, "sim_time_s": 13.3,
                         "details": {"camera": "front"}}])
    report = RunReport("pick", (
        episode(0, "done", True, faults=(slip, *late)),
        episode(1, "done", True, faults_note="asked slip=0.3; none fired in this episode"),
    ), None, RunOptions(task="pick", episodes=2, faults={"slip": 0.3}))
    data = report.to_dict()
    assert data["episodes"][0]["faults"] == [slip, {
        "kind": "occlude", "timestep": 400, "sim_time_s": 13.3, "phase": None, "node": None,
        "command": None, "skill": None, "details": {"camera": "front"}, "response": None,
        "recovered": False, "tolerated": False, "after_task": True}]
    assert data["episodes"][0]["faults_note"] is None
    assert data["episodes"][1]["faults"] == []
    assert data["episodes"][1]["faults_note"] == "asked slip=0.3; none fired in this episode"
    assert data["faults"] == {
        "occlude": {"fired": 1, "recovered": 0, "tolerated": 0, "episodes": 1},
        "slip": {"fired": 1, "recovered": 1, "tolerated": 0, "episodes": 1}}
    assert data["options"]["faults"] == {"slip": 0.3}


def test_fault_counts_skip_episodes_whose_faults_were_not_recorded() -> None:
    one = [{"kind": "slip", "recovered": True}, {"kind": "slip", "tolerated": True}]
    assert fault_counts([one, None, []]) == {
        "slip": {"fired": 2, "recovered": 1, "tolerated": 1, "episodes": 1}}
