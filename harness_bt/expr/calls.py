"""Conditions over a state: expressions of the one language whose calls are typed functions of
a state (a simulator's scene predicates) and whose bare names are typed values (objects, groups
of objects, parameters).

The text goes through the one parser (:func:`harness_bt.expr.syntax.parse`, names open);
:func:`compile_condition` then checks every call and name against what it knows, reports every
problem at once (each an :class:`~harness_bt.expr.syntax.ExprError` with its code, column and
fix), and binds the names to their values. What a condition may be::

    cond := CALL(arg, ...) | cond and cond | cond or cond | not cond | (cond)
          | all(cond, ...) | any(cond, ...) | count(cond, ...) OP number
    arg  := a name (object, group, parameter) | number | -number | [number, ...]

OP is one of ``>= > <= < == !=``. A group name stands for each member: the call runs once per
member, ``and`` / ``or`` / ``not`` / ``all`` hold when every member's call holds, ``any`` when
one does, and ``count`` counts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness_bt.expr.evaluate import evaluate
from harness_bt.expr.syntax import ExprError, Node, parse, unparse
from harness_bt.plugins import did_you_mean

__all__ = ["Condition", "Function", "Name", "compile_condition"]

_ORDER = (">=", ">", "<=", "<", "==", "!=")


class _Arg(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...  # "object", "number" or "vector"


class Function(Protocol):
    """A typed function of a state a condition may call (a scene's ``Predicate``)."""

    @property
    def name(self) -> str: ...

    @property
    def args(self) -> Sequence[_Arg]: ...

    @property
    def min_args(self) -> int: ...

    def signature(self) -> str: ...

    def __call__(self, state: Any, *values: Any) -> bool: ...


@dataclass(frozen=True, slots=True)
class Name:
    """What a bare name stands for: a value of a kind (``object``, ``number``, ``vector``,
    ``string``), a parameter's value (``parameter``), or each object of a group (``members``)."""

    kind: str
    value: Any = None
    members: tuple[str, ...] | None = None
    parameter: bool = False


@dataclass(frozen=True)
class Condition:
    """A checked condition, its names bound: evaluate it over a state."""

    text: str
    tree: Node
    calls: list[str]
    functions: Mapping[str, Function]

    def evaluate(self, state: Any) -> tuple[bool, dict[str, bool]]:
        """The verdict and the value of every call made (by its text; a group call once per
        member, ``text[member]``)."""
        values: dict[str, bool] = {}

        def apply(fn: str, args: list[Any], text: str) -> bool:
            values[text] = result = self.functions[fn](state, *args)
            return result

        return bool(evaluate(self.tree, {}, apply)), values


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _col(node: Node, default: int) -> int:
    tag = node[0]
    if tag in ("call", "path"):
        return int(node[3])
    if tag == "name":
        return int(node[2])
    if tag in ("and", "or"):
        return _col(node[1], default)
    if tag in ("cmp", "arith"):
        return _col(node[2], default)
    return default


def _constant(node: Node) -> Any:
    """The value of a literal (``-0.1``, ``[0.1, 0]``), else None."""
    if node[0] == "lit":
        return node[1]
    if node[0] == "neg":
        inner = _constant(node[1])
        return -inner if _is_number(inner) else None
    if node[0] == "list":
        items = [_constant(n) for n in node[1]]
        return None if any(i is None for i in items) else items
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Checker:
    def __init__(self, text: str, functions: Mapping[str, Function],
                 names: Mapping[str, Name], scope: str) -> None:
        self.text = text
        self.functions = functions
        self.names = names
        self.scope = scope
        self.errors: list[ExprError] = []
        self.calls: list[str] = []

    def error(self, code: str, message: str, fix: str, node: Node, col: int) -> None:
        self.errors.append(ExprError(message, self.text, _col(node, col), fix, code=code))

    def source(self, node: Node) -> str:
        if node[0] == "call":
            return self.text[node[3] - 1:node[4]]
        return unparse(node)

    def cond(self, node: Node, col: int) -> Node | None:
        tag = node[0]
        if tag in ("and", "or"):
            left, right = self.cond(node[1], col), self.cond(node[2], _col(node[2], col))
            return None if left is None or right is None else (tag, left, right)
        if tag == "not":
            inner = self.cond(node[1], col)
            return None if inner is None else ("not", inner)
        if tag == "cmp":
            return self.compare(node, col)
        if tag == "call":
            if node[1] == "count":
                self.error("COUNT_NEEDS_COMPARISON", f"{self.source(node)!r}: count(...) is a "
                           "number, not a condition", "compare it: count(...) >= 2", node, col)
                return None
            if node[1] in ("all", "any"):
                return self.reducer(node)
            return self.call(node)
        self.error("BAD_CONDITION", f"{unparse(node)!r} is not a condition", "write a call "
                   "such as lifted(target, 0.05), or all(...) / any(...) / not / and / or of "
                   "them", node, col)
        return None

    def reducer(self, node: Node) -> Node | None:
        parts = [self.cond(a, node[3]) for a in node[2]]
        return None if any(p is None for p in parts) else ("call", node[1], tuple(parts))

    def compare(self, node: Node, col: int) -> Node | None:
        _, op, left, right = node
        if op not in _ORDER or left[0] != "call" or left[1] != "count":
            self.error("BAD_CONDITION", f"{unparse(node)!r}: only count(...) can be compared",
                       "write count(inside(red, bowl)) >= 2", node, col)
            return None
        counted = self.reducer(left)
        bound = self.number(right, left[3])
        if counted is None or bound is None:
            return None
        return ("cmp", op, counted, ("lit", bound))

    def call(self, node: Node) -> Node | None:
        _, name, args, col, _ = node
        fn = self.functions.get(name)
        if fn is None:
            known = sorted(self.functions)
            self.error("UNKNOWN_PREDICATE", f"unknown predicate {name!r}; known: "
                       f"{', '.join(known)}{did_you_mean(name, known)}",
                       "use one of them, or install the package that provides it", node, col)
            return None
        text = self.source(node)
        if not fn.min_args <= len(args) <= len(fn.args):
            want = str(len(fn.args)) if fn.min_args == len(fn.args) else \
                f"{fn.min_args} to {len(fn.args)}"
            self.error("PREDICATE_ARITY", f"{text!r}: {name} takes {want} argument(s), got "
                       f"{len(args)}", f"write {fn.signature()}", node, col)
            return None
        bound: list[Node] = []
        groups = 0
        for arg, spec in zip(args, fn.args, strict=False):
            value = self.argument(arg, spec.kind, f"{name}'s {spec.name}", col)
            if value is not None and value[0] == "group":
                groups += 1
                if groups == 2:
                    self.error("BAD_CONDITION", f"{text!r}: one group per call", "name one "
                               "group, and single objects for the rest", arg, col)
                    value = None
            if value is None:
                return None
            bound.append(value)
        self.calls.append(text)
        return ("apply", name, tuple(bound), text)

    def argument(self, node: Node, kind: str, what: str, col: int) -> Node | None:
        if kind == "object":
            return self.object(node, what, col)
        value = self.number(node, col) if kind == "number" else self.vector(node, col)
        return None if value is None else ("lit", value)

    def object(self, node: Node, what: str, col: int) -> Node | None:
        if node[0] != "name":
            self.error("WRONG_ARGUMENT", f"{what}: {self.source(node)!r} is not an object",
                       "name an object, an object parameter or a group", node, col)
            return None
        word = node[1]
        entry = self.names.get(word)
        if entry is not None and entry.parameter:
            if entry.kind != "object":
                self.error("WRONG_ARGUMENT", f"{what}: parameter {word!r} is "
                           f"{_a(entry.kind)}, not an object", "pass an object here", node, col)
                return None
            word = entry.value
            entry = self.names.get(word)
        if entry is not None and entry.members is not None:
            return ("group", word, entry.members)
        if entry is None or entry.kind != "object":
            known = sorted(self.names)
            self.error("UNKNOWN_OBJECT", f"{what}: {word!r} is no object, group or parameter "
                       f"of {self.scope}{did_you_mean(word, known)}",
                       f"name one of: {', '.join(known)}", node, col)
            return None
        return ("lit", entry.value)

    def _parameter(self, node: Node, kind: str, col: int) -> tuple[bool, Any]:
        """(True, its value) for a parameter of ``kind``; (True, None) after reporting one of
        another kind; (False, None) when ``node`` names no parameter."""
        entry = self.names.get(node[1]) if node[0] == "name" else None
        if entry is None or not entry.parameter:
            return False, None
        if entry.kind == kind:
            return True, entry.value
        self.error("WRONG_ARGUMENT", f"parameter {node[1]!r} is {_a(entry.kind)}, not "
                   f"{_a(kind)}", f"pass {_a(kind)} here", node, col)
        return True, None

    def number(self, node: Node, col: int) -> float | None:
        named, value = self._parameter(node, "number", col)
        if not named:
            value = _constant(node)
            if not _is_number(value):
                self.error("WRONG_ARGUMENT", f"{self.source(node)!r} is not a number",
                           "write a number such as 0.05, or a number parameter", node, col)
                return None
        return None if value is None else float(value)

    def vector(self, node: Node, col: int) -> list[float] | None:
        named, value = self._parameter(node, "vector", col)
        if named:
            return None if value is None else [float(x) for x in value]
        value = _constant(node)
        if not (isinstance(value, list) and 2 <= len(value) <= 3
                and all(_is_number(x) for x in value)):
            self.error("WRONG_ARGUMENT", f"{self.source(node)!r} is not a vector",
                       "write [x, y] or [x, y, z] in metres, or a vector parameter", node, col)
            return None
        return [float(x) for x in value]


def compile_condition(text: str, functions: Mapping[str, Function],
                      names: Mapping[str, Name], *, scope: str = "the scene"
                      ) -> tuple[Condition | None, list[ExprError]]:
    """Parse and check ``text`` against the functions it may call and the names it may use
    (``scope`` names where they come from, for messages). Returns the condition (None if any
    problem) and every problem found."""
    if not isinstance(text, str):
        return None, [ExprError(f"a condition is text, got {type(text).__name__}", str(text), 1)]
    text = text.strip()
    try:
        tree = parse(text, (), open_names=True)
    except ExprError as exc:
        if exc.fix:
            return None, [exc]
        return None, [ExprError(exc.message, exc.text, exc.column, "write calls joined by "
                                "and / or / not, e.g. all(lifted(target, 0.05), held(target))")]
    checker = _Checker(text, functions, names, scope)
    bound = checker.cond(tree, 1)
    if checker.errors or bound is None:
        return None, checker.errors
    return Condition(text, bound, checker.calls, functions), []
