"""The task library: each task's YAML and Python build the same task (for its default
parameters and for others), its YAML compiles to a neutral dict form that builds it again,
everything they name exists in the registries the run loads, and each names its scene."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt import EvaluatorRegistry, FakeClock, SkillRegistry, TaskRunner
from harness_bt.authoring import check_file, load_task
from harness_bt.authoring.compile import to_neutral
from harness_bt.authoring.neutral import task_from_dict
from harness_bt.authoring.scenes import load_scene
from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import iter_nodes
from harness_bt.nodes.skill_action import SkillAction
from harness_bt.run.settings import RunParts
from harness_bt.testing import FakeRuntime

TREES = Path(__file__).resolve().parents[2] / "trees"
TASKS = ("pick", "pick_cube", "pick_and_place", "stack", "place_at", "sort", "clear_table")
PICKING = ("pick", "pick_cube", "pick_and_place", "stack", "place_at")
#: other parameter values each parameterised task is built with
OTHER = {"pick": {"target": "blue_cube"}, "pick_and_place": {"target": "green_cube"},
         "stack": {"top": "blue_cube", "bottom": "red_cube"},
         "place_at": {"target": "green_cube", "offset": [0.05, -0.1]}}


@pytest.mark.parametrize("name", TASKS)
def test_yaml_and_python_build_equal_structures(name: str) -> None:
    from_yaml = load_task(TREES / f"{name}.yaml")
    from_python = load_task(TREES / f"{name}.py")
    assert from_yaml.name == from_python.name == name
    assert from_yaml.structure() == from_python.structure()


@pytest.mark.parametrize("name", sorted(OTHER))
def test_yaml_and_python_agree_for_other_parameter_values(name: str) -> None:
    from_yaml = load_task(TREES / f"{name}.yaml", params=OTHER[name])
    from_python = load_task(TREES / f"{name}.py", params=OTHER[name])
    assert from_yaml.structure() == from_python.structure()
    assert from_yaml.params == {**load_task(TREES / f"{name}.yaml").params, **OTHER[name]}
    assert from_yaml.structure() != load_task(TREES / f"{name}.yaml").structure()


@pytest.mark.parametrize("name", TASKS)
def test_the_yaml_compiles_to_a_neutral_dict_form(name: str) -> None:
    data, guards = to_neutral(check_file(TREES / f"{name}.yaml"))
    assert task_from_dict(data, guards=guards).structure() == \
        load_task(TREES / f"{name}.yaml").structure()


@pytest.mark.parametrize("name", TASKS)
def test_every_task_names_a_scene_whose_parameters_it_sets(name: str) -> None:
    task = load_task(TREES / f"{name}.yaml")
    scene = load_scene(task.scene, params=task.params)
    assert scene.judged
    assert {k: v for k, v in task.params.items() if k in scene.params} == task.params


@pytest.mark.parametrize("name", PICKING)
def test_the_phases_go_observe_approach_grasp_evaluate(name: str) -> None:
    task = load_task(TREES / f"{name}.yaml")
    ids = [s.id for s in task.phases]
    expected = ["observe", "approach", "grasp", "evaluate"]
    if name in ("pick_and_place", "stack", "place_at"):
        expected += ["transport", "place"]
    assert ids[:len(expected)] == expected
    assert task.budget.max_retries is not None and task.budget.max_time_s is not None
    recovers = {p.id: [n.name for n in iter_nodes(root) if type(n).__name__ == "_RecoverRetry"]
                for p in task.atomic_phases() for root in [task.build_trees()[p.id]]}
    assert recovers["approach"] == ["approach_or_back_off"]
    assert recovers["grasp"] == ["grasp_or_realign"]
    assert recovers["evaluate"] == ["held_or_regrasp"]


@pytest.mark.parametrize("name", TASKS)
def test_every_skill_and_evaluator_named_is_registered(name: str) -> None:
    task = load_task(TREES / f"{name}.yaml")
    runner = TaskRunner(
        task,
        bridge=FakeRuntime(FakeClock()),
        skills=SkillRegistry(entry_points=True),
        parts=RunParts(evaluators=EvaluatorRegistry(entry_points=True)),
    )
    skills = {n.skill_name for root in runner.trees.values() for n in iter_nodes(root)
              if isinstance(n, SkillAction)}
    assert skills <= set(runner.skills.names())
    assert {"approach", "grasp", "lift", "release", "home"} <= skills
    runner.close()


def test_load_task_reports_what_is_wrong_with_the_file(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="TASK_NOT_FOUND"):
        load_task(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(DefinitionError, match=r"bad.yaml:2:1: error YAML_SYNTAX: malformed YAML"):
        load_task(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("name: t\nphases:\n  - {id: a, tree: {type: grasp, name: g}}\n")
    with pytest.raises(DefinitionError) as err:
        load_task(wrong)
    message = str(err.value)
    assert "wrong.yaml:3:3: error NO_FINAL: the task has no top-level final phase" in message
    assert "wrong.yaml:3:19: error UNKNOWN_NODE_TYPE: unknown node type 'grasp'" in message
    text = tmp_path / "task.txt"
    text.write_text("")
    with pytest.raises(DefinitionError, match="UNKNOWN_TASK_FORMAT"):
        load_task(text)
    nothing = tmp_path / "nothing.py"
    nothing.write_text("x = 1\n")
    with pytest.raises(DefinitionError, match=r"nothing.py: found no task .*define `def task"):
        load_task(nothing)
