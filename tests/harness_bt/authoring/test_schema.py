"""The JSON Schema and the loader cannot drift apart: the committed schema is the generated
one, and a document passes the schema exactly when it passes the loader's structural checks
(over hand-written documents and over random mutations of the running example)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_bt.authoring import Document
from harness_bt.authoring.model import PLACEHOLDER_PATTERN
from harness_bt.authoring.registries import Registries
from harness_bt.authoring.schema import BUILTIN_SCHEMA, builtin_schema, render_schema, task_schema
from harness_bt.authoring.validate.structure import check_task
from harness_bt.nodes import NodeRegistry
from harness_bt.skill import SkillRegistry
from harness_bt.testing.example_spec import FETCH_CUP_YAML
from tests.harness_bt.authoring.test_validate import CASES

REGISTRIES = Registries(nodes=NodeRegistry(), skills=SkillRegistry())
VALIDATOR = jsonschema.Draft202012Validator(builtin_schema())
EXAMPLE = yaml.safe_load(FETCH_CUP_YAML.read_text())
READER_CODES = ("YAML_", "EMPTY_FILE")  # problems of the text, not of the data


def schema_accepts(data: Any) -> bool:
    try:  # a document JSON cannot hold (.inf, .nan) is outside the schema's reach
        json.dumps(data, allow_nan=False)
    except ValueError:
        return False
    return VALIDATOR.is_valid(data)


def loader_accepts(data: Any) -> bool:
    _, problems = check_task(Document("doc.yaml", copy.deepcopy(data)), REGISTRIES)
    return not problems


def test_the_committed_schema_is_the_generated_one() -> None:
    assert BUILTIN_SCHEMA.read_text() == render_schema(builtin_schema()), (
        "the task format changed: run `harness schema --builtin -o "
        "harness_bt/authoring/task.schema.json` and commit the result")
    jsonschema.Draft202012Validator.check_schema(builtin_schema())


def test_the_schema_names_every_node_type_and_the_known_skills() -> None:
    from harness_bt.testing.example import example_skills

    schema = task_schema(NodeRegistry(), example_skills())
    node_types = {d["properties"]["type"]["const"] for k, d in schema["$defs"].items()
                  if k.startswith("Node_") and "type" in d["properties"]}
    assert node_types == set(NodeRegistry().names())
    skill = schema["$defs"]["Node_skill_leaf"]["properties"]["skill"]
    assert skill["enum"] == ["align", "approach", "grasp", "navigate", "place", "release"]
    assert schema["$defs"]["Node_retry"]["properties"]["attempts"] == {
        "default": 3, "description": "runs in all, the first included", "title": "Attempts",
        "anyOf": [{"type": "integer"},  # a value, or a task parameter / subtree input
                  {"type": "string", "pattern": PLACEHOLDER_PATTERN,
                   "description": "a task parameter or subtree input: {name}"}]}


def _corpus() -> list[tuple[str, Any]]:
    docs = [("running example", EXAMPLE)]
    for code, text, _ in CASES:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if code.startswith(READER_CODES):
            continue
        docs.append((code, data))
    return docs


@pytest.mark.parametrize(("label", "data"), _corpus(), ids=[c[0] for c in _corpus()])
def test_schema_and_loader_agree_on_every_hand_written_document(label: str, data: Any) -> None:
    assert schema_accepts(data) == loader_accepts(data), label


def _paths(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*path, i))
    return out


EXAMPLE_PATHS = _paths(EXAMPLE)[1:]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.floats(allow_nan=True),
                   st.text(max_size=6), st.sampled_from(["sequence", "retry", "final",
                                                         "succeeded", "a/b", "grasp", ""]),
                   st.lists(st.integers(0, 3), max_size=2), st.just({}),
                   st.just({"type": "success", "name": "x"}))


def _mutate(data: Any, path: tuple[Any, ...], how: str, value: Any, key: str) -> Any:
    data = copy.deepcopy(data)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "replace":
        parent[last] = value
    elif how == "delete":
        if isinstance(parent, dict):
            del parent[last]
        else:
            parent.pop(last)
    elif isinstance(parent[last], dict):  # add a key
        parent[last][key] = value
    else:
        parent[last] = value
    return data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(EXAMPLE_PATHS), how=st.sampled_from(["replace", "delete", "add"]),
       value=VALUES, key=st.sampled_from(["kind", "memroy", "type", "name", "guard", "when",
                                          "final", "reason", "extra"]))
def test_schema_and_loader_agree_on_mutations_of_the_running_example(
        path: tuple[Any, ...], how: str, value: Any, key: str) -> None:
    data = _mutate(EXAMPLE, path, how, value, key)
    if isinstance(value, float) and math.isnan(value) and how != "delete":
        assert not schema_accepts(data) and not loader_accepts(data)
        return
    assert schema_accepts(data) == loader_accepts(data), (path, how, value, key)


PARAMS_DOC = yaml.safe_load((Path(__file__).parent / "fixtures" / "params_pick.yaml").read_text())


def _with(path: tuple[Any, ...], value: Any) -> Any:
    return _mutate(PARAMS_DOC, path, "replace", value, "")


@pytest.mark.parametrize(("label", "data", "accepted"), [
    ("a task with parameters", PARAMS_DOC, True),
    ("a parameter of an unknown type", _with(("params", "height", "type"), "float"), False),
    ("an unknown field of a parameter", _with(("params", "height"), {"type": "number",
                                                                      "deafult": 1}), False),
    ("a parameter name that is no identifier",
     _with(("params",), {"the-target": {"type": "object"}}), False),
    ("a vector of no numbers", _with(("params", "height"), {"type": "vector", "size": 0}),
     False),
    ("no choices", _with(("params", "height"), {"type": "number", "choices": []}), False),
    ("an empty scene", _with(("scene",), ""), False),
    ("a value port given as a parameter",
     _with(("phases", 0, "tree", "timeout_s"), "{wait}"), True),
    ("a value port given as text around a parameter",
     _with(("phases", 0, "tree", "timeout_s"), "{wait} s"), False),
    ("a blackboard port never takes a parameter's form",
     _with(("phases", 0, "tree", "record"), 3), False),
])
def test_schema_and_loader_agree_on_parameters(label: str, data: Any, accepted: bool) -> None:
    assert (schema_accepts(data), loader_accepts(data)) == (accepted, accepted), label


def test_the_schema_documents_scene_and_params() -> None:
    properties = builtin_schema()["properties"]
    assert properties["scene"]["anyOf"][0] == {"minLength": 1, "type": "string"}
    assert properties["params"]["propertyNames"] == {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}
    assert properties["params"]["patternProperties"] == {
        "^[A-Za-z_][A-Za-z0-9_]*$": {"$ref": "#/$defs/ParamSpec"}}
    assert builtin_schema()["$defs"]["ParamSpec"]["properties"]["type"]["enum"] == [
        "object", "string", "number", "integer", "boolean", "vector"]
