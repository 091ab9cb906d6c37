"""for_each in a task document: the body subtree is expanded once per item (the item given as
its input, per_item values beside it), every problem is reported at its line, and the objects
it names are checked against the task's scene."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.authoring import check_file, load_task
from harness_bt.authoring.objects import scene_object_problems
from harness_bt.nodes.base import iter_nodes
from harness_bt.nodes.loops import ForEach
from harness_bt.problems import SpecError

TASK = """\
name: loop
version: "1"
scene: clear_table
params:
  container: {{type: object, default: tray}}
subtrees:
  visit:
    type: sequence
    name: visit
    children:
      - {{type: observe, name: look, objects: ["{{obj}}", "{{dest}}"], timeout_s: 1.0}}
      - {{type: derive_pose, name: aim, object: "{{dest}}", offset: "{{slot}}", output: goal}}
phases:
  - id: work
    tree:
      type: for_each
      name: cubes
      item: obj
      over: [red_cube, green_cube]
      where: "it.in != '{{container}}'"
      order: "{order}"
      body: {body}
      values: {{dest: "{{container}}"}}
      per_item: {{slot: {{red_cube: [0.1, 0.0], {green}: [0.0, 0.1]}}}}
    transitions:
      - {{event: succeeded, target: done}}
      - {{event: failed, target: aborted_failed}}
  - {{id: done, kind: final, reason: done}}
  - {{id: aborted_failed, kind: final}}
"""


def write(tmp_path: Path, *, order: str = "nearest(items, world.{container})",
          body: str = "visit", green: str = "green_cube") -> Path:
    path = tmp_path / "loop.yaml"
    path.write_text(TASK.format(order=order, body=body, green=green))
    return path


def test_the_body_is_expanded_once_per_item_with_the_item_as_its_input(
        tmp_path: Path) -> None:
    task = load_task(write(tmp_path), params={"container": "tray"})
    tree = task.build_trees()["work"]
    loop = next(n for n in iter_nodes(tree) if isinstance(n, ForEach))
    assert [c.name for c in loop.children] == ["red_cube", "green_cube"]
    looks = {n.harness_path if hasattr(n, "harness_path") else n.name: n.params()
             for n in iter_nodes(tree) if type(n).__name__ in ("Observe", "DerivePose")}
    assert [p.get("objects") or p.get("offset") for p in looks.values()] == [
        ["red_cube", "tray"], [0.1, 0.0, 0.0], ["green_cube", "tray"], [0.0, 0.1, 0.0]]
    assert loop.params() == {"item": "obj", "over": ["red_cube", "green_cube"],
                             "attempts": 2, "body": "visit", "where": "it.in != 'tray'",
                             "order": "nearest(items, world.tray)"}


def test_an_unknown_body_is_refused_with_the_subtrees_known(tmp_path: Path) -> None:
    report = check_file(write(tmp_path, body="vist")).report
    assert [p.code for p in report.errors] == ["UNKNOWN_SUBTREE"]
    assert "unknown subtree 'vist'; known: visit; did you mean 'visit'?" in \
        report.errors[0].message
    assert report.errors[0].where.endswith("loop.yaml:22:13")


def test_an_item_without_its_per_item_value_is_refused_at_the_value(tmp_path: Path) -> None:
    report = check_file(write(tmp_path, green="blue_cube")).report
    codes = [p.code for p in report.errors]
    assert "MISSING_ITEM_VALUE" in codes
    problem = report.errors[codes.index("MISSING_ITEM_VALUE")]
    assert problem.message == "per_item 'slot' of for_each 'cubes' gives no value for item " \
                              "'green_cube'"
    assert problem.fix == "add green_cube: <value> under per_item.slot"


def test_a_bad_order_expression_is_refused_with_its_column_and_a_suggestion(
        tmp_path: Path) -> None:
    report = check_file(write(tmp_path, order="nearst(items, world.tray)")).report
    (problem,) = report.errors
    assert problem.code == "INVALID_NODE"
    assert "for_each 'cubes': order: unknown function 'nearst' at column 1 of " \
           "'nearst(items, world.tray)'" in problem.message
    assert "did you mean 'nearest'?" in (problem.fix or "")


def test_objects_the_loop_names_are_checked_against_the_scene(tmp_path: Path) -> None:
    path = write(tmp_path, order="nearest(items, world.bowl)")
    checked = check_file(path)
    assert checked.report.ok
    problems = scene_object_problems(checked, tmp_path)
    assert [(p.code, p.message.split(",")[0]) for p in problems] == [
        ("UNKNOWN_OBJECT", "for_each 'cubes' (world.bowl) names object 'bowl'")]


def test_a_document_with_errors_is_never_built(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="UNKNOWN_SUBTREE"):
        load_task(write(tmp_path, body="nothing"))
