"""A for_each over an expression (evaluated against the world when the loop starts, its items
then frozen, traced and journaled) or over a scene group (its members given when the document
is read): which items run, what is refused, and what a resumed run takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import py_trees

from harness_bt import FakeClock, Ledger, TaskRunner
from harness_bt.events import IterationEvent, parse_event
from harness_bt.ledger import CommandState
from harness_bt.nodes.idioms import act_and_evaluate
from harness_bt.nodes.loops import for_each
from harness_bt.run.resume import open_durable
from harness_bt.run.run_record import RunCheckpoint, RunHeader, RunRecord, file_digest
from harness_bt.run.settings import RunParts
from harness_bt.testing import FakeRuntime
from harness_bt.testing.example import example_runtime, example_skills
from tests.harness_bt.helpers import last_failure, one_phase, run_to_end, runner_for

Behaviour = py_trees.behaviour.Behaviour
NEAR = "filter(world.objects, it.position[1] < 0.2)"  # the cup (y 0); the tray is at y 0.3


def go(item: str) -> Behaviour:
    return py_trees.composites.Sequence(item, memory=True, children=[
        act_and_evaluate("go", "navigate", params={"x_m": 1.0, "y_m": 0.0})])


def events(runner: TaskRunner) -> list[IterationEvent]:
    out = []
    for raw in runner.trace.of_kind("iteration"):
        event = parse_event(raw)
        assert isinstance(event, IterationEvent)
        out.append(event)
    return out


def started(runner: TaskRunner) -> list[str]:
    return [e.item for e in events(runner) if e.stage == "start"]


def test_an_expression_is_evaluated_when_the_loop_starts_and_its_items_traced(
        clock: FakeClock) -> None:
    loop = for_each("each", item="obj", over=NEAR, each=[go("cup"), go("tray")])
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "done"
    domain = events(runner)[0]
    assert (domain.stage, domain.left, domain.over) == ("domain", ("cup",), NEAR)
    assert started(runner) == ["cup"]
    assert [r.command_id for r in runner.ledger.records()] == ["r/work.1/each/cup/go/go.act#1"]
    assert runner.context.blackboard.get("each.items") == {"activation": 1, "start": 1,
                                                           "items": ["cup"]}
    assert loop.params()["candidates"] == ["cup", "tray"]


def test_what_the_scene_declares_shows_on_the_views_of_the_expression(
        clock: FakeClock) -> None:
    loop = for_each("each", item="obj", over="filter(world.objects, it.shape == 'tray')",
                    each=[go("cup"), go("tray")],
                    declared={"cup": {"shape": "cylinder"}, "tray": {"shape": "tray"}})
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert started(runner) == ["tray"]


def test_an_item_with_no_body_fails_the_loop_before_any_runs(clock: FakeClock) -> None:
    loop = for_each("each", item="obj", over="world.objects", each=[go("cup")])
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.reason == "aborted_failed"
    failure = last_failure(runner)
    assert (failure["reason"], failure["details"]["items"]) == ("NO_BODY", ["tray"])
    assert runner.ledger.records() == []


def test_an_expression_that_is_no_list_of_objects_fails_the_loop(clock: FakeClock) -> None:
    loop = for_each("each", item="obj", over="world.cup.position", each=[go("cup")])
    runner = runner_for(one_phase(lambda: loop), clock, example_runtime(clock))
    run_to_end(runner, clock)
    failure = last_failure(runner)
    assert failure["reason"] == "INVALID_DOMAIN"
    assert "not every item is an object" in failure["details"]["why"]


def test_a_group_or_an_expression_with_no_bodies_is_refused_when_bound(
        clock: FakeClock) -> None:
    for over in ({"group": "cubes"}, NEAR):
        loop = for_each("each", item="obj", over=over)
        assert loop.problems(None) == [
            f"for_each 'each': over={over!r} has no bodies: its items come from the task's "
            "scene when a document naming it is read"]
    grouped = for_each("each", item="obj", over={"group": "cubes"}, each=[go("cup")])
    assert grouped.problems(None) == [] and grouped.over == ("cup",)
    assert grouped.params()["over"] == {"group": "cubes"}


# -- resume ---------------------------------------------------------------------------------

def _runner(path: Path, clock: FakeClock, rt: FakeRuntime, resume: RunCheckpoint | None
            ) -> tuple[TaskRunner, Ledger, RunRecord]:
    if not path.exists():
        task_file = path.parent / "task.yaml"
        task_file.write_text("name: t\n")
        RunRecord.create(path, RunHeader(task_file=str(task_file),
                                         task_digest=file_digest(task_file), task_name="t",
                                         run_id="r1", bridge="fake")).close()
    record = RunRecord.open(path)
    ledger = Ledger.open(path, wall_clock=clock.wall, now=clock.monotonic())
    task = one_phase(lambda: for_each("each", item="obj", over=NEAR,
                                      each=[go("cup"), go("tray")]))
    runner = TaskRunner(task, bridge=rt, clock=clock, skills=example_skills(), run_id="r1",
                        parts=RunParts(ledger=ledger, run_record=record, resume=resume))
    return runner, ledger, record


def test_a_resumed_run_takes_the_items_its_first_start_found_and_resends_nothing(
        tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock)
    path = tmp_path / "run.db"
    cup = "r1/work.1/each/cup/go/go.act#1"
    runner, ledger, record = _runner(path, clock, rt, None)
    while not (cup in ledger and ledger.get(cup).state is CommandState.RUNNING):
        runner.tick()
        clock.advance(0.05)
    checkpoints = [e["data"]["reason"] for e in runner.trace.of_kind("checkpoint")]
    assert checkpoints[-1] == "for_each 'each' over ['cup']"  # journaled as soon as frozen
    runner.close()
    ledger.close()
    record.close()  # the harness dies on the cup
    rt.scene.move("tray", [0.5, 0.1, 0.0])  # the expression would now take the tray too
    durable = open_durable(path)
    checkpoint: Any = durable.checkpoint
    durable.close()
    again, ledger, record = _runner(path, clock, rt, checkpoint)
    run_to_end(again, clock)
    assert again.result is not None and again.result.reason == "done"
    assert again.world.get("tray") is not None
    assert again.world.get("tray").pose.position[1] == 0.1  # type: ignore[union-attr]
    domain = next(e for e in events(again) if e.stage == "domain")
    assert domain.left == ("cup",)
    assert started(again) == ["cup"]
    assert [r.command_id for r in ledger.records()] == [cup]
    assert cup not in [e["command_id"] for e in again.trace.of_kind("dispatch")]
    again.close()
    ledger.close()
    record.close()
