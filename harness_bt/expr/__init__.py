"""A small, safe, declarative expression language for guards and waits (never ``eval``).

Task files name conditions in text: a transition guard (``when: "outcome.reason ==
'NO_PROGRESS' and bb.attempts < 3"``) or a wait (``wait_for`` with ``when: "not
exists(world.cup)"``). The text is tokenised and parsed here into a small tree that is
interpreted over read-only views; nothing in it can call Python, import, or reach an attribute
of a Python object.

Grammar (``not`` binds tighter than ``and``, ``and`` tighter than ``or``; comparisons do not
chain)::

    expr       := or
    or         := and ("or" and)*
    and        := not ("and" not)*
    not        := "not" not | comparison
    comparison := sum [("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in") sum]
    sum        := product (("+" | "-") product)*
    product    := unary (("*" | "/") unary)*
    unary      := "-" unary | primary
    primary    := NUMBER | STRING | true | false | null | "(" expr ")"
                | "[" [expr ("," expr)*] "]" | FUNCTION "(" [expr ("," expr)*] ")" | path
                | "let" NAME "=" expr ("," NAME "=" expr)* "in" expr | BOUND steps
    path       := ROOT steps
    steps      := ("." NAME | "[" (STRING | NUMBER) "]")*

Roots: ``bb`` (or ``blackboard``): the run's blackboard; ``world``: the world model, one entry
per object id (``world.cup.confidence``, ``.pose``, ``.position``, ``.extent``, ``.version``,
``.age_s``, ``.label``, ``.on``, ``.in``, ``.held_by``, ``.id``; in a ``for_each``'s ``over``,
``where`` and ``order`` also ``.shape``, ``.colour``, ``.group``, as the task's scene declares
them; ``world.objects``: every object, by id); ``outcome`` (transition guards only):
``.kind``, ``.reason``, ``.node_path``, ``.retryable``, ``.details``. Functions: ``exists``,
``len``, ``abs``, ``min``, ``max``, ``all`` / ``any`` (every / some argument true, lists taken
item by item), ``count`` (how many are), ``nearest(objects, to)``, and the selectors
``filter`` / ``argmin`` / ``argmax`` (``argmin(world.objects, it.position[2])``: the second
argument once per item, as ``it``).
``let d = world.tray.position in ...`` names a sub-expression. The reference is
docs/expressions.md.

The same language judges a scene (:mod:`harness_bt.expr.calls`): there the calls are the
scene's predicates over the simulator's state and bare names are its objects, groups and
parameters (``inside(reds, tray) and count(still(reds)) >= 2``), checked with every problem
reported at once by :func:`compile_condition`.

A path that leads nowhere is *missing*: it equals ``null``, every other comparison with it is
false, ``exists()`` of it is false. Comparing values of different kinds is false; arithmetic on
non-numbers is missing. A guard therefore never raises while a task runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness_bt.expr.calls import Condition, Function, Name, compile_condition
from harness_bt.expr.evaluate import (
    MISSING,
    Bound,
    Each,
    Resolver,
    evaluate,
    object_view,
    run_env,
)
from harness_bt.expr.syntax import ExprError, Node, parse, unparse, walk

__all__ = ["MISSING", "Bound", "Condition", "Each", "ExprError", "Expression", "Function", "Name",
           "compile_condition", "compile_expr", "object_view", "run_env"]


@dataclass(frozen=True)
class Expression:
    """A parsed expression: evaluate it over resolvers, list what it reads, rename keys."""

    text: str
    tree: Node
    roots: frozenset[str]

    def evaluate(self, env: Mapping[str, Resolver]) -> Any:
        """The value, with ``env`` mapping each root (``bb``, ``world``, ``outcome``) to a
        function from a first key to its value (:data:`MISSING` when absent)."""
        return evaluate(self.tree, env)

    def test(self, env: Mapping[str, Resolver]) -> bool:
        return bool(self.evaluate(env))

    def reads(self, root: str = "bb") -> list[str]:
        """The first keys read under ``root`` (``bb``: blackboard keys), in order."""
        out: list[str] = []
        for node in walk(self.tree):
            if node[0] == "path" and node[1] == root and node[2]:
                key = str(node[2][0])
                if key not in out:
                    out.append(key)
        return out

    def renamed(self, mapping: Mapping[str, str]) -> str:
        """The text with blackboard keys renamed (``{"target": "goal"}``)."""
        return unparse(self.tree, mapping)

    def __str__(self) -> str:
        return self.text


def compile_expr(text: str, *, roots: Iterable[str] = ("bb", "world", "outcome"),
                 bound: Iterable[str] = ()) -> Expression:
    """Parse ``text``; ``roots`` are the path roots this place allows, ``bound`` the names it
    gives a value (``items`` in a ``for_each`` order: pass them as :class:`Bound` in the
    environment). Raises :class:`ExprError` (with a column and a fix) on any syntax or name
    error."""
    if not isinstance(text, str):
        raise ExprError(f"an expression is text, got {type(text).__name__}", str(text), 1)
    allowed = frozenset(roots)
    tree = parse(text, allowed, bound=bound)
    return Expression(text, tree, allowed)
