"""The guard / wait expression language: parsed, never evaluated as Python."""

from __future__ import annotations

from typing import Any

import pytest

from harness_bt.expr import MISSING, ExprError, compile_expr, run_env


def env(bb: dict[str, Any] | None = None, outcome: dict[str, Any] | None = None) -> Any:
    board = bb or {}
    out = {"bb": lambda k: board.get(k, MISSING)}
    if outcome is not None:
        out["outcome"] = lambda k: outcome.get(k, MISSING)
    return out


@pytest.mark.parametrize(("text", "expected"), [
    ("bb.n < 3 and bb.name == 'cup'", True),
    ("bb.n >= 3 or not exists(bb.missing)", True),
    ("bb['go.cmd'] in ['a', 'b']", True),
    ("bb.n + 1 == 3", True),
    ("bb.n * 2 - -1 == 5", True),
    ("bb.verdict.evidence[0] == 'seen'", True),
    ("len(bb.verdict.evidence) == 1 and abs(-2) == 2 and max(bb.n, 7) == 7", True),
    ("bb.missing == null and not (bb.missing > 1) and not (bb.missing < 1)", True),
    ("bb.name > 1", False),  # different kinds never compare
    ("bb.n / 0 == null", True),  # no exception: missing
    ("outcome.reason == 'NO_PROGRESS' and outcome.details.silent_s > 1.5", True),
    ("'cup' not in bb.verdict.evidence", True),
])
def test_expressions_evaluate_over_read_only_views(text: str, expected: bool) -> None:
    bb = {"n": 2, "name": "cup", "go.cmd": "a", "verdict": {"evidence": ["seen"]}}
    outcome = {"reason": "NO_PROGRESS", "details": {"silent_s": 2.0}}
    assert compile_expr(text).test(env(bb, outcome)) is expected


@pytest.mark.parametrize(("text", "message"), [
    ("bb.x = 1", "unexpected character '=' at column 6 of 'bb.x = 1'; use '==' to compare"),
    ("__import__('os')", "unknown function '__import__' at column 1"),
    ("open('f')", "unknown function 'open' at column 1 of \"open('f')\"; known: abs, all, any, "
     "argmax, argmin, count, exists"),
    ("x == 1", "unknown name 'x' at column 1 of 'x == 1'; a path starts with one of"),
    ("bb.a < 1 < 2", "comparisons do not chain at column 10"),
    ("bb.a == True", "unknown name 'True' at column 9 of 'bb.a == True'; write 'true'"),
    ("bb.a and", "expected a value, found the end at column 9"),
    ("world.cup", "unknown name 'world'"),  # not a root where only bb is allowed
    ("", "the expression is empty at column 1"),
])
def test_bad_expressions_are_refused_with_a_column(text: str, message: str) -> None:
    with pytest.raises(ExprError) as err:
        compile_expr(text, roots=("bb",))
    assert message in str(err.value)


def test_dunder_keys_are_plain_keys_not_attributes() -> None:
    expr = compile_expr("bb.__class__ == null and bb['__dict__'] == null")
    assert expr.test(env({}))
    assert expr.reads() == ["__class__", "__dict__"]


def test_reads_and_renames_blackboard_keys() -> None:
    expr = compile_expr("bb.target.pose[2] > 0.1 and exists(bb['a.b']) or world.cup.on == 'tray'")
    assert expr.reads("bb") == ["target", "a.b"]
    assert expr.reads("world") == ["cup"]
    assert expr.renamed({"target": "use.target", "a.b": "c"}) == (
        "bb['use.target'].pose[2] > 0.1 and exists(bb.c) or world.cup.on == 'tray'")


def test_world_objects_show_plain_data() -> None:
    from harness_bt.world import ObjectUpdate, Pose, Relation, WorldModel

    world = WorldModel()
    world.update([ObjectUpdate("cup", Pose.of([0.5, 0.0, 0.05]), (0.1, 0.1, 0.1), 0.9,
                               relations={Relation.ON: "table"})], now=1.0)
    expr = compile_expr("world.cup.position[0] == 0.5 and world.cup.on == 'table' and "
                        "world.cup.age_s == 1.5 and not exists(world.tray)")
    assert expr.test(run_env(world=world, now=2.5))
