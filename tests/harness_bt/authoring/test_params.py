"""Task parameters: declared and typed, bound at load (``--set``, ``params=``), substituted
for ``{name}`` in a tree's values and in subtree copies; every misuse named with its place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness_bt.authoring import (
    SpecError,
    check_file,
    dump_yaml,
    load_spec,
    load_task,
    neutral_form,
)
from harness_bt.authoring.model import ParamSpec
from harness_bt.authoring.neutral import new_task
from harness_bt.authoring.params import check_value, describe, parse_text
from harness_bt.errors import DefinitionError
from harness_bt.testing.example import example_skills

FIXTURES = Path(__file__).parent / "fixtures"
PICK_YAML = FIXTURES / "params_pick.yaml"
PICK_PY = FIXTURES / "params_pick.py"
ROOT = Path(__file__).resolve().parents[3]

HEAD = """\
name: drive
params:
  x: {type: number, default: 1.6}
  where: {type: string, default: dock, choices: [dock, door]}
phases:
"""
REST = """\
    transitions:
      - {event: succeeded, target: done}
      - {event: failed, target: aborted_work}
  - {id: done, kind: final}
  - {id: aborted_work, kind: final}
"""


def task(tree: str, head: str = HEAD) -> str:
    """A task whose one phase has ``tree`` (on line 6 when ``head`` is the default)."""
    return head + "  - id: work\n    tree: " + tree + "\n" + REST


GO = ('{type: act_and_evaluate, name: go, skill: navigate, '
      'params: {x_m: "{x}", y_m: 0.5, landmark: "near {where}"}}')


def check(tmp_path: Path, text: str, params: dict[str, Any] | None = None,
          name: str = "task.yaml") -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    report = check_file(path, skills=example_skills(), params=params).report
    return [str(p).replace(f"{tmp_path}/", "") for p in report]


def errors(found: list[str]) -> list[str]:
    return [p for p in found if ": error " in p]


def tree_of(path: Path, phase: str = "work", **params: Any) -> dict[str, Any]:
    neutral = neutral_form(path, skills=example_skills(), params=params)
    return next(p["tree"] for p in neutral["phases"] if p["id"] == phase)


# ---------------------------------------------------------------------- values


def test_text_is_read_by_the_declared_type() -> None:
    assert parse_text(ParamSpec(type="number"), "0.1") == 0.1
    assert check_value(ParamSpec(type="number"), "2") == 2.0
    assert check_value(ParamSpec(type="integer"), "3") == 3
    assert check_value(ParamSpec(type="boolean"), "false") is False
    assert check_value(ParamSpec(type="vector"), "[0, 0.1, 0]") == [0.0, 0.1, 0.0]
    assert check_value(ParamSpec(type="vector", size=3), "0,0.1,0") == [0.0, 0.1, 0.0]
    assert check_value(ParamSpec(type="object"), "green_cube") == "green_cube"
    assert check_value(ParamSpec(type="string"), "0.1") == "0.1"  # text stays text


@pytest.mark.parametrize(("decl", "value", "message"), [
    (ParamSpec(type="number"), "high", "'high' is not a number"),
    (ParamSpec(type="number", max=0.3), "0.5", "0.5 is above the maximum 0.3"),
    (ParamSpec(type="integer"), "2.5", "2.5 is not a whole number"),
    (ParamSpec(type="boolean"), "maybe", "'maybe' is not true or false"),
    (ParamSpec(type="vector", size=3), "0,1", "[0.0, 1.0] has 2 numbers, not 3"),
    (ParamSpec(type="vector"), "[0, x]", "'[0, x]' is not a list of numbers"),
    (ParamSpec(type="object"), "green cube", "'green cube' is not an object id"),
    (ParamSpec(type="string", choices=["a", "b"]), "c", "c is not one of a, b"),
    (ParamSpec(type="number"), True, "True is not a number"),
])
def test_a_value_that_does_not_fit_says_why(decl: ParamSpec, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_value(decl, value)


def test_a_declaration_is_described_in_words() -> None:
    assert describe(ParamSpec(type="number", min=0, max=1)) == "a number between 0 and 1"
    assert describe(ParamSpec(type="vector", size=3)) == "a list of 3 numbers"
    assert describe(ParamSpec(type="object", choices=["a", "b"])) == "an object id, one of a, b"


# ---------------------------------------------------------------------- substitution


def test_a_whole_placeholder_is_the_typed_value_and_a_part_is_text(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(task(GO))
    assert check(tmp_path, task(GO)) == []
    assert tree_of(path)["params"] == {"x_m": 1.6, "y_m": 0.5, "landmark": "near dock"}
    assert tree_of(path, x="2", where="door")["params"] == {
        "x_m": 2.0, "y_m": 0.5, "landmark": "near door"}
    built = load_task(path, skills=example_skills(), params={"x": 0.5})
    assert built.params == {"x": 0.5, "where": "dock"}
    assert built.structure()["params"] == {"x": 0.5, "where": "dock"}


def test_a_run_traces_the_values_it_was_built_with(tmp_path: Path) -> None:
    from harness_bt import FakeClock
    from harness_bt.testing.example import example_runtime
    from tests.harness_bt.helpers import runner_for

    path = tmp_path / "task.yaml"
    path.write_text(task(GO).replace("name: drive\n", "name: drive\nscene: hall\n"))
    clock = FakeClock()
    built = load_task(path, skills=example_skills(), params={"x": "0.5"})
    runner = runner_for(built, clock, example_runtime(clock))
    runner.tick()
    (event,) = runner.trace.of_kind("task")
    assert (event["data"]["scene"], event["data"]["params"]) == (
        "hall", {"x": 0.5, "where": "dock"})
    commands = [n["params"]["params"] for n in event["data"]["trees"]["work"]
                if n["params"].get("skill") == "navigate"]
    assert commands == [{"x_m": 0.5, "y_m": 0.5, "landmark": "near dock"}]
    runner.close()


def test_a_vector_parameter_becomes_a_list(tmp_path: Path) -> None:
    head = HEAD.replace("phases:\n", "  goal: {type: vector, size: 3, default: [0.5, 0, 0.05]}\n"
                        "phases:\n")
    text = task('{type: act_and_evaluate, name: go, skill: approach, params: {target: "{goal}"}}',
                head).replace("params:\n  x:", "params:\n  x:")
    text = text.replace("  x: {type: number, default: 1.6}\n", "").replace(
        "  where: {type: string, default: dock, choices: [dock, door]}\n", "")
    path = tmp_path / "task.yaml"
    path.write_text(text)
    assert check(tmp_path, text) == []
    assert tree_of(path)["params"] == {"target": [0.5, 0.0, 0.05]}
    assert tree_of(path, goal="[1, 2, 3]")["params"] == {"target": [1.0, 2.0, 3.0]}


def test_a_spec_keeps_its_placeholders_and_dumps_them(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(task(GO))
    spec = load_spec(path, skills=example_skills(), params={"x": "3"})
    assert spec.params["x"] == ParamSpec(type="number", default=1.6)
    assert spec.phases[0].tree["params"]["x_m"] == "{x}"  # type: ignore[union-attr]
    again = tmp_path / "again.yaml"
    again.write_text(dump_yaml(spec))
    assert load_spec(again, skills=example_skills()) == spec


# ---------------------------------------------------------------------- problems


def test_an_undeclared_placeholder_is_named_with_a_near_name(tmp_path: Path) -> None:
    assert errors(check(tmp_path, task(GO.replace('"{x}"', '"{xx}"')))) == [
        "task.yaml:7:77: error UNDECLARED_PARAM: '{xx}' names no parameter of the task; "
        "declared: where, x; did you mean 'x'? (at phases[0].tree.params.x_m); fix: declare it "
        "(params: {xx: {type: ..., default: ...}}) or fix the name"]  # and no follow-up noise


def test_a_substituted_value_of_the_wrong_type_is_reported_where_it_is_used(
        tmp_path: Path) -> None:
    tree = '{type: observe, name: look, objects: [cup], timeout_s: "{where}"}'
    assert errors(check(tmp_path, task(tree))) == [
        "task.yaml:7:66: error WRONG_TYPE: timeout_s of observe 'look' must be a number, got "
        "'dock' (at phases[0].tree.timeout_s); fix: write a number"]
    assert errors(check(tmp_path, task(GO.replace('"near {where}"', '"{x}"')))) == [
        "task.yaml:7:104: error INVALID_PARAMS: param landmark of skill 'navigate' in "
        "act_and_evaluate 'go': Input should be a valid string (got 1.6) (at "
        "phases[0].tree.params.landmark); fix: see NavigateParams(x_m: float (m), "
        "y_m: float (m), yaw_rad: float = 0.0 (rad), landmark: str = 'cup')"]


def test_a_bad_default_is_reported_at_the_default(tmp_path: Path) -> None:
    text = task(GO).replace("default: 1.6", "default: far")
    assert check(tmp_path, text) == [
        "task.yaml:3:30: error INVALID_PARAM_DEFAULT: the default of parameter 'x' must be a "
        "number: 'far' is not a number (at params.x.default); fix: write a number, e.g. "
        "default: 0.1"]  # and nothing about the uses: they are checked with a stand-in
    text = task(GO).replace("default: dock", "default: hall")
    assert check(tmp_path, text) == [
        "task.yaml:4:34: error INVALID_PARAM_DEFAULT: the default of parameter 'where' must be "
        "text, one of dock, door: hall is not one of dock, door (at params.where.default); fix: "
        "write text, one of dock, door, e.g. default: dock"]


def test_an_inconsistent_declaration_is_refused(tmp_path: Path) -> None:
    text = task(GO).replace("{type: number, default: 1.6}", "{type: number, default: 1.6, "
                            "min: 2, max: 1, size: 3}")
    assert check(tmp_path, text) == [
        "task.yaml:3:30: error INVALID_PARAM_DEFAULT: the default of parameter 'x' must be a "
        "number between 2 and 1: 1.6 is below the minimum 2.0 (at params.x.default); fix: write "
        "a number between 2 and 1, e.g. default: 0.1",
        "task.yaml:3:35: error INVALID_PARAM: parameter 'x': min 2 is above max 1 (at "
        "params.x.min); fix: swap them",
        "task.yaml:3:51: error INVALID_PARAM: parameter 'x' is number: 'size' applies to vector "
        "parameters only (at params.x.size); fix: remove 'size', or change the type"]
    text = task(GO).replace("{type: number, default: 1.6}", "{type: numbr}")
    assert check(tmp_path, text) == [
        "task.yaml:3:13: error WRONG_TYPE: type of parameter 'x' must be one of 'object', "
        "'string', 'number', 'integer', 'boolean' or 'vector', got 'numbr' (at params.x.type); "
        "fix: write one of 'object', 'string', 'number', 'integer', 'boolean' or 'vector'"]
    text = task(GO).replace("{type: number, default: 1.6}", "{type: number, deafult: 1}")
    assert check(tmp_path, text)[0].startswith(
        "task.yaml:3:21: error UNKNOWN_FIELD: unknown field 'deafult' of parameter 'x'; known: "
        "type, default, description, choices, min, max, size; did you mean 'default'?")


def test_an_unused_parameter_is_a_warning(tmp_path: Path) -> None:
    text = task(GO.replace('"near {where}"', "near"))
    assert check(tmp_path, text) == [
        "task.yaml:4:3: warning UNUSED_PARAM: parameter 'where' is declared but no tree uses it "
        "(as '{where}') (at params.where); fix: use it as '{where}' in a node's value, or "
        "remove it"]


def test_a_given_value_of_the_wrong_type_names_the_parameter_its_type_and_the_text(
        tmp_path: Path) -> None:
    assert check(tmp_path, task(GO), {"x": "fast", "where": "hall"}) == [
        "--set x=fast: error INVALID_PARAM_VALUE: parameter 'x' is number (a number); got "
        "'fast': 'fast' is not a number; fix: give a number, e.g. --set x=0.1",
        "--set where=hall: error INVALID_PARAM_VALUE: parameter 'where' is string (text, one of "
        "dock, door); got 'hall': hall is not one of dock, door; fix: give text, one of dock, "
        "door, e.g. --set where=dock"]


def test_a_given_name_that_is_not_declared_is_refused(tmp_path: Path) -> None:
    assert check(tmp_path, task(GO), {"wehre": "door"}) == [
        "--set wehre=door: error UNDECLARED_PARAM: the task declares no parameter 'wehre'; its "
        "parameters: where, x; did you mean 'where'?; fix: give one of the declared "
        "parameters, or declare it in the task"]


def test_a_required_parameter_without_a_value_is_refused(tmp_path: Path) -> None:
    text = task(GO).replace("{type: number, default: 1.6}", "{type: number}")
    assert check(tmp_path, text) == [
        "task.yaml:3:3: error MISSING_PARAM_VALUE: parameter 'x' (a number) has no default and "
        "no value was given (at params.x); fix: give it (--set x=0.1), or declare a default"]
    assert check(tmp_path, text, {"x": "1.0"}) == []
    with pytest.raises(SpecError, match="MISSING_PARAM_VALUE"):
        load_task(tmp_path / "task.yaml", skills=example_skills())


def test_a_placeholder_in_a_blackboard_port_is_refused(tmp_path: Path) -> None:
    text = task('{skill: grasp, name: close, inputs: {object_id: "{where}"}}')
    assert errors(check(tmp_path, text)) == [
        "task.yaml:7:59: error PARAM_IN_KEY_PORT: 'inputs' names blackboard keys: '{where}' is "
        "not substituted there (at phases[0].tree.inputs.object_id); fix: write the key "
        "plainly, or give the value in a value port (params: {...: '{where}'})"]


def test_a_placeholder_in_an_expression_is_refused(tmp_path: Path) -> None:
    text = task('{type: wait_for, name: gone, when: "not exists(world.{where})"}')
    found = errors(check(tmp_path, text))
    assert found[0] == (
        "task.yaml:7:46: error PARAM_IN_KEY_PORT: 'when' is an expression: '{where}' is not "
        "substituted there (at phases[0].tree.when); fix: parameters are not substituted in "
        "expressions: write the object id or the key itself")
    assert found[1].startswith("task.yaml:7:46: error INVALID_EXPRESSION: when of wait_for "
                               "'gone': unexpected character '{'")


# ---------------------------------------------------------------------- subtree inputs

SUBTREE_TASK = """\
name: pick
params:
  target: {type: object, default: cup}
subtrees:
  pick_object:
    type: sequence
    name: pick_object
    children:
      - {type: observe, name: look, objects: ["{obj}"], record: plan}
      - {skill: grasp, name: close, params: {object_id: "{obj}"}, snapshot: plan}
phases:
  - id: work
    tree: USE
""" + REST


def test_a_subtree_input_comes_from_the_use_and_each_use_gets_its_copy(tmp_path: Path) -> None:
    text = SUBTREE_TASK.replace("USE", "{type: sequence, name: both, children: ["
                                '{subtree: pick_object, name: a, values: {obj: "{target}"}}, '
                                "{subtree: pick_object, name: b, values: {obj: tray}}]}")
    assert check(tmp_path, text) == []
    a, b = tree_of(tmp_path / "task.yaml", target="bottle")["children"]
    assert (a["children"][0]["objects"], a["children"][1]["params"]) == (
        ["bottle"], {"object_id": "bottle"})
    assert (b["children"][0]["objects"], b["children"][1]["params"]) == (
        ["tray"], {"object_id": "tray"})
    task_ = load_task(tmp_path / "task.yaml", skills=example_skills())
    assert task_.blackboard == {}  # an input only: no blackboard key for it


def test_a_subtree_input_falls_back_to_the_tasks_parameter(tmp_path: Path) -> None:
    text = SUBTREE_TASK.replace("{obj}", "{target}").replace("USE", "{subtree: pick_object}")
    assert check(tmp_path, text) == []
    tree = tree_of(tmp_path / "task.yaml", target="bottle")
    assert tree["children"][0]["objects"] == ["bottle"]


def test_a_remap_to_a_parameter_passes_its_value(tmp_path: Path) -> None:
    text = SUBTREE_TASK.replace("USE", "{subtree: pick_object, remap: {obj: target}}")
    assert check(tmp_path, text) == []
    assert tree_of(tmp_path / "task.yaml")["children"][0]["objects"] == ["cup"]


def test_an_input_no_use_gives_is_named_at_the_use_and_where_it_is_used(tmp_path: Path) -> None:
    text = SUBTREE_TASK.replace("USE", "{subtree: pick_object}")
    assert errors(check(tmp_path, text)) == [
        "task.yaml:9:47: error UNDECLARED_PARAM: '{obj}' in subtree 'pick_object' is not given "
        "by its use at task.yaml:13:11 nor a task parameter (at "
        "subtrees.pick_object.children[0].objects[0]); fix: give it where the subtree is used "
        "(values: {obj: ...}), or declare 'obj' under the task's 'params:'",
        "task.yaml:10:57: error UNDECLARED_PARAM: '{obj}' in subtree 'pick_object' is not given "
        "by its use at task.yaml:13:11 nor a task parameter (at "
        "subtrees.pick_object.children[1].params.object_id); fix: give it where the subtree is "
        "used (values: {obj: ...}), or declare 'obj' under the task's 'params:'",
        "task.yaml:13:21: error MISSING_SUBTREE_INPUT: subtree 'pick_object' needs input 'obj' "
        "('{obj}' at task.yaml:9:47, task.yaml:10:57) and this use does not give it (at "
        "phases[0].tree.subtree); fix: add values: {obj: ...} to this use (a value, or "
        "'{param}' for a task parameter)"]


def test_a_use_value_naming_no_parameter_is_reported_at_the_value(tmp_path: Path) -> None:
    text = SUBTREE_TASK.replace("USE", '{subtree: pick_object, values: {obj: "{tagret}"}}')
    assert errors(check(tmp_path, text)) == [
        "task.yaml:13:48: error UNDECLARED_PARAM: '{tagret}' in subtree use 'pick_object' names "
        "no parameter or input here; known: target; did you mean 'target'? (at "
        "phases[0].tree.values.obj); fix: declare it under the task's 'params:', or fix the "
        "name"]


def test_a_copys_value_of_the_wrong_type_is_reported_in_the_subtree(tmp_path: Path) -> None:
    text = SUBTREE_TASK.replace("USE", "{subtree: pick_object, values: {obj: 3}}")
    assert errors(check(tmp_path, text)) == [
        "task.yaml:10:57: error INVALID_PARAMS: param object_id of skill 'grasp' in skill_action "
        "'close': Input should be a valid string (got 3) (at "
        "subtrees.pick_object.children[1].params.object_id); fix: see ObjectParams(object_id: "
        "str)"]


def test_an_included_librarys_subtree_takes_inputs_too(tmp_path: Path) -> None:
    library = SUBTREE_TASK.split("subtrees:\n")[1].split("phases:\n")[0]
    (tmp_path / "lib.yaml").write_text("subtrees:\n" + library)
    text = SUBTREE_TASK.replace("subtrees:\n" + library, "includes: [lib.yaml]\n").replace(
        "USE", '{subtree: pick_object, values: {obj: "{target}"}}')
    assert check(tmp_path, text) == []
    assert tree_of(tmp_path / "task.yaml", target="tray")["children"][1]["params"] == {
        "object_id": "tray"}
    text = text.replace('values: {obj: "{target}"}', "values: {}")
    found = errors(check(tmp_path, text))
    assert [p.split(": error ")[1].split(":")[0] for p in found] == [
        "MISSING_SUBTREE_INPUT", "UNDECLARED_PARAM", "UNDECLARED_PARAM"]  # the task's file first
    assert found[1].startswith(
        "lib.yaml:6:47: error UNDECLARED_PARAM: '{obj}' in subtree 'pick_object' is not given "
        "by its use at task.yaml:7:11 nor a task parameter")


# ---------------------------------------------------------------------- the fixture pair


@pytest.mark.parametrize("params", [None, {"target": "green_cube", "height": "0.1"},
                                    {"height": 0.25}])
def test_the_yaml_task_and_its_python_twin_are_equal_for_any_values(
        params: dict[str, Any] | None) -> None:
    from_yaml = load_task(PICK_YAML, params=params)
    from_python = load_task(PICK_PY, params=params)
    assert from_yaml.structure() == from_python.structure()
    assert from_yaml.scene == from_python.scene == "pick_cube"
    expected = {"target": "red_cube", "height": 0.12, **{
        k: float(v) if k == "height" else v for k, v in (params or {}).items()}}
    assert from_yaml.params == from_python.params == expected


def test_pick_cube_yaml_and_python_stay_equal() -> None:
    yaml_task = load_task(ROOT / "trees" / "pick_cube.yaml")
    python_task = load_task(ROOT / "trees" / "pick_cube.py")
    assert yaml_task.structure() == python_task.structure()


def test_values_the_python_twin_refuses_are_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_task(PICK_PY, params={"height": "tall", "tagret": "x"})
    assert caught.value.details["problems"] == [
        "params height=tall: error INVALID_PARAM_VALUE: parameter 'height' is number (a "
        "number); got 'tall': 'tall' is not a number; fix: give a number, e.g. params "
        "height=0.1"]
    with pytest.raises(SpecError) as caught:
        load_task(PICK_PY, params={"tagret": "x"})
    assert caught.value.details["problems"] == [
        "params tagret=x: error UNDECLARED_PARAM: the task declares no parameter 'tagret'; "
        "its parameters: height, target; did you mean 'target'?; fix: declare it as a keyword "
        "parameter of task() (or in PARAMS)"]


def test_a_python_task_declares_its_parameters_in_params(tmp_path: Path) -> None:
    source = PICK_PY.read_text().replace(
        'def task(target: str = "red_cube", height: float = 0.12) -> Task:',
        'PARAMS = {"target": {"type": "object", "choices": ["red_cube", "green_cube"]},\n'
        '          "height": {"type": "number", "default": 0.12, "max": 0.3}}\n\n\n'
        "def task(target: str, height: float) -> Task:")
    path = tmp_path / "pick.py"
    path.write_text(source)
    assert load_task(path, params={"target": "green_cube"}).params == {
        "target": "green_cube", "height": 0.12}
    with pytest.raises(SpecError, match="MISSING_PARAM_VALUE: parameter 'target'"):
        load_task(path)
    with pytest.raises(SpecError, match="blue_cube is not one of red_cube, green_cube"):
        load_task(path, params={"target": "blue_cube"})
    path.write_text(source.replace("def task(target: str, height: float)", "def task(target: str)"))
    with pytest.raises(DefinitionError, match=r"task\(\) does not take every parameter PARAMS "
                       r"declares \(height, target\): got an unexpected keyword argument"):
        load_task(path, params={"target": "green_cube"})


def test_a_core_task_substitutes_its_values_into_node_dict_trees() -> None:
    from harness_bt import Final, Phase, Task, on
    from harness_bt.authoring import build_task, spec_from_task

    def made(objects: list[str]) -> Task:
        return new_task("look", [
            Phase("work", {"type": "observe", "name": "look", "objects": objects},
                  transitions=[on("succeeded", "done"), on("failed", "aborted_work")]),
            Final("done"), Final("aborted_work")], params={"target": "cup"})

    task_ = made(["{target}"])
    assert task_.structure()["trees"]["work"][0]["params"]["objects"] == ["cup"]
    spec = spec_from_task(task_)  # the values become declarations with those defaults
    assert spec.params == {"target": ParamSpec(type="string", default="cup")}
    assert build_task(spec, skills=example_skills()).structure() == task_.structure()
    with pytest.raises(DefinitionError, match=r"phase work \(objects\[0\]\): error "
                       "UNDECLARED_PARAM: '{targte}' names no parameter of the task; its "
                       "parameters: target; did you mean 'target'?"):
        made(["{targte}"]).build_trees()
