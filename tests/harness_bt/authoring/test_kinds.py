"""``harness validate`` reads a scene file and a subtree library as what they are
(``harness validate trees/*.yaml`` is clean), a scene's success expression reports every
error at once, and ``harness scenes FILE`` describes a scene file."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.authoring.kinds import DocumentKind, document_kind
from harness_bt.cli import main

ROOT = Path(__file__).resolve().parents[3]
SCENES = ROOT / "runtime_bridge" / "sim" / "library"

BAD_SCENE = """\
name: s
objects:
  red_cube: {shape: cube, size: 0.04, colour: red}
success:
  when: lifted(red_cub, 0.05) and hold(red_cube) and on(red_cube, tabel)
"""


def test_validate_of_every_library_file_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted((ROOT / "trees").glob("*.yaml"))
    assert main(["validate", *map(str, files)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(files)
    assert f"{ROOT / 'trees' / 'steps.yaml'}: OK (library: 11 subtrees (approach, carry, " \
           "carry_to_goal, close, grasp, held, put, put_at_goal, put_away, put_in_slot, " \
           "reach))" in out
    assert all(": OK (" in line for line in out)


def test_validate_reads_scene_files_as_scenes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SCENES / "stack.yaml"), str(SCENES / "table.yaml")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{SCENES / 'stack.yaml'}: OK (scene stack: 3 objects (red_cube, green_cube, "
        "blue_cube), judged by its success condition)",
        f"{SCENES / 'table.yaml'}: OK (scene table: 4 objects (red_cube, green_cube, "
        "blue_cube, bowl), not judged)"]


def test_a_success_expression_reports_every_error_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "scene.yaml"
    path.write_text(BAD_SCENE)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" error ")[1].split(":")[0] for line in out[:-1]] == [
        "UNKNOWN_OBJECT", "UNKNOWN_PREDICATE", "UNKNOWN_OBJECT"]
    assert "'red_cub' is no object, group or parameter of the scene; did you mean " \
           "'red_cube'?" in out[0]
    assert out[-1] == f"{path}: 3 error(s), 0 warning(s) (read as a scene)"


def test_a_library_naming_an_unknown_subtree_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lib.yaml"
    path.write_text("subtrees:\n  twice:\n    type: sequence\n    name: twice\n    children:\n"
                    "      - {subtree: nope}\n      - {type: success, name: ok}\n")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:6:19: error UNKNOWN_SUBTREE: unknown subtree 'nope'" in out
    assert out.rstrip().endswith("(read as a library)")


def test_harness_scenes_describes_a_scene_file(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    assert main(["scenes", str(SCENES / "sort.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("scene sort: three red cubes")
    assert "red_cube_1" in out and "inside(reds, container)" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_SCENE)
    assert main(["scenes", str(bad)]) == 1
    assert "3 error(s): not a valid scene" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "kind"), [
    ("name: t\nphases: []\n", DocumentKind.TASK),
    ("name: s\nobjects: {}\n", DocumentKind.SCENE),
    ("subtrees: {}\n", DocumentKind.LIBRARY),
    ("guards: {}\n", DocumentKind.LIBRARY),
    ("- not a mapping\n", DocumentKind.TASK),
    ("name: [unclosed\n", DocumentKind.TASK),
])
def test_a_files_kind_comes_from_its_top_level_keys(tmp_path: Path, text: str,
                                                   kind: DocumentKind) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(text)
    assert document_kind(path) is kind
