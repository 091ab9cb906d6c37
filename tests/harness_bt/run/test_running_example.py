"""The seed's running example against FakeRuntime: navigate -> pick (observe, align, approach,
close) -> evaluate -> place, clean and under faults.

Every scenario asserts, per tick, the whole status map of every active tree and the chart
configuration against a golden file in ``golden/`` (one line per tick; regenerate with
``HARNESS_REGEN_GOLDEN=1`` and review the diff), and then the facts the scenario is about.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness_bt import FakeClock, TaskBudget, TaskRunner, TraceReader
from harness_bt.ledger import CommandState
from harness_bt.testing import FakeRuntime, FakeScene, Script
from harness_bt.testing.example import (
    example_runtime,
    example_skills,
    fetch_cup_task,
    grasp_effect,
    slip_effect,
)
from tests.harness_bt.helpers import run_to_end

GOLDEN = Path(__file__).parent / "golden"
RID = "r1"


def render(views: list[tuple[Any, ...]]) -> str:
    lines = []
    for i, (config, maps) in enumerate(views, 1):
        trees = " ; ".join(f"{phase}: {text}" for phase, text in maps.items())
        lines.append(f"{i:3d} | {' '.join(config)} | {trees}")
    return "\n".join(lines) + "\n"


def check_golden(name: str, views: list[tuple[Any, ...]]) -> None:
    path = GOLDEN / f"{name}.txt"
    text = render(views)
    if os.environ.get("HARNESS_REGEN_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"per-tick views differ from {path}"


def make(clock: FakeClock, rt: FakeRuntime, *, budget: TaskBudget | None = None,
         tmp_path: Path | None = None, **task_kw: Any) -> TaskRunner:
    task = fetch_cup_task(budget=budget, **task_kw)
    trace = None if tmp_path is None else tmp_path / "trace.jsonl"
    return TaskRunner(task, bridge=rt, clock=clock, skills=example_skills(), run_id=RID,
                      trace=trace)


def cid(phase: str, path: str, attempt: int = 1, activation: int = 1) -> str:
    return f"{RID}/{phase}.{activation}/{path}#{attempt}"


NAV = cid("navigate", "go/go.act")
ALIGN = cid("grasp", "pick/steps/align/align.act")
APPROACH = cid("grasp", "pick/steps/approach/approach.act")
CLOSE = cid("grasp", "pick/steps/close")
REGRASP = cid("evaluate", "hold_cup/hold_cup.try/hold_cup.recovery/hold_cup.guard/regrasp/"
                          "close_again")
RELEASE = cid("evaluate", "hold_cup/hold_cup.try/hold_cup.recovery/hold_cup.guard/regrasp/"
                          "release/release.act")
PLACE = cid("place", "put/put.act")


def assert_nothing_left_running(runner: TaskRunner) -> None:
    for rec in runner.ledger.records():
        assert rec.state in (CommandState.SUCCEEDED, CommandState.FAILED, CommandState.CANCELED,
                             CommandState.REJECTED, CommandState.UNKNOWN), rec.summary()


def test_clean_run_succeeds_with_one_command_per_step(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    runner = make(clock, rt, tmp_path=tmp_path)
    views = run_to_end(runner, clock)
    check_golden("clean", views)
    res = runner.result
    assert res is not None
    assert (res.outcome, res.reason, res.final_state) == ("succeeded", "done", "done")
    assert res.phases_visited == ("navigate", "pick", "grasp", "watch", "deliver", "evaluate",
                                  "place", "placed", "done")
    assert res.commands == {NAV: "SUCCEEDED", ALIGN: "SUCCEEDED", APPROACH: "SUCCEEDED",
                            CLOSE: "SUCCEEDED", PLACE: "SUCCEEDED"}
    assert (res.retries, res.recoveries, res.replans, res.unknowns) == (0, 0, 0, ())
    assert rt.starts == {"navigate": 1, "align": 1, "approach": 1, "grasp": 1, "place": 1}
    assert runner.ledger.held_resources() == {}
    # the grasp was judged in the evaluate phase, from an observation, never the executor
    grasp_verdicts = [e for e in runner.trace.of_kind("verdict") if e["command_id"] == CLOSE]
    assert [(e["data"]["phase"], e["data"]["verdict"]) for e in grasp_verdicts] == [
        ("evaluate", "SUCCEEDED")]
    assert "cup held_by gripper" in grasp_verdicts[0]["data"]["evidence"]
    assert res.durations["total"] == pytest.approx(0.05 * (res.ticks - 1))


def test_grasp_slip_recovers_with_exactly_one_extra_grasp() -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.1, effect=slip_effect),
                                        Script(duration_s=0.1, effect=grasp_effect)])
    runner = make(clock, rt)
    views = run_to_end(runner, clock)
    check_golden("slip", views)
    res = runner.result
    assert res is not None and res.succeeded
    assert rt.starts["grasp"] == 2  # exactly one extra grasp
    assert res.commands[CLOSE] == "FAILED"
    assert res.command_reasons[CLOSE] == "POSTCONDITION_NOT_MET"
    assert res.commands[RELEASE] == "SUCCEEDED"
    assert res.commands[REGRASP] == "SUCCEEDED"
    assert (res.recoveries, res.retries) == (1, 0)
    # the recovery finishing did not make the branch succeed: the attempt ran again and judged
    # the new grasp
    verdicts = [(e["command_id"], e["data"]["verdict"]) for e in runner.trace.of_kind("verdict")
                if e["data"]["node_path"].endswith("grasp_ok")]
    assert verdicts == [(CLOSE, "FAILED"), (REGRASP, "SUCCEEDED")]
    assert "gripper width 0.0000 m" in runner.ledger.get(CLOSE).evidence


def test_occlusion_is_unknown_then_settled_after_another_look() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)

    def occluded_grasp(scene: FakeScene, cmd: Any) -> None:
        grasp_effect(scene, cmd)
        scene.occlude("cup", 0.2)

    rt.script("grasp", Script(duration_s=0.1, effect=occluded_grasp))
    rt.at(1.12, lambda scene: scene.reveal("cup"))
    runner = make(clock, rt)
    views = run_to_end(runner, clock)
    check_golden("occlusion", views)
    res = runner.result
    assert res is not None and res.succeeded
    states = [h.state_after.value for h in runner.ledger.get(CLOSE).events if h.applied]
    assert states[-4:] == ["EVALUATING", "UNKNOWN", "RECONCILING", "SUCCEEDED"]
    looks = [(e["data"]["verdict"], e["data"]["final"]) for e in runner.trace.of_kind("verdict")
             if e["command_id"] == CLOSE]
    assert looks == [("UNKNOWN", False), ("SUCCEEDED", True)]
    assert res.unknown_verdicts == 1 and res.unknowns == ()
    assert rt.starts["grasp"] == 1  # UNKNOWN is not a reason to redo


def test_occlusion_that_never_clears_ends_unknown_and_keeps_the_arm() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("grasp", Script(duration_s=0.1, effect=lambda s, c: (grasp_effect(s, c),
                                                                   s.occlude("cup"))))
    runner = make(clock, rt, max_observations=2)
    run_to_end(runner, clock)
    res = runner.result
    assert res is not None
    assert (res.outcome, res.reason) == ("aborted", "aborted_unknown")
    assert res.unknowns == (CLOSE,)
    assert runner.ledger.held_resources() == {"arm": CLOSE, "gripper": CLOSE}
    assert rt.starts["grasp"] == 1
    assert_nothing_left_running(runner)


def test_stop_never_confirmed_leaves_unknown_holding_the_arm_and_nothing_conflicting_starts(
) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, confirm_stops=False, grasps=[Script(outcome="hang")])
    runner = make(clock, rt, budget=TaskBudget(max_retries=6, max_time_s=5.0))
    views = run_to_end(runner, clock)
    check_golden("no_stop_confirmation", views)
    res = runner.result
    assert res is not None
    assert (res.outcome, res.reason) == ("aborted", "aborted_budget_exhausted")
    rec = runner.ledger.get(CLOSE)
    assert rec.state is CommandState.UNKNOWN and rec.reason == "STOP_UNCONFIRMED"
    assert runner.ledger.held_resources() == {"arm": CLOSE, "gripper": CLOSE}
    # the retry planned a new align but never sent it: the arm is held by the UNKNOWN grasp
    assert [c.command_id for c in rt.received] == [NAV, ALIGN, APPROACH, CLOSE]
    assert rt.starts == {"navigate": 1, "align": 1, "approach": 1, "grasp": 1}
    waits = runner.trace.of_kind("waiting")
    assert waits and waits[0]["data"]["details"]["holder"] == CLOSE
    failure = next(e for e in runner.trace.of_kind("failure")
                   if e["data"]["outcome"]["reason"] == "NO_PROGRESS")
    assert failure["command_id"] == CLOSE
    # the harness kept asking the runtime to stop while reconciling
    assert rt.cancel_calls.count(CLOSE) >= 3
    assert [e["data"]["action"] for e in runner.trace.of_kind("reconcile")][:1] == [
        "stop_requested_again"]
    assert res.unknowns == (CLOSE,)
    assert res.protection_latency_s == (None,)
    assert_nothing_left_running(runner)


def test_duplicated_and_late_events_have_no_double_effect() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.duplicate(event="started", times=10)
    rt.duplicate(event="control_done", times=10)
    rt.delay(event="progress", by_s=0.5, times=2)
    runner = make(clock, rt)
    views = run_to_end(runner, clock)
    check_golden("duplicates", views)
    res = runner.result
    assert res is not None and res.succeeded
    assert rt.starts == {"navigate": 1, "align": 1, "approach": 1, "grasp": 1, "place": 1}
    assert len(rt.received) == len(set(rt.dispatch_calls)) == 5
    ignored = [h for r in runner.ledger.records() for h in r.events if not h.applied]
    reasons = {h.reason for h in ignored}
    assert "DUPLICATE_OR_STALE_SEQ" in reasons
    nav_states = [h.state_after.value for h in runner.ledger.get(NAV).events if h.applied
                  and h.state_before is not h.state_after]
    assert nav_states == ["ACCEPTED", "RUNNING", "EVALUATING", "SUCCEEDED"]
    late = [h for h in runner.ledger.get(NAV).events if h.op == "event:progress"]
    assert any(not h.applied for h in late)  # progress arriving after control done is ignored


def test_budget_exhausted_aborts_by_name_with_every_command_terminal() -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(outcome="aborted", reason="IK_FAILED")])
    runner = make(clock, rt)
    views = run_to_end(runner, clock)
    check_golden("budget_exhausted", views)
    res = runner.result
    assert res is not None
    assert (res.outcome, res.reason) == ("aborted", "aborted_budget_exhausted")
    assert res.commands[CLOSE] == "FAILED" and res.command_reasons[CLOSE] == "IK_FAILED"
    assert res.commands[cid("grasp", "pick/steps/close", 2)] == "FAILED"
    assert rt.starts["grasp"] == 2 and res.retries == 1
    exhausted = [e for e in runner.trace.of_kind("outcome")
                 if e["data"]["outcome"]["kind"] == "budget_exhausted"]
    assert exhausted[0]["data"]["outcome"]["reason"] == "ATTEMPTS_EXHAUSTED"
    assert exhausted[0]["data"]["outcome"]["cause"]["reason"] == "IK_FAILED"
    assert_nothing_left_running(runner)
    assert runner.ledger.held_resources() == {}


def test_task_retry_budget_refuses_before_node_attempts_run_out() -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(outcome="aborted", reason="IK_FAILED")])
    runner = make(clock, rt, budget=TaskBudget(max_retries=0), pick_attempts=5)
    run_to_end(runner, clock)
    res = runner.result
    assert res is not None and res.reason == "aborted_budget_exhausted"
    draws = [e["data"] for e in runner.trace.of_kind("budget")]
    assert draws == [pytest.approx(draws[0])] and draws[0]["refused"] == "TASK_RETRIES_EXHAUSTED"
    assert rt.starts["grasp"] == 1


def test_task_time_budget_aborts_a_long_run_by_name() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("navigate", Script(outcome="hang", progress_every_s=0.1))
    runner = make(clock, rt, budget=TaskBudget(max_time_s=1.0))
    run_to_end(runner, clock)
    res = runner.result
    assert res is not None and (res.outcome, res.reason) == ("aborted", "aborted_budget_exhausted")
    assert res.commands[NAV] == "CANCELED"  # halted by the phase exit, stop confirmed
    assert len(res.protection_latency_s) == 1 and res.protection_latency_s[0] is not None
    assert_nothing_left_running(runner)


def test_world_changed_between_plan_and_dispatch_is_rejected_and_replanned() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)

    def align_and_bump_the_cup(scene: FakeScene, cmd: Any) -> None:
        t = cmd.params["target"]
        scene.ee_position = [t[0], t[1], t[2] + cmd.params["height_m"]]
        scene.move("cup", [0.55, 0.02, 0.05])

    rt.script("align", Script(duration_s=0.2, effect=align_and_bump_the_cup),
              Script(duration_s=0.2, effect=lambda s, c: setattr(
                  s, "ee_position", [*c.params["target"][:2],
                                     c.params["target"][2] + c.params["height_m"]])))
    runner = make(clock, rt)
    views = run_to_end(runner, clock)
    check_golden("world_changed", views)
    res = runner.result
    assert res is not None and res.succeeded
    rec = runner.ledger.get(APPROACH)
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "STALE_PREMISE")
    assert "cup changed" in rec.events[-1].detail
    assert APPROACH not in rt.dispatch_calls  # refused before it left the harness
    again = runner.ledger.get(cid("grasp", "pick/steps/approach/approach.act", 2))
    assert again.state is CommandState.SUCCEEDED
    assert again.command.params["target"][:2] == [0.55, 0.02]  # planned on the new world
    assert again.command.premises["cup"] > rec.command.premises["cup"]
    assert (res.replans, res.retries) == (1, 1)


def test_trace_file_replays_the_run(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.1, effect=slip_effect),
                                        Script(duration_s=0.1, effect=grasp_effect)])
    runner = make(clock, rt, tmp_path=tmp_path)
    run_to_end(runner, clock)
    runner.close()
    reader = TraceReader.open(tmp_path / "trace.jsonl")
    assert [e["seq"] for e in reader] == list(range(1, len(reader) + 1))
    first = reader.events[0]
    assert first["kind"] == "task" and first["run_id"] == RID and first["task_id"] == "fetch_cup"
    structure = reader.structure
    assert [p["id"] for p in structure["phases"]][:3] == ["navigate", "pick", "deliver"]
    assert {n["path"] for n in structure["trees"]["grasp"]} >= {"pick/steps/close"}
    assert next(n for n in structure["trees"]["grasp"]
                if n["path"] == "pick/steps/close")["params"]["skill"] == "grasp"
    for e in reader:
        assert set(e) == {"seq", "kind", "task_id", "run_id", "command_id", "plan_version",
                          "tick", "mono", "wall", "data"}
    # the state at the seq of the failed verdict: in evaluate, the slip judged, not yet regrasped
    failed = next(e for e in reader.of_kind("verdict") if e["data"]["verdict"] == "FAILED")
    st = reader.state_at(failed["seq"])
    assert st.configuration == ["deliver", "evaluate"]
    assert st.commands[CLOSE] == "FAILED"
    assert REGRASP not in st.commands
    # statuses are recorded at the end of each tick: the evaluate tree had not been ticked yet
    assert set(st.statuses["evaluate"].values()) == {"INVALID"}
    after = next(e for e in reader.of_kind("status")
                 if e["seq"] > failed["seq"] and e["data"]["phase"] == "evaluate")
    st = reader.state_at(after["seq"])
    regrasp = "hold_cup/hold_cup.try/hold_cup.recovery/hold_cup.guard/regrasp"
    assert st.statuses["evaluate"]["hold_cup/hold_cup.try/grasp_ok"] == "FAILURE"
    assert st.statuses["evaluate"][f"{regrasp}/release/release.act"] == "RUNNING"
    assert st.statuses["evaluate"][f"{regrasp}/close_again"] == "INVALID"
    assert st.blackboard["grasp"] == CLOSE  # the regrasp has not overwritten it yet
    assert st.blackboard["plan"]["objects"]["cup"]["version"] == 1
    end = reader.state_at()
    assert end.blackboard["grasp"] == REGRASP
    assert end.result is not None and end.result["outcome"] == "succeeded"
    assert end.commands == dict(runner.result.commands)  # type: ignore[union-attr]
    assert end.counters == {"recoveries": 1}
    assert reader.latencies("decision") == [0.0] * 7


def test_the_monitor_region_fails_the_parallel_phase_and_halts_the_pick() -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    rt.script("approach", Script(duration_s=1.0))
    rt.at(0.8, lambda scene: scene.set("cup", removed=True))
    runner = make(clock, rt)
    views = run_to_end(runner, clock)
    check_golden("monitor", views)
    res = runner.result
    assert res is not None and (res.outcome, res.reason) == ("aborted", "aborted_pick")
    assert res.commands[APPROACH] == "CANCELED"  # halted by the exit, stop confirmed
    assert rt.cancel_calls == [APPROACH]
    outcome = next(e for e in runner.trace.of_kind("outcome") if e["data"]["phase"] == "watch")
    assert outcome["data"]["event"] == "failed.watch"
    assert [e["data"]["target"] for e in runner.trace.of_kind("chart")][-1] == "aborted_pick"
