"""Planning a run, and planning again after an abort: :func:`engage` asks the planner for a
task, runs it, and, when the run's last episode aborted because the task's budget or
recoveries ran out, asks again with the attempts so far (their reason and evidence) in the
request, at most ``replans`` times. A success, or an end the planner cannot change (the
simulator ended the episode, another harness took over, a stop, an unknown verdict: unknown
is no reason to redo), is not re-planned.

Every planner call is a ``planner`` event of the trace: written into each episode's trace of
the run it chose, just after ``run_start`` (:class:`PlannerWatch`), or appended to the last
run's traces when it refused (no run follows it)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_bt.events import TraceKind
from harness_bt.planner.model import Attempt, Decision, Plan, Planner, PlanRequest, Refusal

if TYPE_CHECKING:
    from harness_bt.run.episodes import EpisodeReport, RunReport, RunWatch
    from harness_bt.run.runner import TaskRunner
    from harness_bt.world import Perception

__all__ = ["Engagement", "PlannerWatch", "append_decisions", "engage", "replannable"]

#: how a run can end that no other plan can change
_NOT_REPLANNED = frozenset({"aborted_episode_ended", "aborted_fenced", "aborted_stopped",
                            "aborted_unknown"})


def replannable(episode: EpisodeReport) -> bool:
    """Whether an episode ended so that the planner is consulted again: aborted (the task's
    budget spent or its recoveries exhausted), with no verdict or command left unknown."""
    return (episode.outcome == "aborted" and episode.reason not in _NOT_REPLANNED
            and not episode.unknown)


def event_data(decision: Decision, call: int, instruction: str) -> dict[str, Any]:
    """The data of the ``planner`` trace event of one call (``call``: 0 for the first)."""
    return {"call": call, "instruction": instruction, **decision.to_dict()}


class PlannerWatch:
    """Writes the planner calls that chose a run into each of its episodes' traces, right
    after ``run_start``; passes everything else to the ``inner`` watch (the live console)."""

    def __init__(self, inner: RunWatch | None, calls: Sequence[tuple[int, Decision]],
                 instruction: str) -> None:
        self.inner = inner
        self.calls = list(calls)
        self.instruction = instruction

    def perception(self, perceive: Perception) -> Perception:
        return perceive if self.inner is None else self.inner.perception(perceive)

    def attach(self, runner: TaskRunner, index: int) -> None:
        trace = runner.trace

        def after_start(event: dict[str, Any]) -> None:
            if event["kind"] != TraceKind.RUN_START:
                return
            trace.listeners.remove(after_start)
            for call, decision in self.calls:
                trace.emit(TraceKind.PLANNER, **event_data(decision, call, self.instruction))

        trace.listeners.append(after_start)
        if self.inner is not None:
            self.inner.attach(runner, index)

    def ticked(self, runner: TaskRunner) -> None:
        if self.inner is not None:
            self.inner.ticked(runner)


def append_decisions(path: str | Path, calls: Sequence[tuple[int, Decision]],
                     instruction: str) -> None:
    """Append ``planner`` events to a trace file (after its last event, seq going on)."""
    file = Path(path)
    last: dict[str, Any] = {}
    if file.exists():
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    last = json.loads(line)
                except json.JSONDecodeError:
                    continue
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("a", encoding="utf-8") as fh:
        seq = int(last.get("seq", 0))
        for call, decision in calls:
            seq += 1
            event = {"seq": seq, "kind": "planner", "task_id": last.get("task_id", ""),
                     "run_id": last.get("run_id", ""), "command_id": None,
                     "plan_version": last.get("plan_version", 0),
                     "tick": last.get("tick", 0), "mono": last.get("mono", 0.0),
                     "wall": last.get("wall", 0.0),
                     "data": json.loads(json.dumps(event_data(decision, call, instruction),
                                                   default=str))}
            fh.write(json.dumps(event, separators=(",", ":")) + "\n")


#: runs a plan: (the plan, which run it is (0, 1, ...), the planner calls that chose it) ->
#: the run's report
RunPlan = Callable[[Plan, int, Sequence[tuple[int, Decision]]], "RunReport"]


@dataclass
class Engagement:
    """What :func:`engage` did: every planner call, every run (its plan and report), and
    the refusal that ended it, if one did."""

    decisions: list[Decision] = field(default_factory=list)
    runs: list[tuple[Plan, RunReport]] = field(default_factory=list)
    refusal: Refusal | None = None

    @property
    def replans(self) -> int:
        return max(0, len(self.decisions) - 1)


def engage(planner: Planner, request: PlanRequest, run: RunPlan, *, replans: int = 1,
           on_refusal: Callable[[Sequence[tuple[int, Decision]], Engagement], None]
           | None = None) -> Engagement:
    """Plan, run, and plan again after a re-plannable abort (see the module docstring).
    ``on_refusal`` is called with a refusing call (to trace it) before returning."""
    if replans < 0:
        raise ValueError(f"replans must be 0 or more, not {replans}")
    out = Engagement()
    while True:
        decision = planner.plan(request)
        call = len(out.decisions)
        out.decisions.append(decision)
        if decision.plan is None:
            out.refusal = decision.refusal
            if on_refusal is not None:
                on_refusal([(call, decision)], out)
            return out
        report = run(decision.plan, len(out.runs), [(call, decision)])
        out.runs.append((decision.plan, report))
        last = report.episodes[-1] if report.episodes else None
        if last is None or last.succeeded or not replannable(last) \
                or len(out.decisions) > replans:
            return out
        request = dataclasses.replace(request, attempts=(*request.attempts, Attempt(
            decision.plan.task, dict(decision.plan.params), last.outcome, last.reason,
            None if last.why is None else dict(last.why))))
