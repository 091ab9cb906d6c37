"""Tasks travel: an include is found beside the including file, then in the installed task
library (by its name there, or as the checkout names it); a task library (``--library``) as
given, then the installed one; what was looked at is said when nothing is found."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.authoring import check_file
from harness_bt.authoring.locate import (
    LIBRARY_ENV,
    find_include,
    installed_library,
    resolve_library,
)
from harness_bt.errors import DefinitionError

ROOT = Path(__file__).resolve().parents[3]
TREES = ROOT / "trees"


@pytest.fixture(autouse=True)
def _no_library_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LIBRARY_ENV, raising=False)


def test_the_installed_library_is_the_checkouts_trees_or_the_named_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert installed_library() == TREES
    monkeypatch.setenv(LIBRARY_ENV, str(tmp_path))
    assert installed_library() == tmp_path.resolve()


@pytest.mark.parametrize("include", ["steps.yaml", "trees/steps.yaml"])
def test_a_task_outside_the_checkout_includes_the_librarys_steps(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, include: str) -> None:
    elsewhere = tmp_path / "mine"
    elsewhere.mkdir()
    (elsewhere / "pick.yaml").write_text(
        (TREES / "pick.yaml").read_text().replace("includes: [steps.yaml]",
                                                  f"includes: [{include}]"))
    monkeypatch.chdir(tmp_path)  # neither the checkout nor the task's folder
    checked = check_file(Path("mine") / "pick.yaml")
    assert checked.report.ok, checked.report.render()
    assert checked.library.documents[1].path == TREES / "steps.yaml"


def test_a_file_beside_the_task_wins_over_the_library(tmp_path: Path) -> None:
    mine = tmp_path / "steps.yaml"
    mine.write_text("subtrees: {}\n")
    assert find_include("steps.yaml", tmp_path) == (mine.resolve(), [mine.resolve()])


def test_an_include_found_nowhere_lists_every_place_looked(tmp_path: Path) -> None:
    found, looked = find_include("stepz.yaml", tmp_path)
    assert found is None
    assert looked == [(tmp_path / "stepz.yaml").resolve(), TREES / "stepz.yaml"]
    task = tmp_path / "task.yaml"
    task.write_text((TREES / "pick.yaml").read_text().replace("includes: [steps.yaml]",
                                                              "includes: [stepz.yaml]"))
    problems = [str(p) for p in check_file(task).report.errors]
    assert problems[0] == (
        f"{task}:18:12: error INCLUDE_NOT_FOUND: included file 'stepz.yaml' does not exist "
        f"(looked for {tmp_path / 'stepz.yaml'}, {TREES / 'stepz.yaml'}) (at includes[0]); "
        "fix: give a path relative to the including file, or the name of a file of the "
        "installed task library")


def test_a_library_is_taken_as_given_else_from_the_installed_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_library("trees") == TREES  # no trees/ here: the installed library
    (tmp_path / "trees").mkdir()
    assert resolve_library("trees") == Path("trees")  # one here: that one
    with pytest.raises(DefinitionError, match=r"LIBRARY_NOT_FOUND: no task library at "
                                              r"'nowhere' \(looked in .*nowhere, "):
        resolve_library("nowhere")


def test_an_instruction_finds_the_default_library_from_any_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capfd: pytest.CaptureFixture[str]) -> None:
    from harness_bt.cli import main

    monkeypatch.chdir(tmp_path)  # no trees/ here: the planner reads the installed library
    assert main(["eval", "--instruction", "put the cube in the tray"]) == 1
    err = capfd.readouterr().err
    assert "PLAN_AMBIGUOUS: planner 'meaning' gave no plan for 'put the cube in the tray'" in err
    assert "pick_and_place (container=tray, target=green_cube)" in err
