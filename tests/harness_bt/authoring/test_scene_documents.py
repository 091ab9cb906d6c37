"""Scene documents: the library's scenes load; every kind of bad input is refused with its
place (file:line:column, or the --set that gave it) and a fix; parameters bind; success
conditions compile and evaluate over a scene state."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness_bt.authoring.scenes import check_scene, load_scene
from harness_bt.errors import DefinitionError
from harness_bt.scene import (
    Cavity,
    SceneError,
    compile_success,
    predicate_registry,
    scene_registry,
)

GOOD = """\
name: mine
instruction: put the {target} on the {base}
params:
  target: {type: object, default: red_cube}
  base: {type: object, default: big_box}
objects:
  red_cube: {shape: cube, size: 0.04, colour: red}
  big_box: {shape: box, size: [0.08, 0.08, 0.04], colour: blue, label: big blue box}
  can: {shape: cylinder, size: [0.05, 0.05, 0.08], colour: [0.9, 0.5, 0.1]}
layout:
  place:
    big_box: {x: [0.45, 0.55], y: [-0.1, 0.1], yaw: 0.0}
success:
  when: on(target, base) and released(target)
"""


def scene_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scene.yaml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str, **params: Any) -> list[str]:
    scene, report = check_scene(scene_file(tmp_path, text), params=params)
    assert scene is None
    return [str(p) for p in report.errors]


def test_the_library_scenes_load_and_say_whether_they_are_judged() -> None:
    names = scene_registry(entry_points=True).names()
    assert {"pick_cube", "pick_and_place", "stack", "place_at", "table"} <= set(names)
    judged = {n: load_scene(n).judged for n in names}
    assert judged["pick_cube"] and judged["stack"] and not judged["table"]


def test_parameters_bind_and_fill_the_instruction(tmp_path: Path) -> None:
    scene = load_scene(scene_file(tmp_path, GOOD), params={"target": "can", "unrelated": 3})
    assert scene.params == {"target": "can", "base": "big_box"}
    assert scene.instruction == "put the can on the big blue box"
    assert scene.condition is not None
    assert scene.condition.calls == ["on(target, base)", "released(target)"]


def test_an_unknown_object_or_colour_is_refused_at_its_line(tmp_path: Path) -> None:
    text = GOOD.replace("    big_box: {x:", "    big_bx: {x:")
    text = text.replace("colour: blue", "colour: bleu")
    errs = problems(tmp_path, text)
    assert any(e.startswith(f"{tmp_path / 'scene.yaml'}:8:") and "UNKNOWN_COLOUR" in e
               and "did you mean 'blue'" in e for e in errs)
    assert any(":13:" in e and "UNKNOWN_OBJECT" in e and "'big_bx' is not an object" in e
               and "did you mean 'big_box'" in e for e in errs)


def test_a_predicate_with_the_wrong_arity_or_an_unknown_name_is_refused(tmp_path: Path) -> None:
    errs = problems(tmp_path, GOOD.replace("on(target, base)", "on(target)")
                    .replace("released(target)", "relased(target)"))
    assert any("PREDICATE_ARITY" in e and "on takes 2 to 3 argument(s), got 1" in e
               and "fix: write on(obj, support, tol=0.015)" in e and ":14:9:" in e for e in errs)
    assert any("UNKNOWN_PREDICATE" in e and "did you mean 'released'" in e for e in errs)


def test_wrong_argument_kinds_and_unknown_names_in_a_condition(tmp_path: Path) -> None:
    errs = problems(tmp_path, GOOD.replace("on(target, base) and released(target)",
                                           "lifted(target, base) or at(cube, [1])"))
    assert any("WRONG_ARGUMENT" in e and "parameter 'base' is an object, not a number" in e
               for e in errs)
    assert any("UNKNOWN_OBJECT" in e and "'cube' is no object" in e for e in errs)


def test_an_unreachable_layout_region_is_refused(tmp_path: Path) -> None:
    errs = problems(tmp_path, GOOD.replace("x: [0.45, 0.55]", "x: [0.45, 0.95]"))
    assert any("UNREACHABLE_LAYOUT" in e and "the arm reaches 0.25..0.8 m" in e
               and ":12:14:" in e for e in errs)
    errs = problems(tmp_path, GOOD.replace("y: [-0.1, 0.1]", "y: [-0.1, 0.9]"))
    assert any("UNREACHABLE_LAYOUT" in e and "leaves the table" in e for e in errs)


GOALS = GOOD.replace("params:\n", "params:\n  offset: {type: vector, default: [0.0, 0.1]}\n"
                     "  lift: {type: number, default: 0.05}\n").replace(
    "    big_box: {x: [0.45, 0.55], y: [-0.1, 0.1], yaw: 0.0}\n",
    "    big_box: {x: [0.45, 0.55], y: [-0.1, 0.1], yaw: 0.0}\n"
    "  goals:\n"
    "    - {object: target, offset: offset}\n"
    "    - {object: can, offset: [0.05, -0.02], clearance: 0.1}\n")


def test_layout_goals_bind_their_parameters(tmp_path: Path) -> None:
    scene = load_scene(scene_file(tmp_path, GOALS), params={"target": "can",
                                                             "offset": [0.1, 0.0]})
    assert [(g.object, g.offset, g.clearance) for g in scene.goals] == [
        ("can", (0.1, 0.0), 0.07), ("can", (0.05, -0.02), 0.1)]
    assert scene.goals[0].point(0.5, 0.1) == (0.6, 0.1)


def test_a_layout_goal_naming_an_unknown_object_or_the_wrong_parameter(tmp_path: Path) -> None:
    text = GOALS.replace("{object: target, offset: offset}", "{object: tagret, offset: lift}")
    text = text.replace("{object: can, offset: [0.05, -0.02]", "{object: offset, offset: ofset")
    errs = problems(tmp_path, text)
    assert any("UNKNOWN_OBJECT" in e and "layout goal 0: 'tagret' is no object parameter or "
               "object" in e and "did you mean 'target'" in e for e in errs), errs
    assert any("layout goal 0: parameter 'lift' is a number, not a vector" in e for e in errs)
    assert any("layout goal 1: parameter 'offset' is a vector, not an object" in e
               for e in errs)
    assert any("layout goal 1: 'ofset' is no vector parameter" in e and "did you mean "
               "'offset'" in e for e in errs)
    assert len(errs) == 4
    errs = problems(tmp_path, GOALS.replace("clearance: 0.1", "clearance: -1"))
    assert any("clearance=-1.0 must be > 0.0" in e and "leave it out for its default" in e
               for e in errs), errs


def test_a_set_value_of_the_wrong_type_names_the_option(tmp_path: Path) -> None:
    errs = problems(tmp_path, GOOD, target="purple_cube")
    assert errs == [e for e in errs if e.startswith("--set target:")]
    assert "UNKNOWN_OBJECT" in errs[0] and "did you mean 'red_cube'" in errs[0]
    assert len(errs) == 1  # no follow-on errors from the uses of the parameter


def test_structural_errors_and_malformed_yaml(tmp_path: Path) -> None:
    errs = problems(tmp_path, GOOD.replace("shape: cube", "shape: sphere")
                    .replace("layout:", "lay_out: 1\nlayout:"))
    assert any("WRONG_TYPE" in e or "one of the allowed values" in e for e in errs)
    assert any("UNKNOWN_FIELD" in e and "'lay_out'" in e for e in errs)
    assert problems(tmp_path, "name: [")[0].startswith(f"{tmp_path / 'scene.yaml'}:1:")


def test_an_unknown_scene_name_or_missing_file() -> None:
    with pytest.raises(DefinitionError, match=r"unknown scene 'stak'.*did you mean 'stack'"):
        load_scene("stak")
    with pytest.raises(DefinitionError, match=re.escape("no scene file at 'nowhere/x.yaml'")):
        load_scene("nowhere/x.yaml")


def test_load_scene_raises_with_every_problem(tmp_path: Path) -> None:
    with pytest.raises(SceneError) as err:
        load_scene(scene_file(tmp_path, GOOD.replace("colour: red", "colour: rouge")))
    assert err.value.code == "INVALID_SCENE" and "UNKNOWN_COLOUR" in str(err.value)


class _State:
    """A scene state written by hand: two cubes and a bowl."""

    def __init__(self, positions: dict[str, tuple[float, float, float]]) -> None:
        self.positions = {k: np.array(v) for k, v in positions.items()}
        self.starts = {k: np.array(v) for k, v in positions.items()}
        self.contacts: set[frozenset[str]] = set()
        self.fingers: dict[str, tuple[bool, bool]] = {}

    def position(self, name: str) -> np.ndarray:
        return self.positions[name]

    def start_position(self, name: str) -> np.ndarray:
        return self.starts[name]

    def velocity(self, name: str) -> np.ndarray:
        return np.zeros(3)

    def yaw(self, name: str) -> float:
        return 0.0

    def extents(self, name: str) -> tuple[float, float, float]:
        return (0.16, 0.16, 0.05) if name == "bowl" else (0.04, 0.04, 0.04)

    def finger_contacts(self, name: str) -> tuple[bool, bool]:
        return self.fingers.get(name, (False, False))

    def touching(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.contacts

    def on_table(self, name: str) -> bool:
        return self.positions[name][2] < 0.021

    def cavity(self, name: str) -> Cavity | None:
        if name != "bowl":
            return None
        p = self.positions[name]
        return Cavity((p[0], p[1]), 0.0, 0.074, 0.074, 0.006, 0.05, round=True)


def test_conditions_evaluate_groups_counts_and_stacking() -> None:
    registry = predicate_registry(entry_points=True)
    preds = {n: registry.get(n) for n in registry.names()}
    state = _State({"a": (0.5, 0.0, 0.026), "b": (0.5, 0.2, 0.02), "c": (0.5, 0.0, 0.066),
                    "bowl": (0.5, 0.0, 0.0)})
    groups = {"reds": ["a", "b"]}
    cond, errs = compile_success("count(inside(reds, bowl)) >= 1 and not inside(reds, bowl)",
                                   preds, objects=["a", "b", "c", "bowl"], groups=groups)
    assert not errs and cond is not None
    ok, values = cond.evaluate(state)
    assert ok and values["inside(reds, bowl)[a]"] and not values["inside(reds, bowl)[b]"]
    state.contacts.add(frozenset(("c", "a")))
    stacked, _ = compile_success("on(c, a) and released(c) and not on(a, c)", preds,
                                   objects=["a", "b", "c", "bowl"])
    assert stacked is not None and stacked.evaluate(state)[0]
    state.positions["c"] = np.array([0.53, 0.0, 0.066])  # its centre past a's edge
    assert not stacked.evaluate(state)[0]
    _, errs = compile_success("count(held(a))", preds, objects=["a"])
    assert [e.code for e in errs] == ["COUNT_NEEDS_COMPARISON"]
    _, errs = compile_success("held(a) and", preds, objects=["a"])
    assert [e.code for e in errs] == ["INVALID_EXPRESSION"]
    _, errs = compile_success("__import__('os')", preds, objects=["a"])
    assert [e.code for e in errs] == ["UNKNOWN_PREDICATE"]
