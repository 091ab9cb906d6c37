"""``harness validate`` knows the task's scene: every object a task names (observe lists,
skill parameters, objects / premises, world names in guards, objects passed into subtrees)
is checked against the scene the task names, with the scene's objects and a did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.authoring import check_file
from harness_bt.authoring.objects import object_uses
from harness_bt.cli import main

ROOT = Path(__file__).resolve().parents[3]
TREES = ROOT / "trees"


def pick_with(tmp_path: Path, old: str, new: str) -> Path:
    text = (TREES / "pick.yaml").read_text().replace("includes: [steps.yaml]",
                                                     f"includes: [{TREES / 'steps.yaml'}]")
    assert old in text
    path = tmp_path / "task.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_task_naming_an_object_its_scene_lacks_is_refused_with_the_scenes_objects_listed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = pick_with(tmp_path, 'objects: ["{target}"]', 'objects: ["{target}", yellow_can]')
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}:24:68: error UNKNOWN_OBJECT: observe 'find_target' (objects) names object "
        "'yellow_can', which scene 'pick_cube' does not have; its objects: red_cube, "
        "green_cube, blue_cube (at phases[0].tree.objects[1]); fix: name one of the scene's "
        "objects, or add the object to the scene (or run the task on a scene that has it)",
        f"{path}: 1 error(s), 0 warning(s)"]


def test_an_object_passed_into_a_subtree_is_reported_once_where_it_is_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = pick_with(tmp_path, 'subtree: approach, values: {obj: "{target}"}',
                     "subtree: approach, values: {obj: red_cub}")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert out[0].startswith(
        f"{path}:30:11: error UNKNOWN_OBJECT: subtree 'approach' used here is given object "
        f"'red_cub' (its observe 'look' (objects) at {TREES / 'steps.yaml'}:18:47), which "
        "scene 'pick_cube' does not have; its objects: red_cube, green_cube, blue_cube; did "
        "you mean 'red_cube'?")


def test_skill_parameters_and_world_names_in_guards_are_checked_all_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (TREES / "sort.yaml").read_text().replace(
        "includes: [steps.yaml]", f"includes: [{TREES / 'steps.yaml'}]").replace(
        "where: \"it.in != '{container}'\"",
        "where: \"it.in != '{container}' and world.red_cube_9.in == null\"").replace(
        "objects: [red_cube_1, red_cube_2, red_cube_3,",
        "objects: [red_cube_1, red_cube_2, blue_cub,")
    path = tmp_path / "sort.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "error UNKNOWN_OBJECT: for_each 'reds' (world.red_cube_9) names object " \
           "'red_cube_9', which scene 'sort' does not have" in out
    assert "error UNKNOWN_OBJECT: observe 'look' (objects) names object " \
           "'blue_cub', which scene 'sort' does not have" in out
    assert "did you mean 'blue_cube'?" in out
    assert out.count("UNKNOWN_OBJECT") == 2


@pytest.mark.parametrize("name", ["pick", "pick_and_place", "place_at", "sort", "stack",
                                  "clear_table"])
def test_every_object_a_library_task_names_is_an_object_of_its_scene(name: str) -> None:
    from harness_bt.authoring.scenes import load_scene

    checked = check_file(TREES / f"{name}.yaml")
    scene = load_scene(checked.spec.scene, params=checked.params)
    uses = object_uses(checked)
    assert len(uses) > 5  # the trees of steps.yaml are read through their uses
    assert {u.name for u in uses} <= set(scene.spec.objects)


def test_a_parameter_naming_an_object_but_not_declared_one_is_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = pick_with(tmp_path, "target: {type: object, default: red_cube",
                     "target: {type: string, default: red_cube")
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path}:13:3: warning PARAM_NOT_AN_OBJECT: parameter 'target' is declared string but "
        f"names an object (observe 'find_target' (objects) at {path}:24:56): its values are "
        "not checked against the scene (at params.target); fix: declare it 'target: {type: "
        "object, ...}'",
        f"{path}: OK (pick: 11 phases, 1 warning(s))"]
    assert main(["validate", str(path), "--strict"]) == 1
