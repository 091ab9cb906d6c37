"""``harness init``: a starter task and its scene that check clean from anywhere, never
written over a file that is there."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.cli.init import SCENE, TASK


def test_init_writes_a_task_and_scene_that_validate_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "project"
    assert main(["init", str(folder)]) == 0
    assert (folder / "task.yaml").read_text() == TASK
    assert (folder / "scene.yaml").read_text() == SCENE
    capsys.readouterr()
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    task, scene = folder / "task.yaml", folder / "scene.yaml"
    assert main(["validate", str(task), str(scene)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{task}: OK (starter_pick: 9 phases)",
        f"{scene}: OK (scene starter: 2 objects (red_cube, blue_cube), judged by its success "
        "condition)"]
    assert main(["validate", str(task), "--set", "target=blue_cube"]) == 0


def test_init_never_overwrites_and_writes_nothing_when_a_file_is_there(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scene.yaml").write_text("mine\n")
    assert main(["init", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"FILE_EXISTS: {tmp_path / 'scene.yaml'} already exist(s): harness init never " \
           "overwrites a file" in err
    assert (tmp_path / "scene.yaml").read_text() == "mine\n"
    assert not (tmp_path / "task.yaml").exists()


def test_the_starter_exported_to_xml_elsewhere_keeps_its_include_and_scene(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, out = tmp_path / "project", tmp_path / "out"
    assert main(["init", str(folder)]) == 0
    assert main(["export-xml", str(folder / "task.yaml"), "-o", str(out / "task.xml")]) == 0
    capsys.readouterr()
    assert main(["validate", str(out / "task.xml")]) == 0
    assert capsys.readouterr().out == f"{out / 'task.xml'}: OK (starter_pick: 9 phases)\n"
