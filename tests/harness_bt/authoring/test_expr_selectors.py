"""The expression language's let bindings, selectors over the world's objects (nearest, argmin,
argmax, filter), fields of computed values, and its did-you-mean errors."""

from __future__ import annotations

from typing import Any

import pytest

from harness_bt.expr import MISSING, Bound, ExprError, compile_expr, run_env
from harness_bt.world import Pose


class _Object:
    def __init__(self, oid: str, xyz: list[float], relations: dict[str, str] | None = None):
        self.object_id, self.label = oid, oid.replace("_", " ")
        self.pose = Pose.of([*xyz, 1.0, 0.0, 0.0, 0.0])
        self.relations = relations or {}
        self.extent, self.confidence, self.version = (0.04, 0.04, 0.04), 0.9, 1


class _World:
    """A world model's read side: get, objects, age."""

    def __init__(self, *objects: _Object) -> None:
        self.by_id = {o.object_id: o for o in objects}

    def get(self, oid: str) -> Any:
        return self.by_id.get(oid)

    def objects(self) -> list[Any]:
        return list(self.by_id.values())

    def age(self, oid: str, now: float = 0.0) -> float:
        return 0.5


WORLD = _World(_Object("red_cube", [0.40, -0.10, 0.02]),
               _Object("green_cube", [0.55, 0.12, 0.03], {"in": "tray"}),
               _Object("blue_cube", [0.60, 0.05, 0.02]),
               _Object("tray", [0.52, 0.18, 0.01]))


def value(text: str, **bound: Any) -> Any:
    env = {**run_env(world=WORLD), **{k: Bound(v) for k, v in bound.items()}}
    return compile_expr(text, bound=list(bound)).evaluate(env)


@pytest.mark.parametrize(("text", "expected"), [
    ("len(world.objects)", 4),
    ("world.objects[0].id", "blue_cube"),  # by id
    ("nearest(world.objects, world.tray).id", "tray"),
    ("nearest(filter(world.objects, it.id != 'tray'), world.tray).id", "green_cube"),
    ("nearest(filter(world.objects, it.in != 'tray' and it.id != 'tray'), 'tray').id",
     "blue_cube"),
    ("nearest(world.objects, [0.4, -0.1, 0.0]).id", "red_cube"),
    ("argmin(world.objects, it.position[0]).id", "red_cube"),
    ("argmax(world.objects, it.position[2]).id", "green_cube"),
])
def test_selectors_read_the_world_objects(text: str, expected: Any) -> None:
    assert value(text) == expected


def test_let_names_sub_expressions_each_seeing_the_ones_before() -> None:
    assert value("let t = world.tray.position, d = t[0] - world.red_cube.position[0] "
                 "in d > 0.1 and d < 0.2") is True
    assert value("let a = (1 in [1, 2]) in a") is True  # 'in' inside brackets is the operator
    assert value("(let p = world.red_cube.position in p)[1]") == -0.1
    assert compile_expr("let a = 1 in a + 1").renamed({}) == "let a = 1 in a + 1"


def test_selectors_of_nothing_and_bad_items_are_missing_never_an_error() -> None:
    assert value("nearest(items, [0, 0, 0])", items=[]) is MISSING
    assert value("nearest(world.objects, 'nothing')") is MISSING
    assert value("argmin(items, it.position[0])", items=[{"id": "x"}]) is MISSING
    assert value("filter(bb.nope, true)") is MISSING
    assert value("len(filter(items, it.in == 'tray'))", items=[{"in": "tray"}, {}]) == 1


@pytest.mark.parametrize(("text", "message", "fix"), [
    ("nearst(world.objects, [0, 0, 0])", "unknown function 'nearst' at column 1",
     "did you mean 'nearest'?"),
    ("world.cup.postion", "an object has no field 'postion' at column 1",
     "did you mean 'position'?"),
    ("argmin(world.objects, it.confidnce)", "an object has no field 'confidnce' at column 23",
     "did you mean 'confidence'?"),
    ("world.objects[1].lable", "an object has no field 'lable'", "did you mean 'label'?"),
    ("let x = 1 in y", "unknown name 'y' at column 14", "x"),
    ("let x = 1", "a let needs 'in' and the expression that uses its names",
     "use parentheses for the operator 'in' in a binding"),
    ("filter(world.objects)", "expected ','", ""),
])
def test_bad_selectors_and_lets_are_refused_with_a_column_and_a_fix(
        text: str, message: str, fix: str) -> None:
    with pytest.raises(ExprError) as err:
        compile_expr(text)
    assert message in str(err.value)
    assert fix in (err.value.fix or "")
