"""Success conditions: a small expression language over predicates, checked once and then
evaluated after every simulator step.

Grammar (a Python expression, nothing else allowed)::

    cond   := call | cond and cond | cond or cond | not cond | (cond)
            | all(cond, ...) | any(cond, ...) | count(cond, ...) OP number
    call   := PREDICATE(arg, ...)          e.g. lifted(target, 0.05), inside(red, bowl)
    arg    := object id | parameter name | group name | number | [number, ...]

A parameter stands for its value; a group name (``group:`` of the scene's objects) stands for
each object of the group: ``inside(red, bowl)`` holds when every red object is in the bowl,
``count(inside(red, bowl)) >= 2`` when two are. OP is one of ``>= > <= < ==``.

:func:`compile_condition` reports every problem (unknown predicate or name, wrong arity or
argument type) with the expression's place; :class:`Condition.evaluate` gives the verdict and
the value of every predicate call, which the simulator keeps as evidence.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_bt.plugins import did_you_mean
from harness_bt.scene.predicates import Predicate, SceneState

__all__ = ["Condition", "ConditionError", "compile_condition"]

_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.GtE: operator.ge, ast.Gt: operator.gt, ast.LtE: operator.le, ast.Lt: operator.lt,
    ast.Eq: operator.eq}
_REDUCERS = ("all", "any", "count")

Values = dict[str, bool]
Node = Callable[[SceneState, Values], Any]  # -> bool, or a list of bools (group calls)


@dataclass(frozen=True, slots=True)
class ConditionError:
    """One problem in an expression: message, fix, and the column (0-based) it starts at."""

    code: str
    message: str
    fix: str
    column: int


@dataclass
class Condition:
    """A compiled success condition (see the module docstring)."""

    text: str
    root: Node
    calls: list[str] = field(default_factory=list)

    def evaluate(self, state: SceneState) -> tuple[bool, Values]:
        """The verdict and the value of every predicate call (by its text)."""
        values: Values = {}
        return _truth(self.root(state, values)), values


def _truth(value: Any) -> bool:
    return all(value) if isinstance(value, list) else bool(value)


class _Compiler:
    def __init__(self, text: str, predicates: Mapping[str, Predicate], objects: Sequence[str],
                 groups: Mapping[str, Sequence[str]], params: Mapping[str, tuple[str, Any]]
                 ) -> None:
        self.text = text
        self.predicates = predicates
        self.objects = set(objects)
        self.groups = groups
        self.params = params
        self.errors: list[ConditionError] = []
        self.calls: list[str] = []

    def error(self, code: str, message: str, fix: str, node: ast.AST) -> None:
        self.errors.append(ConditionError(code, message, fix, getattr(node, "col_offset", 0)))

    def source(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ast.dump(node)

    # -- conditions --------------------------------------------------------------------------
    def cond(self, node: ast.AST) -> Node | None:
        if isinstance(node, ast.BoolOp):
            parts = [self.cond(v) for v in node.values]
            if any(p is None for p in parts):
                return None
            combine = all if isinstance(node.op, ast.And) else any
            return lambda s, v, ps=parts: combine(_truth(p(s, v)) for p in ps)  # type: ignore[misc]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.cond(node.operand)
            return None if inner is None else (lambda s, v: not _truth(inner(s, v)))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in _REDUCERS:
                if name == "count":
                    self.error("COUNT_NEEDS_COMPARISON", f"{self.source(node)!r}: count(...) is "
                               "a number, not a condition", "compare it: count(...) >= 2", node)
                    return None
                return self.reducer(node)
            return self.call(node)
        self.error("BAD_CONDITION", f"{self.source(node)!r} is not a condition", "write a "
                   "predicate call such as lifted(target, 0.05), or all(...) / any(...) / "
                   "not / and / or of them", node)
        return None

    def items(self, node: ast.Call) -> list[Node] | None:
        if node.keywords or not node.args:
            self.error("BAD_CONDITION", f"{self.source(node)!r}: {node.func.id}() takes one "  # type: ignore[attr-defined]
                       "or more conditions", "write e.g. all(held(a), lifted(a))", node)
            return None
        parts = [self.cond(a) for a in node.args]
        return None if any(p is None for p in parts) else parts  # type: ignore[return-value]

    def reducer(self, node: ast.Call) -> Node | None:
        parts = self.items(node)
        if parts is None:
            return None

        def flat(s: SceneState, v: Values) -> list[bool]:
            out: list[bool] = []
            for p in parts:
                r = p(s, v)
                out.extend(r if isinstance(r, list) else [bool(r)])
            return out

        if node.func.id == "all":  # type: ignore[attr-defined]
            return lambda s, v: all(flat(s, v))
        if node.func.id == "any":  # type: ignore[attr-defined]
            return lambda s, v: any(flat(s, v))
        return lambda s, v: sum(flat(s, v))

    def compare(self, node: ast.Compare) -> Node | None:
        left = node.left
        if not (len(node.ops) == 1 and type(node.ops[0]) in _COMPARE
                and isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
                and left.func.id == "count"):
            self.error("BAD_CONDITION", f"{self.source(node)!r}: only count(...) can be "
                       "compared", "write count(inside(red, bowl)) >= 2", node)
            return None
        bound = self.number(node.comparators[0])
        counted = self.reducer(left)
        if counted is None or bound is None:
            return None
        op = _COMPARE[type(node.ops[0])]
        return lambda s, v: op(counted(s, v), bound)

    # -- predicate calls ---------------------------------------------------------------------
    def call(self, node: ast.Call) -> Node | None:
        name = node.func.id  # type: ignore[attr-defined]
        pred = self.predicates.get(name)
        if pred is None:
            known = sorted(self.predicates)
            self.error("UNKNOWN_PREDICATE", f"unknown predicate {name!r}; known: "
                       f"{', '.join(known)}{did_you_mean(name, known)}",
                       "use one of them, or install the package that provides it", node)
            return None
        if node.keywords:
            self.error("BAD_CONDITION", f"{self.source(node)!r}: arguments are positional",
                       f"write {pred.signature()}", node)
            return None
        if not pred.min_args <= len(node.args) <= len(pred.args):
            want = str(len(pred.args)) if pred.min_args == len(pred.args) else \
                f"{pred.min_args} to {len(pred.args)}"
            self.error("PREDICATE_ARITY", f"{self.source(node)!r}: {name} takes {want} "
                       f"argument(s), got {len(node.args)}", f"write {pred.signature()}", node)
            return None
        values: list[Any] = []
        group_at = None
        for i, (arg, spec) in enumerate(zip(node.args, pred.args, strict=False)):
            value = self.argument(arg, spec.kind, f"{name}'s {spec.name}")
            if value is _BAD:
                return None
            if isinstance(value, _Group):
                if group_at is not None:
                    self.error("BAD_CONDITION", f"{self.source(node)!r}: one group per call",
                               "name one group, and single objects for the rest", arg)
                    return None
                group_at = i
            values.append(value)
        text = self.source(node)
        self.calls.append(text)
        if group_at is None:
            def single(s: SceneState, v: Values) -> bool:
                v[text] = result = pred(s, *values)
                return result
            return single
        members = values[group_at].members

        def each(s: SceneState, v: Values) -> list[bool]:
            out = []
            for m in members:
                args = list(values)
                args[group_at] = m
                out.append(pred(s, *args))
                v[f"{text}[{m}]"] = out[-1]
            return out
        return each

    def argument(self, node: ast.AST, kind: str, what: str) -> Any:
        if kind == "object":
            if not isinstance(node, ast.Name):
                self.error("WRONG_ARGUMENT", f"{what}: {self.source(node)!r} is not an object",
                           "name an object, an object parameter or a group", node)
                return _BAD
            name = node.id
            if name in self.params:
                ptype, value = self.params[name]
                if ptype != "object":
                    self.error("WRONG_ARGUMENT", f"{what}: parameter {name!r} is {_a(ptype)}, "
                               "not an object", "pass an object here", node)
                    return _BAD
                name = value
            if name in self.groups:
                return _Group(tuple(self.groups[name]))
            if name not in self.objects:
                known = sorted({*self.objects, *self.groups, *self.params})
                self.error("UNKNOWN_OBJECT", f"{what}: {name!r} is no object, group or "
                           f"parameter of the scene{did_you_mean(name, known)}",
                           f"name one of: {', '.join(known)}", node)
                return _BAD
            return name
        if kind == "number":
            value = self.number(node)
            return _BAD if value is None else value
        value = self.vector(node)
        return _BAD if value is None else value

    def _param(self, node: ast.AST, kind: str) -> Any:
        if isinstance(node, ast.Name) and node.id in self.params:
            ptype, value = self.params[node.id]
            if ptype == kind:
                return value
            self.error("WRONG_ARGUMENT", f"parameter {node.id!r} is {_a(ptype)}, not {_a(kind)}",
                       f"pass {_a(kind)} here", node)
            return None
        return _BAD

    def _literal(self, node: ast.AST, kind: str) -> Any:
        """A parameter of ``kind`` by name (its value, or None when of another type), else
        the literal written (``_BAD`` when it is none)."""
        value = self._param(node, kind)
        if value is not _BAD:
            return value
        try:
            return ast.literal_eval(node)
        except ValueError:
            return _BAD

    def number(self, node: ast.AST) -> float | None:
        result = self._literal(node, "number")
        if result is None:
            return None
        if isinstance(result, bool) or not isinstance(result, int | float):
            self.error("WRONG_ARGUMENT", f"{self.source(node)!r} is not a number",
                       "write a number such as 0.05, or a number parameter", node)
            return None
        return float(result)

    def vector(self, node: ast.AST) -> list[float] | None:
        result = self._literal(node, "vector")
        if result is None:
            return None
        if not (isinstance(result, list | tuple) and 2 <= len(result) <= 3 and all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in result)):
            self.error("WRONG_ARGUMENT", f"{self.source(node)!r} is not a vector",
                       "write [x, y] or [x, y, z] in metres, or a vector parameter", node)
            return None
        return [float(x) for x in result]


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


@dataclass(frozen=True, slots=True)
class _Group:
    members: tuple[str, ...]


_BAD = object()


def compile_condition(text: str, predicates: Mapping[str, Predicate], *,
                      objects: Sequence[str], groups: Mapping[str, Sequence[str]] | None = None,
                      params: Mapping[str, tuple[str, Any]] | None = None
                      ) -> tuple[Condition | None, list[ConditionError]]:
    """Compile ``text`` against the predicates, the scene's objects and groups, and its
    parameters (name -> (type, value)). Returns the condition (None if any problem) and every
    problem found."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        return None, [ConditionError("CONDITION_SYNTAX", f"malformed condition: {exc.msg}",
                                     "write predicate calls joined by and / or / not, e.g. "
                                     "all(lifted(target, 0.05), held(target))",
                                     max(0, (exc.offset or 1) - 1))]
    compiler = _Compiler(text.strip(), predicates, objects, groups or {}, params or {})
    root = compiler.cond(tree.body)
    if compiler.errors or root is None:
        return None, compiler.errors
    return Condition(text.strip(), root, compiler.calls), []
