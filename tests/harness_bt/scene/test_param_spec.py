"""Task and scene documents declare their parameters with one ParamSpec, checked by the same
rules (type, choices, range, size)."""

from __future__ import annotations

from pathlib import Path

from harness_bt.authoring.model import ParamSpec as TaskParamSpec
from harness_bt.authoring.model import TaskSpec
from harness_bt.authoring.scenes import check_scene, load_scene
from harness_bt.param_spec import ParamSpec
from harness_bt.scene.model import SceneSpec

SCENE = """\
name: mine
instruction: lift the {target} by {height} m
params:
  target: {type: object, default: red_cube, choices: [red_cube, can]}
  height: {type: number, default: 0.05, min: 0.02, max: 0.2}
  hold: {type: integer, default: 1}
objects:
  red_cube: {shape: cube, size: 0.04, colour: red}
  can: {shape: cylinder, size: [0.05, 0.05, 0.08], colour: [0.9, 0.5, 0.1]}
  box: {shape: box, size: [0.08, 0.08, 0.04], colour: blue}
success:
  when: lifted(target, height) and still(target, hold)
"""


def test_task_and_scene_documents_declare_parameters_with_the_one_param_spec() -> None:
    assert TaskParamSpec is ParamSpec
    assert SceneSpec.model_fields["params"].annotation == dict[str, ParamSpec]
    assert TaskSpec.model_fields["params"].annotation.__args__[1] is ParamSpec  # type: ignore[union-attr]


def test_a_scene_parameter_is_checked_like_a_task_parameter(tmp_path: Path) -> None:
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE)
    scene = load_scene(path, params={"height": 0.1, "hold": 2})
    assert scene.params == {"target": "red_cube", "height": 0.1, "hold": 2}
    _, report = check_scene(path, params={"height": 0.5, "target": "box"})
    assert [str(p) for p in report.errors] == [
        "--set target: error INVALID_PARAM_VALUE: scene parameter 'target' is an object id, "
        "one of red_cube, can, set to 'box': box is not one of red_cube, can (at "
        "params.target); fix: set an object id, one of red_cube, can: --set target=...",
        "--set height: error INVALID_PARAM_VALUE: scene parameter 'height' is a number "
        "between 0.02 and 0.2, set to 0.5: 0.5 is above the maximum 0.2 (at params.height); "
        "fix: set a number between 0.02 and 0.2: --set height=..."]


def test_a_scene_parameter_without_a_type_is_refused_like_a_task_one(tmp_path: Path) -> None:
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE.replace("{type: integer, default: 1}", "{default: 1}"))
    _, report = check_scene(path)
    assert [(p.code, p.path) for p in report.errors] == [("MISSING_FIELD", "params.hold.type")]
