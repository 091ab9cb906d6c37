"""for_each over a scene group and over an expression in a task document: the group's members
come from the scene the task names (checked with did-you-mean), an expression's candidates are
the scene's objects (those per_item covers), every mistake is reported at its place, and both
run against the built-in simulator with their items in the trace and the graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_bt.authoring import check_file, load_task
from harness_bt.authoring.scenes import with_scene
from harness_bt.nodes.base import iter_nodes
from harness_bt.nodes.loops import ForEach
from harness_bt.run.episodes import run_episodes
from harness_bt.runtime.episodes import RunOptions
from harness_bt.viz.render import render
from runtime_bridge.sim.library import CLEAR_TABLE

TASK = """\
name: look_each
version: "1"
{scene}
subtrees:
  see:
    type: observe
    name: see
    objects: ["{{obj}}"]
    timeout_s: 1.0
phases:
  - id: each
    tree:
      type: for_each
      name: cubes
      item: obj
      over: {over}
      body: see
      per_item: {{slot: {slots}}}
    transitions:
      - {{event: succeeded, target: done}}
      - {{event: failed, target: aborted_failed}}
  - {{id: done, kind: final, reason: done}}
  - {{id: aborted_failed, kind: final}}
"""
SLOTS = "{red_cube: 1, green_cube: 2, blue_cube: 3}"
SHAPES = "\"filter(world.objects, it.shape == 'cube')\""


def write(tmp_path: Path, over: str, *, scene: str = "scene: clear_table",
          slots: str = SLOTS) -> Path:
    path = tmp_path / "look_each.yaml"
    path.write_text(TASK.format(scene=scene, over=over, slots=slots))
    return path


def loop_of(path: Path) -> ForEach:
    tree = load_task(path).build_trees()["each"]
    return next(n for n in iter_nodes(tree) if isinstance(n, ForEach))


def codes(path: Path) -> list[tuple[str, str]]:
    return [(p.code, p.message) for p in check_file(path).report.errors]


def test_a_group_is_the_scenes_members_in_its_order(tmp_path: Path) -> None:
    loop = loop_of(write(tmp_path, "{group: to_clear}"))
    assert [c.name for c in loop.children] == ["red_cube", "green_cube", "blue_cube"]
    assert loop.params()["over"] == {"group": "to_clear"}
    assert loop.params()["candidates"] == ["red_cube", "green_cube", "blue_cube"]


def test_the_scene_a_run_is_given_gives_the_group(tmp_path: Path) -> None:
    """``--scene``: the task runs in another scene, and its loops take that scene's groups."""
    two = tmp_path / "two.yaml"
    two.write_text(CLEAR_TABLE.read_text().replace("mass: 0.08, group: to_clear, label: red cube",
                                "mass: 0.08, label: red cube"))
    path = write(tmp_path, "{group: to_clear}")
    tree = load_task(path, scene=str(two)).build_trees()["each"]
    loop = next(n for n in iter_nodes(tree) if isinstance(n, ForEach))
    assert [c.name for c in loop.children] == ["green_cube", "blue_cube"]
    errors = check_file(path, scene="sort").report.errors
    assert [(p.code, p.message) for p in errors] == [(
        "UNKNOWN_GROUP", "for_each 'cubes': scene 'sort' has no group 'to_clear'; its groups: "
        "reds")]


def test_an_unknown_group_is_refused_with_the_scenes_groups(tmp_path: Path) -> None:
    report = check_file(write(tmp_path, "{group: to_clean}")).report
    (problem,) = report.errors
    assert problem.code == "UNKNOWN_GROUP"
    assert problem.message == ("for_each 'cubes': scene 'clear_table' has no group 'to_clean'; "
                               "its groups: to_clear; did you mean 'to_clear'?")
    assert problem.where.endswith("look_each.yaml:16:21")


@pytest.mark.parametrize("over", ["{group: to_clear}", SHAPES])
def test_a_group_or_an_expression_needs_the_tasks_scene(tmp_path: Path, over: str) -> None:
    assert [c for c, _ in codes(write(tmp_path, over, scene=""))] == ["NO_SCENE"]
    found = codes(write(tmp_path, over, scene="scene: no_such_scene"))
    assert [c for c, _ in found] == ["NO_SCENE"]
    assert "scene 'no_such_scene' does not load: unknown scene 'no_such_scene'" in found[0][1]


def test_an_empty_list_is_refused(tmp_path: Path) -> None:
    assert codes(write(tmp_path, "[]", slots="{}")) == [
        ("EMPTY_DOMAIN", "for_each 'cubes' loops over no item")]


def test_a_bad_expression_or_a_bare_name_is_refused_with_what_to_write(tmp_path: Path) -> None:
    ((code, message),) = codes(write(tmp_path, "\"filter(world.objects, it.shap == 1)\""))
    assert code == "INVALID_NODE"
    assert "over: an object has no field 'shap' at column 23" in message
    ((code, message),) = codes(write(tmp_path, "to_clear"))
    assert message == ("for_each 'cubes': over='to_clear' is a name, not a list, a group or an "
                       "expression")


def test_an_expressions_candidates_are_the_scenes_objects_per_item_covers(
        tmp_path: Path) -> None:
    loop = loop_of(write(tmp_path, SHAPES))
    assert loop.over == ("red_cube", "green_cube", "blue_cube")  # the tray has no slot
    assert loop.choice.declared["red_cube"] == {"shape": "cube", "colour": "red",
                                                "group": "to_clear"}
    assert codes(write(tmp_path, SHAPES, slots="{red_cube: 1, grene_cube: 2}")) == [
        ("UNKNOWN_OBJECT", "per_item 'slot' of for_each 'cubes' names 'grene_cube', no object "
                           "of the scene; its objects: red_cube, green_cube, blue_cube, tray; "
                           "did you mean 'green_cube'?")]
    assert [c for c, _ in codes(write(tmp_path, SHAPES, slots="{}"))] == ["EMPTY_DOMAIN"]


@pytest.mark.parametrize("over", ["{group: to_clear}", SHAPES])
def test_it_runs_over_the_group_or_the_expression_on_the_built_in_simulator(
        tmp_path: Path, over: str) -> None:
    task = load_task(write(tmp_path, over))
    trace = tmp_path / "run.jsonl"
    report = run_episodes(task, with_scene(RunOptions(
        task=task.name, scene=task.scene, episodes=1, seed=3, cameras=(), trace=str(trace),
        max_ticks=200)))
    assert report.episodes[0].reason == "done"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    loop = [e["data"] for e in events if e["kind"] == "iteration"]
    assert loop[0]["stage"] == "domain"
    assert sorted(loop[0]["left"]) == ["blue_cube", "green_cube", "red_cube"]
    assert sorted(d["item"] for d in loop if d["stage"] == "start") == sorted(loop[0]["left"])
    seq = next(e["seq"] for e in events if e["kind"] == "iteration")
    assert f"items: {', '.join(loop[0]['left'])}" in str(render(trace=events, at=seq, fmt="dot"))
