"""Why an episode did not end ``done``: read from the trace (the failing outcome and its
evidence, or the runner's stop and what made it), kept in the episode report and printed in
the run summary. And an episode the simulator ended first ends ``aborted_episode_ended``,
stopped before any tree sees the commands the episode's end aborted."""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console

from harness_bt import FakeClock, Final, Phase, Task, TaskRunner, on
from harness_bt.cli.run import render_summary
from harness_bt.ledger import CommandEvent
from harness_bt.nodes import Observe, SkillAction
from harness_bt.run.episodes import EpisodeReport, RunReport
from harness_bt.run.why import why_not_done
from harness_bt.runtime.bridge import BridgeNotice, PollResult
from harness_bt.runtime.episodes import RunOptions
from harness_bt.testing import FakeRuntime, Script
from harness_bt.testing.example import example_skills


def finals(aborted: str) -> list[Final]:
    return [Final("done"), Final(aborted)]


def look_task() -> Task:
    return Task("look", [
        Phase("look", lambda: Observe("find", ["blue_cube"], timeout_s=0.2),
              transitions=[on("succeeded", "done"), on("failed", "aborted_not_observed")]),
        *finals("aborted_not_observed")])


def test_a_failed_observation_says_which_object_was_never_seen(clock: FakeClock) -> None:
    runner = TaskRunner(look_task(), bridge=FakeRuntime(clock), clock=clock,
                        skills=example_skills())
    res = runner.run(max_ticks=50)
    assert res.reason == "aborted_not_observed"
    assert why_not_done(runner.trace.events, res.reason) == {
        "phase": "look", "event": "failed.look", "reason": "NOT_OBSERVED", "node": "find",
        "evidence": {"blue_cube": "never seen"}}
    assert why_not_done(runner.trace.events, "done") is None


class EndsTheEpisode:
    """A bridge whose simulator ends the episode as soon as a command runs: the command is
    aborted (``EPISODE_ENDED``) and an ``episode_ended`` notice comes in the same poll, as
    the in-process runtime delivers them."""

    def __init__(self, inner: FakeRuntime) -> None:
        self.inner = inner
        self.ended = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def poll(self) -> PollResult:
        res = self.inner.poll()
        started = [e for e in res.events if str(e.kind) == "started"]
        if not started or self.ended:
            return res
        self.ended = True
        first = started[0]
        aborted = CommandEvent(first.command_id, first.seq + 1, "aborted",
                               reason="EPISODE_ENDED: the episode ended", timestep=first.timestep)
        return PollResult((*res.events, aborted), res.observations,
                          (*res.notices, BridgeNotice("episode_ended", data={
                              "ended_by": "success", "steps": 42})))


def test_an_episode_the_simulator_ended_first_is_aborted_episode_ended(
        clock: FakeClock) -> None:
    task = Task("move", [
        Phase("move", lambda: SkillAction("go", "navigate", params={"x_m": 1.0, "y_m": 0.0}),
              transitions=[on("succeeded", "done"), on("failed", "aborted_move")]),
        *finals("aborted_move")])
    fake = FakeRuntime(clock, default=Script(duration_s=5.0))
    runner = TaskRunner(task, bridge=EndsTheEpisode(fake), clock=clock,  # type: ignore[arg-type]
                        skills=example_skills(), run_id="r")
    res = runner.run(max_ticks=100)
    assert (res.outcome, res.reason, res.final_state) == ("aborted", "aborted_episode_ended",
                                                          None)
    kinds = [e["kind"] for e in runner.trace.events]
    stop = kinds.index("stop")
    assert kinds[stop - 1] == "notice" and "outcome" not in kinds[stop:]
    assert why_not_done(runner.trace.events, res.reason) == {
        "stopped": "aborted_episode_ended", "evidence": {"ended_by": "success", "steps": 42}}


def episode(index: int, reason: str, why: dict[str, Any] | None) -> EpisodeReport:
    return EpisodeReport(
        index=index, seed=10 + index, outcome="succeeded" if reason == "done" else "aborted",
        reason=reason, sim_success=reason == "done", sim_ended_by="success", retries=0,
        recoveries=0, unknown_verdicts=0, unknown_commands=0, commands=2, sim_steps=100,
        sim_time_s=3.3, wall_s=3.0, decision_latency_s=(0.01,), phases_visited=("look",),
        why=why)


def test_the_summary_prints_why_each_episode_did_not_end_done() -> None:
    report = RunReport("look", (
        episode(0, "done", None),
        episode(1, "aborted_not_observed", {"phase": "look", "reason": "NOT_OBSERVED",
                                            "node": "find",
                                            "evidence": {"blue_cube": "never seen"}}),
        episode(2, "aborted_episode_ended", {"stopped": "aborted_episode_ended",
                                             "evidence": {"ended_by": "timeout"}})),
        {"look": 0.333}, RunOptions(task="look"))
    out = io.StringIO()
    render_summary(report, Console(file=out, width=60, color_system=None))
    lines = out.getvalue().splitlines()
    assert 'episode 1 (seed 11): aborted_not_observed: in phase look at find NOT_OBSERVED: ' \
        '{"blue_cube": "never seen"}' in lines
    assert 'episode 2 (seed 12): aborted_episode_ended: the simulator ended the episode ' \
        'before the task ended: {"ended_by": "timeout"}' in lines
    assert not any("episode 0 " in line for line in lines)
    assert 'simulator\'s final metric: {"look": 0.333}' in lines
    assert not any(line.rstrip().endswith(";") for line in lines)
    assert json.loads(json.dumps(report.to_dict()))["episodes"][1]["why"]["evidence"] == {
        "blue_cube": "never seen"}
