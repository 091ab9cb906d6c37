"""History phases: a transition to a compound's history re-enters it where it was left
(shallow: its direct phase, deep: the innermost one), in YAML and Python alike; their
validation; a drawing shows them; and a run resumed after a crash keeps what they remember."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import py_trees
import pytest

from harness_bt import Compound, FakeClock, Final, History, Ledger, Phase, Task, TaskRunner, on
from harness_bt.authoring import builder as b
from harness_bt.authoring import check_file, load_spec, load_task, spec_from_task
from harness_bt.authoring import tree as t
from harness_bt.authoring.loader import export_btcpp
from harness_bt.errors import DefinitionError
from harness_bt.ledger import CommandState
from harness_bt.run.checkpoint import chart_in
from harness_bt.run.run_record import RunCheckpoint, RunHeader, RunRecord
from harness_bt.run.settings import RunParts
from harness_bt.testing import FakeRuntime, Script
from harness_bt.testing.example import example_runtime, example_skills
from harness_bt.viz.dot import to_dot
from harness_bt.viz.graph import drawing
from harness_bt.viz.mermaid import to_mermaid
from tests.harness_bt.helpers import run_to_end


def ok() -> py_trees.behaviour.Behaviour:
    return py_trees.behaviours.Success("ok")


def nested_task() -> Task:
    """``work`` holds ``a`` then ``b`` (itself ``b1`` then ``b2``); a failure anywhere in it
    goes to ``pause``, whose outcome picks the way back: shallow, deep, or from the top."""
    return Task("nested", [
        Compound("work", [
            Phase("a", ok, transitions=[on("succeeded", "b")]),
            Compound("b", [Phase("b1", ok, transitions=[on("succeeded", "b2")]),
                           Phase("b2", ok, transitions=[on("succeeded", "b_done")]),
                           Final("b_done")], transitions=[on("done", "work_done")]),
            History("work_h"),
            History("work_hd", deep=True),
            Final("work_done"),
        ], transitions=[on("failed", "pause"), on("done", "done")]),
        Phase("pause", ok, transitions=[on("succeeded", "work_h"), on("unknown", "work_hd"),
                                        on("failed", "work")]),
        Final("done"),
    ])


def chart_after(task: Task, *events: str) -> Any:
    chart = task.chart_class()
    for event in events:
        chart.send(event)
    return chart


def test_shallow_history_reenters_the_direct_phase_from_its_initial() -> None:
    chart = chart_after(nested_task(), "succeeded.a", "succeeded.b1", "failed.b2")
    assert chart.configuration_values == {"pause"}
    assert {k: [s.id for s in v] for k, v in chart.history_values.items()} == {
        "work_h": ["b"], "work_hd": ["b", "b2"]}
    chart.send("succeeded.pause")
    assert chart.configuration_values == {"work", "b", "b1"}  # b again, from b1


def test_deep_history_reenters_the_innermost_phase() -> None:
    chart = chart_after(nested_task(), "succeeded.a", "succeeded.b1", "failed.b2",
                        "unknown.pause")
    assert chart.configuration_values == {"work", "b", "b2"}


def test_without_history_the_compound_starts_again_from_its_initial_phase() -> None:
    chart = chart_after(nested_task(), "succeeded.a", "succeeded.b1", "failed.b2",
                        "failed.pause")
    assert chart.configuration_values == {"work", "a"}


@pytest.mark.parametrize(("event", "expected"), [
    ("succeeded.pause", {"work", "b", "b1"}), ("unknown.pause", {"work", "b", "b2"})])
def test_a_chart_rebuilt_from_a_checkpoint_keeps_shallow_and_deep_history(
        event: str, expected: set[str]) -> None:
    task = nested_task()
    left = chart_after(task, "succeeded.a", "succeeded.b1", "failed.b2")
    history = {k: [s.id for s in v] for k, v in left.history_values.items()}
    cp = RunCheckpoint(configuration=("pause",), activations={}, blackboard={},
                       retries_used=0, counters={}, plan_version=0, visited=(), epoch=0,
                       elapsed_s=0.0, ticks=0, history=history)
    cp = RunCheckpoint.from_dict(json.loads(json.dumps(cp.to_dict())))  # as journaled
    chart = chart_in(task, cp, listeners=[])
    assert chart.configuration_values == {"pause"}
    chart.send(event)
    assert chart.configuration_values == expected


def test_a_history_never_left_enters_its_default() -> None:
    task = Task("first", [
        Phase("start", ok, transitions=[on("succeeded", "work_h")]),
        Compound("work", [Phase("a", ok, transitions=[on("succeeded", "b")]),
                          Phase("b", ok, transitions=[on("succeeded", "done"),
                                                      on("unknown", "a")]),
                          History("work_h", default="b")],
                 transitions=[on("failed", "aborted_work")]),
        Final("done"), Final("aborted_work")])
    assert chart_after(task, "succeeded.start").configuration_values == {"work", "b"}
    assert task.structure()["phases"][1]["phases"][2] == {
        "id": "work_h", "kind": "history", "type": "shallow", "default": "b"}


YAML = """\
name: resumable
blackboard: {}
budget: {max_retries: 5, max_time_s: 60}
phases:
  - id: work
    kind: compound
    phases:
      - id: step1
        tree: {type: act_and_evaluate, name: go1, skill: navigate, params: {x_m: 1.0, y_m: 0.0}}
        transitions: [{event: succeeded, target: step2}]
      - id: step2
        tree: {type: act_and_evaluate, name: go2, skill: navigate, params: {x_m: 2.0, y_m: 0.0}}
        transitions: [{event: succeeded, target: step3}]
      - id: step3
        tree: {type: act_and_evaluate, name: go3, skill: navigate, params: {x_m: 3.0, y_m: 0.0}}
        transitions: [{event: succeeded, target: work_done}]
      - {id: work_h, kind: history}
      - {id: work_done, kind: final}
    transitions:
      - {event: failed, target: recover}
      - {event: done, target: done}
  - id: recover
    tree: {type: act_and_evaluate, name: home, skill: navigate, params: {x_m: 0.0, y_m: 0.0}}
    transitions:
      - {event: succeeded, target: work_h}
      - {event: failed, target: aborted_recover}
  - {id: done, kind: final}
  - {id: aborted_recover, kind: final}
"""


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "resumable.yaml"
    path.write_text(YAML)
    return path


def runtime(clock: FakeClock) -> FakeRuntime:
    """step1 drives, step2's first drive aborts, the rest drive (0.3 s each)."""
    rt = example_runtime(clock)
    rt.script("navigate", Script(duration_s=0.3),
              Script(outcome="aborted", duration_s=0.3, reason="BLOCKED"), Script(duration_s=0.3))
    return rt


def driven_to(rt: FakeRuntime) -> list[float]:
    return [c.params["x_m"] for c in rt.received]


def test_a_run_returns_to_the_phase_it_was_interrupted_in(task_file: Path) -> None:
    clock = FakeClock()
    rt = runtime(clock)
    runner = TaskRunner(load_task(task_file, skills=example_skills()), bridge=rt, clock=clock,
                        skills=example_skills())
    run_to_end(runner, clock)
    res = runner.result
    assert res is not None and res.reason == "done"
    assert res.phases_visited == ("work", "step1", "step2", "recover", "work", "step2",
                                  "step3", "work_done", "done")
    assert driven_to(rt) == [1.0, 2.0, 0.0, 2.0, 3.0]  # step1 is not driven again


def test_a_run_killed_outside_the_compound_resumes_into_the_remembered_phase(
        task_file: Path, tmp_path: Path) -> None:
    clock = FakeClock()
    rt = runtime(clock)
    path = tmp_path / "run.db"
    header = RunHeader(task_file=str(task_file), task_digest="0" * 64, task_name="resumable",
                       run_id="r1", bridge="fake")

    def runner_on(journal: RunRecord, resume: bool) -> tuple[TaskRunner, Ledger]:
        ledger = Ledger.open(path, wall_clock=clock.wall, now=clock.monotonic())
        return TaskRunner(
            load_task(task_file, skills=example_skills()),
            bridge=rt,
            clock=clock,
            skills=example_skills(),
            run_id="r1",
            parts=RunParts(ledger=ledger, run_record=journal,
                           resume=journal.latest() if resume else None),
        ), ledger

    journal = RunRecord.create(path, header)
    first, ledger = runner_on(journal, resume=False)
    home = "r1/recover.1/home/home.act#1"
    while not (home in ledger and ledger.get(home).state is CommandState.RUNNING):
        first.tick()
        clock.advance(0.05)
    assert first.configuration == ("recover",)
    first.close()  # the harness dies while recovering, outside the compound
    ledger.close()
    journal.close()

    journal = RunRecord.open(path)
    cp = journal.latest()
    assert cp is not None and dict(cp.history) == {"work_h": ["step2"]}
    again, ledger = runner_on(journal, resume=True)
    run_to_end(again, clock)
    res = again.result
    assert res is not None and res.reason == "done"
    enters = [e["data"]["phase"] for e in again.trace.of_kind("phase_enter")]
    assert enters[:3] == ["recover", "work", "step2"]  # back where it was, not at step1
    assert driven_to(rt) == [1.0, 2.0, 0.0, 2.0, 3.0]  # the drive home is not sent twice
    ledger.close()
    journal.close()


def test_yaml_python_and_xml_give_the_same_history(task_file: Path, tmp_path: Path) -> None:
    spec = load_spec(task_file, skills=example_skills())
    task = load_task(task_file, skills=example_skills())
    assert spec_from_task(task).phases == spec.phases
    built = b.task("resumable", [
        b.compound("work", [
            b.phase("step1", t.success("ok"), transitions=[b.on("succeeded", "step2")]),
            b.phase("step2", t.success("ok"), transitions=[b.on("succeeded", "work_done")]),
            b.history("work_h", deep=True, default="step2"), b.final("work_done")],
            transitions=[b.on("failed", "work_h"), b.on("done", "done")]),
        b.final("done")])
    assert built.phases[0].phases[2].model_dump(exclude_defaults=True) == {  # type: ignore
        "id": "work_h", "kind": "history", "type": "deep", "default": "step2"}
    xml = tmp_path / "resumable.xml"
    xml.write_text(export_btcpp(task_file, out_dir=tmp_path, skills=example_skills()))
    assert '<HistoryPhase id="work_h"/>' in xml.read_text()
    assert load_spec(xml, skills=example_skills()) == spec


def test_the_drawing_shows_shallow_and_deep_history() -> None:
    d = drawing(nested_task().structure())
    dot = to_dot(d)
    assert 'id="phase_work_h", shape=circle' in dot and 'label="H"' in dot
    assert 'label="H*"' in dot
    assert '(("H*"))' in to_mermaid(d)


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "task.yaml"
    path.write_text(text)
    report = check_file(path, skills=example_skills()).report
    return [str(p).replace(f"{tmp_path}/", "") for p in report.problems]


TOP = """\
name: x
phases:
  - {id: h, kind: history}
  - id: a
    tree: {type: success, name: ok}
    transitions: [{event: succeeded, target: h}, {event: failed, target: done}]
  - {id: done, kind: final}
"""
REGION = """\
name: x
phases:
  - id: p
    kind: parallel
    regions:
      - {id: h, kind: history}
      - id: a
        tree: {type: success, name: ok}
    transitions: [{event: succeeded, target: done}]
  - {id: done, kind: final}
"""
FIRST = """\
name: x
phases:
  - id: c
    kind: compound
    phases:
      - {id: h, kind: history, default: b}
      - id: a
        tree: {type: success, name: ok}
    transitions: [{event: succeeded, target: done}]
  - {id: done, kind: final}
"""
INSIDE = """\
name: x
phases:
  - id: c
    kind: compound
    phases:
      - id: a
        tree: {type: success, name: ok}
        transitions: [{event: failed, target: h}, {event: succeeded, target: done}]
      - {id: h, kind: history}
  - {id: done, kind: final}
"""
TYPO = INSIDE.replace("{event: failed, target: h}, ", "").replace(
    "{id: h, kind: history}", "{id: h, kind: history, type: deeep}")
UNUSED = INSIDE.replace("{event: failed, target: h}, ", "")


@pytest.mark.parametrize(("text", "expected"), [
    (TOP, ["task.yaml:3:19: error HISTORY_OUTSIDE_COMPOUND: history phase 'h' is at the top "
           "level: a history phase belongs inside a compound phase, whose last active phase it "
           "returns to (at phases[0].kind); fix: move it into the compound phase a transition "
           "should resume"]),
    (REGION, ["task.yaml:6:23: error HISTORY_OUTSIDE_COMPOUND: history phase 'h' is a region "
              "of parallel phase 'p': a history phase belongs inside a compound phase, whose "
              "last active phase it returns to (at phases[0].regions[0].kind); fix: move it "
              "into the compound phase a transition should resume"]),
    (FIRST, ["task.yaml:6:14: error HISTORY_INITIAL: compound 'c': its initial phase 'h' is a "
             "history phase, which is never active itself (at phases[0].phases[0].id); fix: "
             "make a phase with a tree the initial one (list it first, or name it in "
             "'initial:')",
             "task.yaml:6:14: warning UNUSED_HISTORY: history phase 'h': no transition ...",
             "task.yaml:6:41: error UNKNOWN_HISTORY_DEFAULT: history 'h': default 'b' is not "
             "one of the phases of compound 'c' (a) (at phases[0].phases[0].default); fix: "
             "name one of the phases of 'c', or leave 'default' out (the compound's initial "
             "phase)"]),
    (INSIDE, ["task.yaml:8:47: error HISTORY_FROM_INSIDE: phase 'a': transition on 'failed' "
              "targets history 'h' of compound 'c', which it is inside: the compound is not "
              "left, so there is nothing to return to (at "
              "phases[0].phases[0].transitions[0].target); fix: target the phase to go to, or "
              "move the transition to a phase outside the compound"]),
    (TYPO.replace("{event: succeeded", "{event: failed, target: done}, {event: succeeded"),
     ["task.yaml:9:14: warning UNUSED_HISTORY: ...",
      "task.yaml:9:38: error WRONG_TYPE: type of phase 'h' must be one of 'shallow' or "
      "'deep', got 'deeep' "
      "(at phases[0].phases[1].type); fix: write one of 'shallow' or 'deep'"]),
    (UNUSED, ["task.yaml:9:14: warning UNUSED_HISTORY: history phase 'h': no transition "
              "targets it, so it has no effect (at phases[0].phases[1].id); fix: target it "
              "(e.g. '{event: succeeded, target: h}' from a phase outside its compound), or "
              "remove it"]),
])
def test_a_misused_history_is_reported_where_it_is(tmp_path: Path, text: str,
                                                   expected: list[str]) -> None:
    got = problems(tmp_path, text)
    assert len(got) == len(expected), got
    for line, want in zip(got, expected, strict=True):
        head, _, tail = want.partition("...")
        assert line.startswith(head) and line.endswith(tail), line


def test_a_python_task_is_held_to_the_same_history_rules() -> None:
    with pytest.raises(DefinitionError) as err:
        Task("x", [History("h"), Phase("a", ok, transitions=[on("succeeded", "h")]),
                   Final("done")])
    assert "HISTORY_OUTSIDE_COMPOUND: history phase 'h' is at the top level" in str(err.value)
