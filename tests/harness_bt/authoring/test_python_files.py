"""A Python task file is accepted wherever a task file is: ``harness validate``, ``harness
viz``, :func:`check_file` / :func:`load_spec`, as ``harness run`` always took it. A spec it
makes is checked like a document; a task of tree factories is built and its skills looked
up; a file whose own code raises is one clear error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.authoring import check_file, load_spec, load_task, neutral_form
from harness_bt.cli import main
from harness_bt.errors import DefinitionError
from harness_bt.testing.example import example_skills

ROOT = Path(__file__).resolve().parents[3]
SPEC_TASK = '''
from harness_bt.authoring import builder as b

spec = b.task("py_spec", [
    b.phase("work", {{"skill": "navigate", "name": "go", "params": {params}}},
            transitions=[b.on("succeeded", "done"), b.on("failed", "aborted_work")]),
    b.final("done"), b.final("aborted_work")])
'''
SKILLS = ["--skills", "harness_bt.testing.example:example_skills"]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_validate_accepts_a_library_task_written_in_python(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(ROOT / "trees" / "pick_cube.py")]) == 0
    assert capsys.readouterr().out == f"{ROOT / 'trees' / 'pick_cube.py'}: OK (pick_cube: " \
        "11 phases)\n"


def test_validate_checks_a_python_spec_as_a_document(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, "good.py", SPEC_TASK.format(params='{"x_m": 1.0, "y_m": 0.0}'))
    bad = write(tmp_path, "bad.py", SPEC_TASK.format(params='{"x_m": 1.0, "y_m": 0.0, '
                                                            '"speed": 3}'))
    assert main(["validate", str(good), str(bad), *SKILLS]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{good}: OK (py_spec: 3 phases)"
    assert out[1].startswith(f"{bad} (phases[0].tree.params.speed): error UNKNOWN_PARAM: "
                             "skill 'navigate' has no param 'speed'")
    assert out[2:] == [f"{bad}: 1 error(s), 0 warning(s)"]


def test_a_python_file_whose_code_raises_is_one_error_with_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = write(tmp_path, "broken.py", "x = 1\nraise RuntimeError('no robot here')\n")
    assert main(["validate", str(broken)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{broken}:2: error INVALID_TASK_FILE: {broken}: importing it raised "
                   "RuntimeError: no robot here; fix: fix the error in the task file",
                   f"{broken}: 1 error(s), 0 warning(s)"]
    with pytest.raises(DefinitionError, match="importing it raised RuntimeError"):
        load_task(broken)


def test_a_task_function_that_raises_names_the_function(tmp_path: Path) -> None:
    path = write(tmp_path, "fn.py", "def task():\n    return {}['missing']\n")
    checked = check_file(path)
    assert [(p.code, p.where) for p in checked.report] == [("INVALID_TASK_FILE", f"{path}:2")]
    assert "task() raised KeyError: 'missing'" in checked.report.problems[0].message


def test_a_factory_task_commanding_an_unknown_skill_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "factory.py", '''
from harness_bt import Final, Phase, Task, on
from harness_bt.nodes import SkillAction

def task():
    return Task("factory", [
        Phase("work", lambda: SkillAction("go", "teleport", params={}),
              transitions=[on("succeeded", "done"), on("failed", "aborted_work")]),
        Final("done"), Final("aborted_work")])
''')
    checked = check_file(path, skills=example_skills())
    assert checked.spec is None and checked.task is not None
    (problem,) = checked.report.problems
    assert (problem.code, problem.where) == ("UNKNOWN_SKILL", str(path))
    assert "commands skill 'teleport', which is not installed; known: align, approach" in \
        problem.message


def test_load_spec_and_viz_take_a_python_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "good.py", SPEC_TASK.format(params='{"x_m": 1.0, "y_m": 0.0}'))
    assert load_spec(path, skills=example_skills()).name == "py_spec"
    out = tmp_path / "graph.dot"
    assert main(["viz", str(path), "-o", str(out), *SKILLS]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert "work" in out.read_text()


def test_a_task_of_tree_factories_has_no_document_form_and_says_so() -> None:
    path = ROOT / "trees" / "pick_cube.py"
    for load in (load_spec, neutral_form):
        with pytest.raises(DefinitionError, match="built from Python tree factories") as err:
            load(path)
        assert err.value.code == "NOT_A_DOCUMENT"
    assert load_task(path).name == "pick_cube"
