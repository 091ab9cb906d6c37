"""Evaluating parsed expressions over read-only views, and the views of a run (blackboard,
world, a transition's outcome). Nothing here raises on odd data: a path that leads nowhere is
:data:`MISSING`, a comparison of different kinds is false. See :mod:`harness_bt.expr`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from harness_bt.expr.syntax import ExprError, Node

__all__ = ["MISSING", "Apply", "Bound", "Each", "Resolver", "evaluate", "object_view",
           "run_env"]


class _Missing:
    """The value of a path that leads nowhere."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class Each(tuple):
    """The values of one call made once per member of a group (``inside(reds, tray)``): true
    when every one is; ``all`` / ``any`` / ``count`` count its members one by one."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return all(self)


def _flat(args: list[Any]) -> list[bool]:
    out: list[bool] = []
    for a in args:
        if isinstance(a, Each | list | tuple):
            out.extend(bool(x) for x in a)
        else:
            out.append(bool(a))
    return out


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _compare(op: str, a: Any, b: Any) -> bool:
    if op in ("in", "not in"):
        if b is MISSING or a is MISSING or not isinstance(b, list | tuple | str | Mapping):
            return False
        try:
            found = a in b
        except TypeError:
            return False
        return found if op == "in" else not found
    if a is MISSING:
        a = None
    if b is MISSING:
        b = None
    if op in ("==", "!="):
        same = (a == b) if (_number(a) and _number(b)) or type(a) is type(b) else False
        return same if op == "==" else not same
    if not ((_number(a) and _number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _arith(op: str, a: Any, b: Any) -> Any:
    if not (_number(a) and _number(b)):
        return MISSING
    if op == "/":
        return MISSING if b == 0 else a / b
    out = {"+": a + b, "-": a - b, "*": a * b}[op]
    return out if not isinstance(out, float) or math.isfinite(out) else MISSING


def _step(value: Any, key: str | int) -> Any:
    if value is MISSING or value is None:
        return MISSING
    if hasattr(value, "to_dict") and not isinstance(value, Mapping):
        value = value.to_dict()
    if isinstance(value, Mapping):
        return value.get(key, MISSING) if isinstance(key, str) else value.get(str(key), MISSING)
    if isinstance(value, list | tuple) and isinstance(key, int):
        return value[key] if 0 <= key < len(value) else MISSING
    return MISSING


def _call(fn: str, args: list[Any]) -> Any:
    if fn in ("all", "any", "count"):
        flat = _flat(args)
        return all(flat) if fn == "all" else any(flat) if fn == "any" else sum(flat)
    if fn == "exists":
        return args[0] is not MISSING and args[0] is not None
    if fn == "len":
        return len(args[0]) if isinstance(args[0], str | list | tuple | Mapping) else MISSING
    if fn == "abs":
        return abs(args[0]) if _number(args[0]) else MISSING
    if not all(_number(a) for a in args):
        return MISSING
    return min(args) if fn == "min" else max(args)


class Bound:
    """A name's value (a ``let`` binding, a selector's ``it``, a place's own names such as
    ``items``): a resolver like the roots', and the whole value for the bare name."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, key: str | int) -> Any:
        return _step(self.value, key)


def _position(value: Any, env: Mapping[str, Any]) -> list[float] | None:
    """Where a value is: an object (its view, or its id looked up in the world) or a list of
    two or three numbers."""
    if isinstance(value, str) and "world" in env:
        value = env["world"](value)
    if isinstance(value, Mapping):
        value = value.get("position", MISSING)
    if isinstance(value, list | tuple) and 2 <= len(value) <= 7 \
            and all(_number(v) for v in value):
        return [float(v) for v in value[:3]]
    return None


def _nearest(args: list[Any], env: Mapping[str, Any]) -> Any:
    items, to = args
    target = _position(to, env)
    if not isinstance(items, list | tuple) or target is None:
        return MISSING
    best, best_d = MISSING, math.inf
    for item in items:
        here = _position(item, env)
        if here is None:
            continue
        d = sum((a - b) ** 2 for a, b in zip(here, target, strict=False))
        if d < best_d:  # ties keep the first: the order of the items decides
            best, best_d = item, d
    return best


def _select(node: Node, env: Mapping[str, Any], apply: Any) -> Any:
    _, fn, items_node, per_item, _ = node
    items = evaluate(items_node, env, apply)
    if not isinstance(items, list | tuple):
        return MISSING
    scope = dict(env)
    keep: list[Any] = []
    best, best_v = MISSING, None
    for item in items:
        scope["it"] = Bound(item)
        value = evaluate(per_item, scope, apply)
        if fn == "filter":
            if value is not MISSING and bool(value):
                keep.append(item)
        elif _number(value) and (best_v is None or (value < best_v if fn == "argmin"
                                                    else value > best_v)):
            best, best_v = item, value  # ties keep the first
    return keep if fn == "filter" else best


Resolver = Callable[[str | int], Any]
#: Runs one bound call: (function name, argument values, the call's text) -> its value.
Apply = Callable[[str, list[Any], str], Any]


def _apply(node: Node, env: Mapping[str, Resolver], apply: Apply | None) -> Any:
    _, fn, arg_nodes, text = node
    if apply is None:
        return MISSING
    args = [evaluate(n, env, apply) for n in arg_nodes]
    at = next((i for i, n in enumerate(arg_nodes) if n[0] == "group"), None)
    if at is None:
        return apply(fn, args, text)
    return Each(apply(fn, [*args[:at], member, *args[at + 1:]], f"{text}[{member}]")
                for member in arg_nodes[at][2])


def evaluate(node: Node, env: Mapping[str, Resolver], apply: Apply | None = None) -> Any:
    """The value of ``node``. Bound calls (``("apply", fn, args, text)`` nodes, made by
    :func:`harness_bt.expr.calls.bind`) run through ``apply``; a call with a group argument
    (``("group", name, members)``) runs once per member and gives an :class:`Each`."""
    tag = node[0]
    if tag == "lit":
        return node[1]
    if tag == "apply":
        return _apply(node, env, apply)
    if tag == "group":
        return node[2]
    if tag == "name":
        return MISSING
    if tag == "path":
        _, root, steps, _ = node
        if root not in env:
            return MISSING
        value = env[root](steps[0])
        for key in steps[1:]:
            value = _step(value, key)
        return value
    if tag == "list":
        return [evaluate(n, env, apply) for n in node[1]]
    if tag == "var":
        bound = env.get(node[1])
        value = bound.value if isinstance(bound, Bound) else MISSING
        for key in node[2]:
            value = _step(value, key)
        return value
    if tag == "let":
        scope = dict(env)
        for name, value_node in node[1]:
            scope[name] = Bound(evaluate(value_node, scope, apply))
        return evaluate(node[2], scope, apply)
    if tag == "select":
        return _select(node, env, apply)
    if tag == "at":
        value = evaluate(node[1], env, apply)
        for key in node[2]:
            value = _step(value, key)
        return value
    if tag == "call":
        args = [evaluate(n, env, apply) for n in node[2]]
        return _nearest(args, env) if node[1] == "nearest" else _call(node[1], args)
    if tag == "not":
        return not evaluate(node[1], env, apply)
    if tag == "and":
        return bool(evaluate(node[1], env, apply)) and bool(evaluate(node[2], env, apply))
    if tag == "or":
        return bool(evaluate(node[1], env, apply)) or bool(evaluate(node[2], env, apply))
    if tag == "cmp":
        return _compare(node[1], evaluate(node[2], env, apply), evaluate(node[3], env, apply))
    if tag == "arith":
        return _arith(node[1], evaluate(node[2], env, apply), evaluate(node[3], env, apply))
    if tag == "neg":
        v = evaluate(node[1], env, apply)
        return -v if _number(v) else MISSING
    raise ExprError(f"internal: no evaluation for expression node {tag!r}", str(node), 1)


# ---------------------------------------------------------------------------- run-time views

def object_view(obj: Any, age_s: float | None) -> dict[str, Any]:
    """What ``world.<id>`` shows of a world object: plain data only."""
    pose = obj.pose.to_list()
    rels = {str(k): v for k, v in obj.relations.items()}
    return {"id": getattr(obj, "object_id", MISSING), "pose": pose, "position": pose[:3],
            "extent": list(obj.extent),
            "confidence": obj.confidence, "version": obj.version, "label": obj.label,
            "age_s": MISSING if age_s is None else age_s,
            "on": rels.get("on"), "in": rels.get("in"), "held_by": rels.get("held_by")}


def run_env(*, blackboard: Any = None, world: Any = None, now: float | None = None,
            outcome: Any = None) -> dict[str, Resolver]:
    """Resolvers over a run's blackboard (``get``), world (a model or a view: ``get`` and
    ``age``) and a transition's outcome (``to_dict``)."""
    env: dict[str, Resolver] = {}
    if blackboard is not None:
        def bb(key: str | int) -> Any:
            return blackboard.get(str(key), MISSING) if str(key) in blackboard else MISSING
        env["bb"] = bb
    if world is not None:
        def wo(key: str | int) -> Any:
            obj = world.get(str(key))
            if obj is None:
                if key == "objects" and hasattr(world, "objects"):
                    return [wo(o.object_id) for o in
                            sorted(world.objects(), key=lambda o: o.object_id)]
                return MISSING
            try:
                age = world.age(str(key)) if now is None else world.age(str(key), now)
            except TypeError:
                age = None
            return object_view(obj, age)
        env["world"] = wo
    if outcome is not None:
        data = outcome.to_dict() if hasattr(outcome, "to_dict") else dict(outcome)

        def oc(key: str | int) -> Any:
            return data.get(str(key), MISSING)
        env["outcome"] = oc
    return env
