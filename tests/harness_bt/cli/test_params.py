"""``--set NAME=VALUE`` and ``--scene``: parsed, checked against the task's declarations, and
handed to the runtime (``RunOptions.params`` / ``.scene``) and the run's summary. The runs here
stop before a simulator starts: the part that would tick is replaced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_bt.cli import main
from harness_bt.cli import run as run_cli
from harness_bt.run.episodes import RunReport
from harness_bt.runtime.episodes import RunOptions

PICK = Path(__file__).resolve().parents[1] / "authoring" / "fixtures" / "params_pick.yaml"


def err(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().err.split())


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[RunOptions]:
    """The options each run would start with (no simulator is started)."""
    seen: list[RunOptions] = []

    def fake(task: Any, options: RunOptions, *args: Any, **kwargs: Any) -> RunReport:
        seen.append(options)
        return RunReport(task.name, (), None, options)

    monkeypatch.setattr(run_cli, "_run", fake)
    return seen


def test_validate_takes_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(PICK), "--set", "target=green_cube", "--set",
                 "height=0.2"]) == 0
    assert capsys.readouterr().out == f"{PICK}: OK (params_pick: 5 phases)\n"


def test_validate_names_a_value_that_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(PICK), "--set", "height=0.5", "--set", "tagret=x"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "--set height=0.5: error INVALID_PARAM_VALUE: parameter 'height' is number (a number "
        "between 0 and 0.3); got '0.5': 0.5 is above the maximum 0.3; fix: give a number "
        "between 0 and 0.3, e.g. --set height=0.1",
        "--set tagret=x: error UNDECLARED_PARAM: the task declares no parameter 'tagret'; its "
        "parameters: height, target; did you mean 'target'?; fix: give one of the declared "
        "parameters, or declare it in the task",
        f"{PICK}: 2 error(s), 0 warning(s)"]


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "height"], "INVALID_OPTION: --set 'height' is not NAME=VALUE; write e.g. "
                          "--set target=green_cube --set height=0.1"),
    (["--set", "=1"], "INVALID_OPTION: --set '=1' is not NAME=VALUE"),
    (["--set", "height=0.1", "--set", "height=0.2"],
     "INVALID_OPTION: --set height is given twice ('0.1' and '0.2'); give it once"),
])
def test_a_malformed_set_is_a_clear_error(args: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(PICK), *args]) == 1
    assert message in err(capsys)


def test_run_hands_the_values_and_the_tasks_scene_to_the_runtime(
        started: list[RunOptions], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(PICK), "--set", "target=green_cube", "--set", "height=0.1",
                 "--json"]) == 1  # no episode ran
    (options,) = started
    assert (options.scene, dict(options.params)) == (
        "pick_cube", {"target": "green_cube", "height": 0.1})
    summary = json.loads(capsys.readouterr().out)
    assert (summary["task"], summary["scene"], summary["params"]) == (
        "params_pick", "pick_cube", {"target": "green_cube", "height": 0.1})


def test_a_scene_that_is_not_there_is_refused_before_a_runtime_starts(
        started: list[RunOptions], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(PICK), "--scene", "scenes/nowhere.yaml", "--json"]) == 1
    assert started == []
    assert "SCENE_NOT_FOUND: no scene file at 'scenes/nowhere.yaml'" in err(capsys)


def test_run_scene_overrides_the_tasks_scene(started: list[RunOptions]) -> None:
    main(["run", str(PICK), "--scene", "pick_and_place", "--json"])
    assert started[0].scene == "pick_and_place"
    assert dict(started[0].params) == {"target": "red_cube", "height": 0.12}  # the defaults


TREES = Path(__file__).resolve().parents[3] / "trees"


@pytest.mark.parametrize(("command", "task", "message"), [
    ("run", "clear_table.yaml", "UNKNOWN_GROUP: for_each 'cubes': scene 'sort' has no group "
     "'to_clear'; its groups: reds"),
    ("run", "pick.yaml", "subtree 'approach' used here is given object 'red_cube' (its "
     "observe 'look' (objects) at"),
    ("eval", "pick.yaml", "which scene 'sort' does not have; its objects: red_cube_1, "
     "red_cube_2, red_cube_3, green_cube, blue_cube, tray; did you mean 'red_cube_3'?"),
])
def test_a_scene_lacking_the_tasks_objects_or_groups_is_refused_before_a_run(
        started: list[RunOptions], capsys: pytest.CaptureFixture[str], tmp_path: Path,
        command: str, task: str, message: str) -> None:
    out = ["--out", str(tmp_path / "store")] if command == "eval" else []
    assert main([command, str(TREES / task), "--scene", "sort", *out]) == 1
    assert started == [] and not (tmp_path / "store").exists()
    assert message in err(capsys)


def test_a_task_naming_an_object_its_own_scene_lacks_is_refused_before_a_run(
        started: list[RunOptions], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    task = tmp_path / "pick_can.yaml"
    task.write_text((TREES / "pick.yaml").read_text().replace(
        'objects: ["{target}"]', 'objects: ["{target}", yellow_can]', 1).replace(
        "includes: [steps.yaml]", f"includes: [{TREES / 'steps.yaml'}]"))
    assert main(["run", str(task)]) == 1
    assert started == []
    assert ("observe 'find_target' (objects) names object 'yellow_can', which scene "
            "'pick_cube' does not have") in err(capsys)


def test_run_refuses_a_bad_value_before_anything_starts(
        started: list[RunOptions], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(PICK), "--set", "target=green cube"]) == 1
    assert started == []
    assert ("--set target=green cube: error INVALID_PARAM_VALUE: parameter 'target' is object "
            "(an object id); got 'green cube': 'green cube' is not an object id") in err(capsys)


def test_viz_draws_the_task_with_the_values(tmp_path: Path) -> None:
    out = tmp_path / "pick.mmd"
    assert main(["viz", str(PICK), "-o", str(out), "--set", "target=green_cube"]) == 0
    assert "observe green_cube" in out.read_text()
    assert "red_cube" not in out.read_text()


def test_validate_checks_the_task_against_its_scene(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """An object the scene does not have, or a scene that does not exist, fails validation."""
    from harness_bt.cli import main

    trees = Path(__file__).resolve().parents[3] / "trees"
    assert main(["validate", str(trees / "stack.yaml"), "--set", "top=blue_cube"]) == 0
    assert main(["validate", str(trees / "stack.yaml"), "--set", "top=blu_cube"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "--set top: error UNKNOWN_OBJECT: scene parameter 'top' (set to 'blu_cube')" in out
    assert "did you mean 'blue_cube'?" in out
    text = (trees / "pick.yaml").read_text().replace("scene: pick_cube", "scene: pick_cub")
    (tmp_path / "pick.yaml").write_text(text)
    (tmp_path / "steps.yaml").write_text((trees / "steps.yaml").read_text())
    assert main(["validate", str(tmp_path / "pick.yaml")]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"{tmp_path / 'pick.yaml'}:11:8: error UNKNOWN_SCENE: unknown scene 'pick_cub'" in out
