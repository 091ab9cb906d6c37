"""The task schema checks each skill's params as the loader does: a wrong param (unknown,
misspelt, out of range, of the wrong type, not one of the choices, missing) fails the JSON
Schema exactly when it fails the loader, with the loader's code; the library's tasks pass
both."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_bt.authoring import check_file
from harness_bt.authoring.schema import task_schema
from skills.contracts import skill_registry

ROOT = Path(__file__).resolve().parents[3]
SKILLS = skill_registry()
SCHEMA = task_schema(skills=SKILLS)
LIBRARY_SCHEMA = task_schema(skills=SKILLS, library=True)

LIFT: dict[str, Any] = {"type": "act_and_evaluate", "name": "raise", "skill": "lift",
                        "params": {"object_id": "red_cube", "height_m": 0.1},
                        "objects": {"object_pose": "red_cube"}}


def task(node: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "phases": [
        {"id": "lift", "tree": node,
         "transitions": [{"event": "succeeded", "target": "done"},
                         {"event": "failed", "target": "done"}]},
        {"id": "done", "kind": "final"}]}


def changed(path: tuple[Any, ...], value: Any = None, *, delete: bool = False,
            node: dict[str, Any] = LIFT) -> dict[str, Any]:
    out = copy.deepcopy(node)
    parent = out
    for part in path[:-1]:
        parent = parent.setdefault(part, {})
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


def schema_errors(data: Any) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]


def loader_codes(data: Any, tmp_path: Path) -> list[str]:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return [p.code for p in check_file(path, skills=SKILLS).report.errors]


CASES = [
    ("the running node", LIFT, []),
    ("a misspelt param", changed(("params", "heigth_m"), 0.1), ["UNKNOWN_PARAM"]),
    ("a height out of range", changed(("params", "height_m"), 0.5), ["INVALID_PARAMS"]),
    ("a height of no number", changed(("params", "height_m"), "high"), ["INVALID_PARAMS"]),
    ("an empty object id", changed(("params", "object_id"), ""), ["INVALID_PARAMS"]),
    ("a required param nowhere", changed(("objects",), delete=True), ["MISSING_PARAM"]),
    ("a required param from the blackboard",
     {"type": "sequence", "name": "aim_and_raise", "children": [
         {"type": "derive_pose", "name": "aim", "object": "red_cube", "output": "pose"},
         changed(("inputs",), {"object_pose": "pose"}, node=changed(("objects",), delete=True))]},
     []),
    ("an object for no param", changed(("objects", "pose"), "red_cube"), ["UNKNOWN_PARAM"]),
    ("a place onto no choice",
     {"type": "act_and_evaluate", "name": "put", "skill": "place",
      "params": {"object_id": "red_cube", "target_id": "tray", "onto": "beside"},
      "objects": {"target_pose": "tray"}}, ["INVALID_PARAMS"]),
    ("a leaf by skill with a wrong param",
     {"skill": "release", "name": "open", "params": {"width_m": 0.2}}, ["INVALID_PARAMS"]),
    ("a skill_action with an unknown param",
     {"type": "skill_action", "name": "home", "skill": "home", "params": {"speed": 1}},
     ["UNKNOWN_PARAM"]),
    ("a skill_action home with every default", {"type": "skill_action", "name": "home",
                                                "skill": "home"}, []),
]


@pytest.mark.parametrize(("label", "node", "codes"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_param_fails_the_schema_as_it_fails_the_loader(
        label: str, node: dict[str, Any], codes: list[str], tmp_path: Path) -> None:
    data = task(node)
    assert loader_codes(data, tmp_path) == codes, label
    assert (schema_errors(data) == []) == (codes == []), (label, schema_errors(data))


def test_the_schema_gives_each_skill_its_params_types_ranges_and_choices() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    lift = SCHEMA["$defs"]["Params_lift"]
    assert lift["additionalProperties"] is False
    assert "required" not in lift  # a required param may come from objects or inputs
    height = lift["properties"]["height_m"]
    assert height["default"] == 0.12
    assert height["anyOf"][0] == {"type": "number", "minimum": 0.03, "maximum": 0.3}
    onto = SCHEMA["$defs"]["Params_place"]["properties"]["onto"]["anyOf"][0]
    assert onto["enum"] == ["inside", "top", "pose"]


@pytest.mark.parametrize("path", sorted((ROOT / "trees").glob("*.yaml")), ids=lambda p: p.name)
def test_every_library_task_passes_the_schema_with_the_skills(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    schema = SCHEMA if "phases" in data else LIBRARY_SCHEMA
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]
    assert errors == []


def test_without_skills_the_schema_leaves_params_open() -> None:
    from harness_bt.nodes import NodeRegistry
    from harness_bt.skill import SkillRegistry

    bare = task_schema(NodeRegistry(), SkillRegistry())
    assert not any(k.startswith("Params_") for k in bare["$defs"])


def test_an_unknown_node_type_lists_no_internal_type(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task({"type": "recovery", "name": "r"})))
    (problem,) = check_file(path, skills=SKILLS).report.errors
    assert problem.code == "UNKNOWN_NODE_TYPE"
    known = problem.message.partition("known: ")[2].partition(";")[0].split(", ")
    assert "recover" in known and "recovery_gate" not in known and "running" not in known
    assert "did you mean 'recover'?" in problem.message
    assert "harness nodes lists them" in problem.fix


def loader_accepts(data: Any) -> bool:
    from harness_bt.authoring import Document
    from harness_bt.authoring.registries import Registries
    from harness_bt.authoring.validate.check import check_document
    from harness_bt.nodes import NodeRegistry

    registries = Registries(nodes=NodeRegistry(), skills=SKILLS)
    return not check_document(Document("task.yaml", copy.deepcopy(data)), registries
                              ).report.errors


PARAM_NAMES = st.sampled_from(["height_m", "speed_mps", "settle_s", "object_width_m",
                               "object_id", "object_pose", "heigth_m", "force"])
PARAM_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2),
                         st.floats(-1.0, 1.0, allow_nan=False), st.text(max_size=3),
                         st.lists(st.floats(0.0, 1.0), max_size=8))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(PARAM_NAMES, PARAM_VALUES, max_size=3),
       drop_objects=st.booleans())
def test_schema_and_loader_agree_on_random_params_of_a_skill(changes: dict[str, Any],
                                                             drop_objects: bool) -> None:
    node = copy.deepcopy(LIFT)
    node["params"].update(changes)
    if drop_objects:
        del node["objects"]
    data = task(node)
    assert (schema_errors(data) == []) == loader_accepts(data), (changes, drop_objects)
