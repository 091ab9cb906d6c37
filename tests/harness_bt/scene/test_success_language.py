"""Scene success conditions are expressions of the one expression language (harness_bt.expr):
the same parser and operators as guards, predicate calls checked against the scene's names with
every problem reported at once, groups judged member by member."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness_bt.authoring.scenes import check_scene
from harness_bt.expr import ExprError, Name, compile_condition, compile_expr
from harness_bt.scene import Predicate, compile_success, predicate_registry
from harness_bt.scene.predicates import Arg


def _predicates() -> dict[str, Predicate]:
    registry = predicate_registry(entry_points=True)
    return {n: registry.get(n) for n in registry.names()}


OBJECTS = ["a", "b", "tray"]
GROUPS = {"reds": ["a", "b"]}
PARAMS: dict[str, tuple[str, Any]] = {"target": ("object", "a"), "height": ("number", 0.1),
                                      "goal": ("vector", [0.5, 0.0])}


def _compile(text: str) -> tuple[Any, list[ExprError]]:
    return compile_success(text, _predicates(), objects=OBJECTS, groups=GROUPS, params=PARAMS)


def test_every_problem_of_a_condition_is_reported_at_once_with_its_column() -> None:
    text = "lifted(target, goal) and hled(a) or on(a) or inside(cube, tray) and at(a, [1])"
    cond, errs = _compile(text)
    assert cond is None
    assert [(e.code, e.column) for e in errs] == [
        ("WRONG_ARGUMENT", 16), ("UNKNOWN_PREDICATE", 26), ("PREDICATE_ARITY", 37),
        ("UNKNOWN_OBJECT", 53), ("WRONG_ARGUMENT", 69)]  # a literal is placed at its call
    assert errs[0].message == "parameter 'goal' is a vector, not a number"
    assert "did you mean 'held'" in errs[1].message
    assert errs[2].message == "'on(a)': on takes 2 to 3 argument(s), got 1"
    assert errs[2].fix == "write on(obj, support, tol=0.015)"
    assert errs[3].message.startswith("inside's obj: 'cube' is no object, group or parameter")
    assert errs[4].message == "'[1]' is not a vector"
    assert all(str(e).endswith(e.fix or "") and f"at column {e.column} of" in str(e)
               for e in errs)


def test_a_condition_shares_the_guards_parser_and_its_syntax_errors() -> None:
    _, errs = _compile("held(a) = released(a)")
    with pytest.raises(ExprError) as guard:
        compile_expr("bb.x = 1", roots=("bb",))
    assert [e.code for e in errs] == [guard.value.code] == ["INVALID_EXPRESSION"]
    assert errs[0].message == guard.value.message == "unexpected character '='"
    _, errs = _compile("on(a, b, tol=0.02)")
    assert "arguments are positional" in (errs[0].fix or "")


def test_a_guard_may_not_call_a_predicate_nor_a_condition_read_the_blackboard() -> None:
    with pytest.raises(ExprError, match="unknown function 'held'"):
        compile_expr("held(bb.cup)", roots=("bb",))
    _, errs = _compile("held(bb.cup)")
    assert [e.code for e in errs] == ["INVALID_EXPRESSION"] and errs[0].column == 8
    _, errs = _compile("held(a) and ready")
    assert [e.code for e in errs] == ["BAD_CONDITION"]
    assert errs[0].message == "'ready' is not a condition"


def test_all_any_and_count_are_functions_of_the_one_language() -> None:
    env: dict[str, Any] = {"bb": {"flags": [True, False, True], "n": 2}.get}
    assert compile_expr("count(bb.flags) == 2 and any(bb.flags) and not all(bb.flags)",
                        roots=("bb",)).test(env)
    assert compile_expr("count(bb.n > 1, bb.n > 5) == 1", roots=("bb",)).test(env)


class _Facts:
    """A state whose facts are written by hand: which objects are held."""

    def __init__(self, held: set[str]) -> None:
        self.held = held


HELD = Predicate("held", (Arg("obj", "object"),), lambda s, o: o in s.held)
NEAR = Predicate("near", (Arg("obj", "object"), Arg("d", "number", 0.1)),
                 lambda s, o, d: d > 0.05 and o in s.held)


def test_a_group_call_holds_for_every_member_and_counts_them_one_by_one() -> None:
    names = {"a": Name("object", "a"), "b": Name("object", "b"),
             "reds": Name("object", members=("a", "b")), "k": Name("number", 2, parameter=True)}
    preds = {"held": HELD, "near": NEAR}
    cond, errs = compile_condition("count(held(reds)) >= k or (held(reds) and near(a, -0.2))",
                                   preds, names)
    assert not errs and cond is not None
    assert cond.calls == ["held(reds)", "held(reds)", "near(a, -0.2)"]
    assert cond.evaluate(_Facts({"a"})) == (False, {"held(reds)[a]": True,
                                                    "held(reds)[b]": False})
    assert cond.evaluate(_Facts({"a", "b"})) == (True, {"held(reds)[a]": True,
                                                        "held(reds)[b]": True})
    not_all, _ = compile_condition("not held(reds)", preds, names)
    assert not_all is not None
    assert [not_all.evaluate(_Facts(h))[0] for h in ({"a"}, {"a", "b"})] == [True, False]


def test_a_scene_file_reports_every_problem_of_its_success_condition(tmp_path: Path) -> None:
    path = tmp_path / "scene.yaml"
    path.write_text("name: s\ninstruction: hold it\nobjects:\n"
                    "  cube: {shape: cube, size: 0.04, colour: red}\n"
                    "success:\n  when: lifted(cube, tall) and hold(cube) and count(held(cube))\n")
    scene, report = check_scene(path)
    assert scene is None
    found = [(p.code, str(p)) for p in report.errors]
    assert [c for c, _ in found] == ["WRONG_ARGUMENT", "UNKNOWN_PREDICATE",
                                     "COUNT_NEEDS_COMPARISON"]
    assert found[0][1].startswith(f"{path}:6:9: error WRONG_ARGUMENT: success.when at column 14 "
                                  "of the expression: 'tall' is not a number")
