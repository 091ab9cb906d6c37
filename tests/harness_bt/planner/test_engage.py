"""Re-engagement: the planner is consulted again after a re-plannable abort (with the attempt
in its request), at most ``replans`` times, never after a success or an end no plan can
change; every call lands in the trace, right after ``run_start`` (or appended after a
refusal)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_bt import FakeClock, TaskRunner, TraceReader
from harness_bt.authoring import load_task
from harness_bt.planner.engage import PlannerWatch, append_decisions, engage, replannable
from harness_bt.planner.model import (
    Decision,
    Plan,
    PlanRequest,
    Refusal,
    RefusalCode,
)
from harness_bt.run.episodes import EpisodeReport, RunReport
from harness_bt.runtime.episodes import RunOptions
from harness_bt.testing import Script
from harness_bt.testing.example import example_runtime, example_skills, grasp_effect

PLAN = Plan("pick", "trees/pick.yaml", {"target": "red_cube"}, "pick up the {target}")
REQUEST = PlanRequest("pick up the red cube", ())


class Scripted:
    """A planner answering what it is told, in order, and keeping every request."""

    name = "scripted"

    def __init__(self, *answers: Plan | Refusal) -> None:
        self.answers = list(answers)
        self.requests: list[PlanRequest] = []

    def plan(self, request: PlanRequest) -> Decision:
        self.requests.append(request)
        got = self.answers.pop(0)
        if isinstance(got, Plan):
            return Decision(self.name, f"sha256:{len(self.requests)}", "raw", plan=got)
        return Decision(self.name, f"sha256:{len(self.requests)}", "raw", refusal=got)

    def close(self) -> None:
        pass


def episode(outcome: str, reason: str, *, unknown_commands: int = 0,
            why: dict[str, Any] | None = None, trace: str | None = None) -> EpisodeReport:
    return EpisodeReport(index=0, seed=0, outcome=outcome, reason=reason, sim_success=None,
                         sim_ended_by="not_judged", retries=0, recoveries=0,
                         unknown_verdicts=0, unknown_commands=unknown_commands, commands=1,
                         sim_steps=1, sim_time_s=1.0, wall_s=0.1, decision_latency_s=(),
                         phases_visited=(), trace_path=trace, why=why)


def report(*episodes: EpisodeReport) -> RunReport:
    return RunReport("pick", tuple(episodes), {}, RunOptions(task="pick"))


class Runs:
    """A run per call, ending as scripted; keeps (plan, index, calls) of each."""

    def __init__(self, *ends: EpisodeReport) -> None:
        self.ends = list(ends)
        self.seen: list[tuple[Plan, int, list[tuple[int, Decision]]]] = []

    def __call__(self, plan: Plan, index: int, calls: Any) -> RunReport:
        self.seen.append((plan, index, list(calls)))
        return report(self.ends.pop(0))


GRASP_ABORT = episode("aborted", "aborted_grasp",
                      why={"phase": "grasp", "reason": "not held", "evidence": {"gap": 0.03}})


def test_a_success_is_not_planned_again() -> None:
    planner, runs = Scripted(PLAN), Runs(episode("succeeded", "done"))
    done = engage(planner, REQUEST, runs, replans=3)
    assert [(p.task, i) for p, i, _ in runs.seen] == [("pick", 0)]
    assert len(done.decisions) == 1 and done.replans == 0 and done.refusal is None


def test_an_abort_is_planned_again_with_the_attempt_and_its_evidence() -> None:
    other = Plan("pick", "trees/pick.yaml", {"target": "green_cube"})
    planner = Scripted(PLAN, other)
    runs = Runs(GRASP_ABORT, episode("succeeded", "done"))
    done = engage(planner, REQUEST, runs, replans=1)
    assert [dict(p.params) for p, _, _ in runs.seen] == [{"target": "red_cube"},
                                                         {"target": "green_cube"}]
    assert [i for _, i, _ in runs.seen] == [0, 1]
    assert [c for _, _, calls in runs.seen for c, _ in calls] == [0, 1]
    first, second = planner.requests
    assert first.attempts == ()
    (attempt,) = second.attempts
    assert attempt.to_dict() == {"task": "pick", "params": {"target": "red_cube"},
                                 "outcome": "aborted", "reason": "aborted_grasp",
                                 "why": {"phase": "grasp", "reason": "not held",
                                         "evidence": {"gap": 0.03}}}
    assert done.replans == 1 and len(done.runs) == 2


def test_replans_bound_the_calls_and_zero_disables_them() -> None:
    runs = Runs(GRASP_ABORT, GRASP_ABORT, GRASP_ABORT)
    done = engage(Scripted(PLAN, PLAN, PLAN), REQUEST, runs, replans=2)
    assert len(done.runs) == 3 and done.replans == 2
    runs = Runs(GRASP_ABORT)
    done = engage(Scripted(PLAN), REQUEST, runs, replans=0)
    assert len(done.runs) == 1 and done.replans == 0
    with pytest.raises(ValueError, match="replans must be 0 or more"):
        engage(Scripted(PLAN), REQUEST, runs, replans=-1)


@pytest.mark.parametrize(("ended", "again"), [
    (episode("aborted", "aborted_grasp"), True),
    (episode("aborted", "aborted_budget_exhausted"), True),
    (episode("aborted", "aborted_not_observed"), True),
    (episode("aborted", "aborted_episode_ended"), False),  # the simulator ended it
    (episode("aborted", "aborted_fenced"), False),         # another harness took over
    (episode("aborted", "aborted_stopped"), False),        # stopped from the console
    (episode("aborted", "aborted_unknown"), False),        # unknown is no reason to redo
    (episode("aborted", "aborted_grasp", unknown_commands=1), False),
    (episode("max_ticks", "max_ticks"), False),
    (episode("succeeded", "done"), False),
])
def test_only_an_abort_a_new_plan_can_change_is_planned_again(ended: EpisodeReport,
                                                             again: bool) -> None:
    assert replannable(ended) is again
    runs = Runs(ended, episode("succeeded", "done"))
    done = engage(Scripted(PLAN, PLAN), REQUEST, runs, replans=1)
    assert len(done.runs) == (2 if again else 1)


def test_a_refusal_after_an_abort_ends_the_runs_and_is_handed_on_to_be_traced() -> None:
    gave_up = Refusal(RefusalCode.GAVE_UP, ("nothing else to try",), ("pick (target=red_cube)",))
    traced: list[tuple[list[int], int]] = []
    done = engage(Scripted(PLAN, gave_up), REQUEST, Runs(GRASP_ABORT), replans=1,
                  on_refusal=lambda calls, so_far: traced.append(
                      ([c for c, _ in calls], len(so_far.runs))))
    assert done.refusal is gave_up and len(done.runs) == 1
    assert traced == [([1], 1)]
    assert "tried:\n  pick (target=red_cube)" in str(gave_up.error("x", "scripted"))


def test_a_refusal_at_first_runs_nothing() -> None:
    no = Refusal(RefusalCode.NO_MATCH, ("no task of the library is asked that way",))
    runs = Runs()
    done = engage(Scripted(no), REQUEST, runs)
    assert runs.seen == [] and done.refusal is no and done.runs == []


def test_the_planner_calls_are_traced_right_after_run_start(tmp_path: Path) -> None:
    skills = example_skills()
    task = load_task("harness_bt/testing/fetch_cup.yaml", skills=skills)
    clock = FakeClock()
    runtime = example_runtime(clock, grasps=[Script(effect=grasp_effect)])
    path = tmp_path / "fetch.jsonl"
    runner = TaskRunner(task, bridge=runtime, clock=clock, skills=skills, trace=str(path))
    decision = Decision("scripted", "sha256:ab", {"words": ["fetch"]}, plan=PLAN)
    PlannerWatch(None, [(0, decision)], "fetch the cup").attach(runner, 0)
    assert runner.run(max_ticks=500).outcome == "succeeded"
    reader = TraceReader.open(path)
    assert [e["kind"] for e in reader.events[:3]] == ["task", "run_start", "planner"]
    assert reader.structure["task"] == task.name
    (event,) = reader.of_kind("planner")
    assert event["data"] == {"call": 0, "instruction": "fetch the cup", "planner": "scripted",
                             "prompt_digest": "sha256:ab", "answer": {"words": ["fetch"]},
                             "plan": PLAN.to_dict(), "refusal": None}
    assert not runner.trace.listeners  # the one-shot listener took itself off

    gave_up = Refusal(RefusalCode.GAVE_UP, ("nothing else",))
    append_decisions(path, [(1, Decision("scripted", "sha256:cd", "raw", refusal=gave_up))],
                     "fetch the cup")
    reader = TraceReader.open(path)
    last = reader.events[-1]
    assert last["kind"] == "planner" and last["seq"] == reader.events[-2]["seq"] + 1
    assert last["run_id"] == reader.events[0]["run_id"]
    assert last["data"]["refusal"]["code"] == "PLAN_GAVE_UP"
    assert json.loads(path.read_text().splitlines()[-1])["data"]["call"] == 1
