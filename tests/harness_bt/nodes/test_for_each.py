"""The for_each loop: one body per item, the next item chosen from the world each time round,
re-runs drawn from the task budget, its runs in the trace, its command ids apart per item."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import py_trees
import pytest

from harness_bt import DefinitionError, FakeClock, Ledger, TaskBudget, TaskRunner
from harness_bt.events import IterationEvent, parse_event
from harness_bt.ledger import CommandState
from harness_bt.nodes.idioms import act_and_evaluate
from harness_bt.nodes.loops import for_each
from harness_bt.run.settings import RunParts
from harness_bt.testing.example import example_runtime, example_skills
from tests.harness_bt.helpers import last_failure, one_phase, run_to_end, runner_for

Behaviour = py_trees.behaviour.Behaviour


def go(item: str, x_m: float = 1.0) -> Behaviour:
    """A body that drives the base and judges it (a real command through the ledger), named
    after its item."""
    return py_trees.composites.Sequence(item, memory=True, children=[
        act_and_evaluate("go", "navigate", params={"x_m": x_m, "y_m": 0.0})])


def runs(runner: TaskRunner) -> list[tuple[str, str, int, str]]:
    """(stage, item, run, status) of every iteration event."""
    out = []
    for raw in runner.trace.of_kind("iteration"):
        event = parse_event(raw)
        assert isinstance(event, IterationEvent)
        out.append((event.stage, event.item, event.run, event.status))
    return out


def test_each_item_runs_its_own_body_in_the_order_of_over(clock: FakeClock) -> None:
    loop = for_each("each", item="obj", over=["cup", "tray"], each=[go("cup"), go("tray")])
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "done"
    assert runs(runner) == [("start", "cup", 1, ""), ("end", "cup", 1, "SUCCESS"),
                            ("start", "tray", 1, ""), ("end", "tray", 1, "SUCCESS"),
                            ("done", "", 0, "")]
    assert [r.command_id for r in runner.ledger.records()] == [  # the item is in the id
        "r/work.1/each/cup/go/go.act#1", "r/work.1/each/tray/go/go.act#1"]


def test_an_empty_domain_succeeds_at_once_without_running_a_body(clock: FakeClock) -> None:
    loop = for_each("each", item="obj", over=["cup", "tray"], each=[go("cup"), go("tray")],
                   where="it.on == 'floor'")  # nothing is on the floor: nothing is left
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "done"
    assert runs(runner) == [("done", "", 0, "")]
    assert runner.ledger.records() == []


def test_order_picks_the_item_nearest_a_point_from_the_world(clock: FakeClock) -> None:
    # the cup is at y=0.0, the tray at y=0.3: from (0.5, 0.4, 0) the tray is nearer
    loop = for_each("each", item="obj", over=["cup", "tray"], each=[go("cup"), go("tray")],
                   order="nearest(items, [0.5, 0.4, 0.0])")
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert [r[1] for r in runs(runner) if r[0] == "start"] == ["tray", "cup"]


def test_a_failing_item_then_the_next_and_items_left_fail_the_loop(clock: FakeClock) -> None:
    bad = py_trees.composites.Sequence("cup", memory=True, children=[
        py_trees.behaviours.Failure("broken")])
    loop = for_each("each", item="obj", over=["cup", "tray"], each=[bad, go("tray")], attempts=2)
    runner = runner_for(one_phase(lambda: loop, budget=TaskBudget(max_retries=5)), clock,
                        example_runtime(clock))
    run_to_end(runner, clock)
    assert runs(runner) == [("start", "cup", 1, ""), ("end", "cup", 1, "FAILURE"),
                            ("start", "cup", 2, ""), ("end", "cup", 2, "FAILURE"),
                            ("start", "tray", 1, ""), ("end", "tray", 1, "SUCCESS"),
                            ("done", "", 0, "")]
    assert runner.result is not None and runner.result.reason == "aborted_failed"
    failure = last_failure(runner)
    assert (failure["reason"], failure["details"]["items"]) == ("ITEMS_LEFT", ["cup"])
    assert runner.context.budget.retries_used == 1  # the cup's second run was a retry


def test_the_task_budget_running_out_mid_loop_ends_it_exhausted(clock: FakeClock) -> None:
    bad = py_trees.composites.Sequence("cup", memory=True, children=[
        py_trees.behaviours.Failure("broken")])
    loop = for_each("each", item="obj", over=["cup", "tray"], each=[bad, go("tray")], attempts=3)
    runner = runner_for(one_phase(lambda: loop, budget=TaskBudget(max_retries=0)), clock,
                        example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "aborted_budget"
    failure = last_failure(runner)
    assert (failure["kind"], failure["reason"]) == ("budget_exhausted", "TASK_RETRIES_EXHAUSTED")
    assert failure["details"] == {"item": "cup", "run": 2}
    assert [r[:2] for r in runs(runner)] == [("start", "cup"), ("end", "cup")]


def test_a_body_ending_unknown_ends_the_loop_unknown(clock: FakeClock) -> None:
    class Unknown(py_trees.behaviours.Failure):
        def update(self) -> Any:
            from harness_bt.context import Outcome, OutcomeKind
            self.scope.record(Outcome(OutcomeKind.UNKNOWN, "NOT_JUDGED", "each/cup/u", False))
            return py_trees.common.Status.FAILURE

        def setup(self, **kw: Any) -> None:
            self.scope = kw["scope"]

    body = py_trees.composites.Sequence("cup", memory=True, children=[Unknown("u")])
    loop = for_each("each", item="obj", over=["cup", "tray"], each=[body, go("tray")])
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "aborted_unknown"
    assert [r[:2] for r in runs(runner)] == [("start", "cup"), ("end", "cup")]


def test_before_runs_to_the_end_before_every_choice(clock: FakeClock) -> None:
    seen: list[str] = []

    class Look(py_trees.behaviours.Success):
        def update(self) -> Any:
            seen.append("look")
            return super().update()

    loop = for_each("each", item="obj", over=["cup", "tray"], each=[go("cup"), go("tray")],
                   before=Look("look"))
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert seen == ["look"] * 3  # before the cup, before the tray, before finding none left


def test_a_loop_built_without_a_body_per_item_is_refused_before_it_runs(
        clock: FakeClock) -> None:
    loop = for_each("each", item="obj", over=["cup", "tray"], each=[go("cup")])
    with pytest.raises(DefinitionError, match=r"for_each 'each' needs one body per item of "
                       r"over=\['cup', 'tray'\], named after it; its bodies: \['cup'\]"):
        runner_for(one_phase(lambda: loop), clock, example_runtime(clock))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"over": "cup"}, "over='cup' is a name, not a list, a group or an expression"),
    ({"attempts": 0}, "attempts=0 must be a whole number >= 1"),
    ({"where": "it.postion == 1"}, "where: an object has no field 'postion' at column 1 of "
                                   "'it.postion == 1'"),
    ({"order": "nearst(items, [0, 0])"}, "order: unknown function 'nearst' at column 1"),
])
def test_bad_loop_settings_are_refused_with_what_and_where(kwargs: dict[str, Any],
                                                           message: str) -> None:
    settings = {"over": ["cup"], **kwargs}
    with pytest.raises(DefinitionError, match="for_each 'each': ") as err:
        for_each("each", item="obj", **settings)
    assert message in err.value.message


def test_a_resumed_loop_never_resends_an_items_command(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    journal = tmp_path / "run.db"

    def task() -> Any:
        return one_phase(lambda: for_each("each", item="obj", over=["cup", "tray"],
                                         each=[go("cup"), go("tray", 2.0)]))

    second = "r1/work.1/each/tray/go/go.act#1"
    ledger = Ledger.open(journal, wall_clock=clock.wall, now=clock.monotonic())
    first = TaskRunner(task(), bridge=rt, clock=clock, skills=example_skills(), run_id="r1",
                       parts=RunParts(ledger=ledger))
    while not (second in ledger and ledger.get(second).state is CommandState.RUNNING):
        first.tick()
        clock.advance(0.05)
    first.close()
    ledger.close()  # the harness dies mid-loop, on the second item
    ledger = Ledger.open(journal, wall_clock=clock.wall, now=clock.monotonic())
    again = TaskRunner(task(), bridge=rt, clock=clock, skills=example_skills(), run_id="r1",
                       parts=RunParts(ledger=ledger))
    run_to_end(again, clock)
    assert again.result is not None and again.result.reason == "done"
    assert sorted(r.command_id for r in ledger.records()) == [
        "r1/work.1/each/cup/go/go.act#1", second]  # the cup's: adopted, not sent again
    sent = [e["command_id"] for e in [*again.trace.of_kind("dispatch")]]
    assert "r1/work.1/each/cup/go/go.act#1" not in sent
    again.close()
    ledger.close()


def test_the_current_item_shows_in_the_replay_the_graph_and_the_console(
        clock: FakeClock) -> None:
    from harness_bt.console.feed import Feed
    from harness_bt.viz.frames import frame_at
    from harness_bt.viz.render import render

    loop = for_each("each", item="obj", over=["cup", "tray"], each=[go("cup"), go("tray")])
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    events = runner.trace.events
    second = next(e["seq"] for e in events
                  if e["kind"] == "iteration" and e["data"]["item"] == "tray")
    assert frame_at(events, second).node("work", "each").item == "#2 tray run 1"
    assert frame_at(events, None).node("work", "each").item == "done in 2 run(s)"
    assert "#2 tray run 1" in str(render(trace=events, at=second, fmt="dot"))
    feed = Feed(parse_event(events[0]).structure)  # type: ignore[attr-defined]
    for e in events:
        feed.on_event(e)
    feed.drain()
    texts = [text for _, kind, text in feed.build()["events"] if kind == "iteration"]
    assert texts[-3:] == ["each #2 tray (run 1) start", "each #2 tray (run 1) end SUCCESS",
                          "each: no item left"]
