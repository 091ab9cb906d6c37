"""Parity over the whole task library: every task that comes as YAML and as Python gives the
same task both ways, and a Python-built task dumped to YAML loads back equal.

The library is the running example (``harness_bt/testing/fetch_cup.yaml`` and
``harness_bt.testing.example_spec``) plus every ``trees/<name>.yaml`` that has a
``trees/<name>.py`` beside it, picked up as they are added.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness_bt import FakeClock, Task, TaskRunner
from harness_bt.authoring import (
    TaskSpec,
    build_task,
    check_file,
    dump_yaml,
    load_python,
    load_spec,
    load_task,
    spec_from_task,
    task_from_dict,
)
from harness_bt.errors import DefinitionError
from harness_bt.run.settings import RunnerSettings
from harness_bt.skill import SkillRegistry
from harness_bt.testing import example
from harness_bt.testing.example_spec import FETCH_CUP_YAML, fetch_cup_spec

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Entry:
    name: str
    yaml: Path
    python: Callable[[], TaskSpec | Task]
    skills: Callable[[], SkillRegistry | None]


def library(root: Path = ROOT) -> list[Entry]:
    entries = [Entry("fetch_cup", FETCH_CUP_YAML, fetch_cup_spec, example.example_skills)]
    for yaml_path in sorted((root / "trees").glob("*.yaml")):
        py = yaml_path.with_suffix(".py")
        if py.exists():
            entries.append(Entry(yaml_path.stem, yaml_path,
                                 lambda py=py: load_python(py), lambda: None))
    return entries


LIBRARY = library()
IDS = [e.name for e in LIBRARY]


def as_task(obj: TaskSpec | Task, skills: SkillRegistry | None) -> Task:
    return build_task(obj, skills=skills) if isinstance(obj, TaskSpec) else obj


def structure(task: Task) -> dict[str, Any]:
    return task.structure()


@pytest.mark.parametrize("entry", LIBRARY, ids=IDS)
def test_yaml_and_python_give_the_same_task(entry: Entry) -> None:
    same_task(entry)


def same_task(entry: Entry) -> None:
    skills = entry.skills()
    from_yaml = load_task(entry.yaml, skills=skills)
    from_python = as_task(entry.python(), skills)
    assert structure(from_yaml) == structure(from_python)
    assert from_yaml.blackboard == from_python.blackboard


@pytest.mark.parametrize("entry", LIBRARY, ids=IDS)
def test_the_yaml_file_passes_validation_cleanly(entry: Entry) -> None:
    report = check_file(entry.yaml, skills=entry.skills()).report
    assert report.problems == [], report.render()


@pytest.mark.parametrize("entry", LIBRARY, ids=IDS)
def test_a_python_built_task_dumps_to_yaml_and_loads_back_equal(entry: Entry,
                                                                 tmp_path: Path) -> None:
    round_trip(entry, tmp_path)


def round_trip(entry: Entry, tmp_path: Path) -> None:
    skills = entry.skills()
    built = entry.python()
    try:
        spec = built if isinstance(built, TaskSpec) else spec_from_task(built)
    except DefinitionError as exc:  # its trees are Python factories: no YAML form
        assert exc.code == "NOT_A_DOCUMENT"
        spec = load_spec(entry.yaml, skills=skills)
    path = tmp_path / f"{entry.name}.yaml"
    path.write_text(dump_yaml(spec))
    for include in spec.includes:  # beside it, as beside the original
        (tmp_path / include).write_text((entry.yaml.parent / include).read_text())
    again = load_spec(path, skills=skills)
    assert again == spec
    rebuilt = build_task(again, skills=skills, base_dir=tmp_path)
    assert structure(rebuilt) == structure(as_task(built, skills))


def test_the_running_example_yaml_is_the_python_spec_and_the_core_task() -> None:
    spec = load_spec(FETCH_CUP_YAML, skills=example.example_skills())
    assert spec == fetch_cup_spec()
    from_yaml = structure(load_task(FETCH_CUP_YAML, skills=example.example_skills()))
    core = structure(example.fetch_cup_task())
    assert from_yaml.pop("instruction") == "fetch the cup and put it on the tray"
    core.pop("instruction")
    monitor = from_yaml["trees"]["watch"][1]
    assert monitor["params"] == {"when": "not exists(world.cup)"}  # the one difference:
    monitor["params"] = {"condition": "_cup_lost"}  # an expression instead of a callable
    assert from_yaml == core


@pytest.mark.parametrize("scenario", example.SCENARIOS)
def test_the_running_example_from_yaml_runs_like_the_python_one(scenario: str) -> None:
    clock = FakeClock()
    runtime, kw = example._scenario(scenario, clock)
    task = load_task(FETCH_CUP_YAML, skills=example.example_skills())
    runner = TaskRunner(
        task,
        bridge=runtime,
        clock=clock,
        skills=example.example_skills(),
        run_id="example",
        settings=RunnerSettings(budget=kw.get("budget")),
    )
    result = runner.run(max_ticks=2_000)
    runner.close()
    reference = example.run_example(scenario).result
    assert (result.outcome, result.reason, result.ticks) == (
        reference.outcome, reference.reason, reference.ticks)
    assert result.commands == reference.commands
    assert result.phases_visited == reference.phases_visited


NEUTRAL_YAML = """\
name: demo
budget: {max_retries: 2}
phases:
  - id: drive
    tree: {type: act_and_evaluate, name: go, skill: navigate, params: {x_m: 1.0, y_m: 0.0}}
    transitions:
      - {event: succeeded, target: done}
      - {event: failed, target: aborted_drive}
  - {id: done, kind: final}
  - {id: aborted_drive, final: true}
"""
CORE_PY = """\
from harness_bt import Final, Phase, Task, TaskBudget, on
from harness_bt.authoring import new_task


def task() -> Task:
    return new_task("demo", [
        Phase("drive", {"type": "act_and_evaluate", "name": "go", "skill": "navigate",
                        "params": {"x_m": 1.0, "y_m": 0.0}},
              transitions=[on("succeeded", "done"), on("failed", "aborted_drive")]),
        Final("done"), Final("aborted_drive"),
    ], budget=TaskBudget(max_retries=2))
"""


def test_a_pair_in_trees_in_the_neutral_form_is_picked_up_and_checked(tmp_path: Path) -> None:
    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "demo.yaml").write_text(NEUTRAL_YAML)
    (tmp_path / "trees" / "demo.py").write_text(CORE_PY)
    (tmp_path / "trees" / "lonely.yaml").write_text(NEUTRAL_YAML)  # no .py: not a pair
    entries = library(tmp_path)
    assert [e.name for e in entries] == ["fetch_cup", "demo"]
    demo = Entry("demo", entries[1].yaml, entries[1].python, example.example_skills)
    same_task(demo)
    round_trip(demo, tmp_path)
    assert task_from_dict(__import__("yaml").safe_load(NEUTRAL_YAML)).structure() == \
        structure(load_task(demo.yaml, skills=example.example_skills()))
