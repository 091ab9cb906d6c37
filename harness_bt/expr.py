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
    path       := ROOT ("." NAME | "[" (STRING | NUMBER) "]")*

Roots: ``bb`` (or ``blackboard``): the run's blackboard; ``world``: the world model, one entry
per object id (``world.cup.confidence``, ``.pose``, ``.position``, ``.extent``, ``.version``,
``.age_s``, ``.label``, ``.on``, ``.in``, ``.held_by``); ``outcome`` (transition guards only):
``.kind``, ``.reason``, ``.node_path``, ``.retryable``, ``.details``. Functions: ``exists``,
``len``, ``abs``, ``min``, ``max``.

A path that leads nowhere is *missing*: it equals ``null``, every other comparison with it is
false, ``exists()`` of it is false. Comparing values of different kinds is false; arithmetic on
non-numbers is missing. A guard therefore never raises while a task runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MISSING", "ExprError", "Expression", "compile_expr", "object_view", "run_env"]

ROOTS = {"bb": "bb", "blackboard": "bb", "world": "world", "outcome": "outcome"}
FUNCTIONS = ("abs", "exists", "len", "max", "min")
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}


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


class ExprError(ValueError):
    """A syntax or name error in an expression; ``column`` is 1-based within the text."""

    def __init__(self, message: str, text: str, column: int, fix: str = "") -> None:
        self.message = message
        self.text = text
        self.column = column
        self.fix = fix
        super().__init__(f"{message} at column {column} of {text!r}" + (f"; {fix}" if fix
                                                                          else ""))


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|<|>|\+|-|\*|/|\(|\)|\[|\]|,|\.)
""", re.X)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # number, string, name, op, end
    text: str
    col: int  # 1-based


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            ch = text[pos]
            fix = "use '==' to compare" if ch == "=" else \
                "use 'and' / 'or' / 'not'" if ch in "&|!" else "write strings in quotes"
            raise ExprError(f"unexpected character {ch!r}", text, pos + 1, fix)
        kind = m.lastgroup or ""
        if kind == "string" and m.group().count("\n"):
            raise ExprError("a string may not span lines", text, pos + 1)
        if kind != "ws":
            out.append(_Tok(kind, m.group(), pos + 1))
        pos = m.end()
    out.append(_Tok("end", "", len(text) + 1))
    return out


# ---------------------------------------------------------------------------- syntax tree
# Nodes are tuples: ("lit", value) ("path", root, (steps...), col) ("call", fn, (args...))
# ("list", (items...)) ("not", x) ("and", a, b) ("or", a, b) ("cmp", op, a, b)
# ("arith", op, a, b) ("neg", x)

Node = tuple[Any, ...]


class _Parser:
    def __init__(self, text: str, roots: Iterable[str]) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.roots = set(roots)

    def peek(self, offset: int = 0) -> _Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return tok

    def error(self, message: str, tok: _Tok, fix: str = "") -> ExprError:
        return ExprError(message, self.text, tok.col, fix)

    def expect(self, text: str) -> _Tok:
        tok = self.peek()
        if tok.text != text or tok.kind not in ("op", "name"):
            got = "the end" if tok.kind == "end" else repr(tok.text)
            raise self.error(f"expected {text!r}, found {got}", tok)
        return self.take()

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise self.error("the expression is empty", self.peek())
        node = self.or_()
        tok = self.peek()
        if tok.kind != "end":
            fix = "use '==' to compare" if tok.text == "=" else ""
            raise self.error(f"unexpected {tok.text!r}", tok, fix)
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek().text == "or" and self.peek().kind == "name":
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.peek().text == "and" and self.peek().kind == "name":
            self.take()
            node = ("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.peek().text == "not" and self.peek().kind == "name":
            self.take()
            return ("not", self.not_())
        return self.comparison()

    def comparison(self) -> Node:
        left = self.sum()
        tok = self.peek()
        op = None
        if tok.kind == "op" and tok.text in ("==", "!=", "<", "<=", ">", ">="):
            op = self.take().text
        elif tok.kind == "name" and tok.text == "in":
            self.take()
            op = "in"
        elif tok.kind == "name" and tok.text == "not" and self.peek(1).text == "in":
            self.take()
            self.take()
            op = "not in"
        if op is None:
            return left
        right = self.sum()
        nxt = self.peek()
        if nxt.kind == "op" and nxt.text in ("==", "!=", "<", "<=", ">", ">="):
            raise self.error("comparisons do not chain", nxt, "join them with 'and'")
        return ("cmp", op, left, right)

    def sum(self) -> Node:
        node = self.product()
        while self.peek().kind == "op" and self.peek().text in "+-":
            op = self.take().text
            node = ("arith", op, node, self.product())
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.peek().kind == "op" and self.peek().text in "*/":
            op = self.take().text
            node = ("arith", op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek().kind == "op" and self.peek().text == "-":
            self.take()
            return ("neg", self.unary())
        return self.primary()

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "number":
            value = float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
            return ("lit", value)
        if tok.kind == "string":
            return ("lit", _unquote(tok.text))
        if tok.kind == "op" and tok.text == "(":
            node = self.or_()
            self.expect(")")
            return node
        if tok.kind == "op" and tok.text == "[":
            items = self.items("]")
            return ("list", tuple(items))
        if tok.kind == "name":
            word = tok.text
            if word in ("true", "false", "null"):
                return ("lit", {"true": True, "false": False, "null": None}[word])
            if word in ("True", "False", "None"):
                lower = {"True": "true", "False": "false", "None": "null"}[word]
                raise self.error(f"unknown name {word!r}", tok, f"write {lower!r}")
            if self.peek().kind == "op" and self.peek().text == "(":
                if word not in FUNCTIONS:
                    raise self.error(f"unknown function {word!r}", tok,
                                     f"known: {', '.join(FUNCTIONS)}")
                self.take()
                args = self.items(")")
                arity = {"exists": (1, 1), "len": (1, 1), "abs": (1, 1), "min": (2, 99),
                         "max": (2, 99)}[word]
                if not arity[0] <= len(args) <= arity[1]:
                    raise self.error(f"{word}() takes {arity[0]}"
                                     f"{'' if arity[0] == arity[1] else ' or more'} "
                                     f"argument(s), got {len(args)}", tok)
                return ("call", word, tuple(args))
            if word in _KEYWORDS:
                raise self.error(f"unexpected {word!r}", tok)
            if word not in ROOTS or ROOTS[word] not in self.roots:
                known = sorted(r for r, v in ROOTS.items() if v in self.roots)
                raise self.error(f"unknown name {word!r}", tok,
                                 f"a path starts with one of {', '.join(known)}; write "
                                 "strings in quotes")
            return self.path(ROOTS[word], tok)
        got = "the end" if tok.kind == "end" else repr(tok.text)
        raise self.error(f"expected a value, found {got}", tok)

    def items(self, close: str) -> list[Node]:
        items: list[Node] = []
        if self.peek().kind == "op" and self.peek().text == close:
            self.take()
            return items
        while True:
            items.append(self.or_())
            tok = self.peek()
            if tok.kind == "op" and tok.text == ",":
                self.take()
                continue
            self.expect(close)
            return items

    def path(self, root: str, start: _Tok) -> Node:
        steps: list[str | int] = []
        while self.peek().kind == "op" and self.peek().text in (".", "["):
            if self.take().text == ".":
                tok = self.take()
                if tok.kind != "name":
                    raise self.error("expected a name after '.'", tok,
                                     "for keys with dots or spaces write bb['a.b']")
                steps.append(tok.text)
            else:
                tok = self.take()
                if tok.kind == "string":
                    steps.append(_unquote(tok.text))
                elif tok.kind == "number" and tok.text.isdigit():
                    steps.append(int(tok.text))
                else:
                    raise self.error("an index is a quoted key or a whole number", tok)
                self.expect("]")
        if not steps:
            raise self.error(f"{start.text!r} needs a key", start,
                             f"e.g. {start.text}.name or {start.text}['a.b']")
        return ("path", root, tuple(steps), start.col)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# ---------------------------------------------------------------------------- evaluation

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
    if fn == "exists":
        return args[0] is not MISSING and args[0] is not None
    if fn == "len":
        return len(args[0]) if isinstance(args[0], str | list | tuple | Mapping) else MISSING
    if fn == "abs":
        return abs(args[0]) if _number(args[0]) else MISSING
    if not all(_number(a) for a in args):
        return MISSING
    return min(args) if fn == "min" else max(args)


Resolver = Callable[[str | int], Any]


def _eval(node: Node, env: Mapping[str, Resolver]) -> Any:
    tag = node[0]
    if tag == "lit":
        return node[1]
    if tag == "path":
        _, root, steps, _ = node
        if root not in env:
            return MISSING
        value = env[root](steps[0])
        for key in steps[1:]:
            value = _step(value, key)
        return value
    if tag == "list":
        return [_eval(n, env) for n in node[1]]
    if tag == "call":
        return _call(node[1], [_eval(n, env) for n in node[2]])
    if tag == "not":
        return not _eval(node[1], env)
    if tag == "and":
        return bool(_eval(node[1], env)) and bool(_eval(node[2], env))
    if tag == "or":
        return bool(_eval(node[1], env)) or bool(_eval(node[2], env))
    if tag == "cmp":
        return _compare(node[1], _eval(node[2], env), _eval(node[3], env))
    if tag == "arith":
        return _arith(node[1], _eval(node[2], env), _eval(node[3], env))
    if tag == "neg":
        v = _eval(node[1], env)
        return -v if _number(v) else MISSING
    raise ValueError(f"bad expression node {tag!r}")  # unreachable: the parser makes these


_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "arith+": 5, "arith*": 6, "neg": 7}


def _prec(node: Node) -> int:
    if node[0] == "arith":
        return _PREC["arith+" if node[1] in "+-" else "arith*"]
    return _PREC.get(node[0], 9)


def _unparse(node: Node, mapping: Mapping[str, str] | None = None) -> str:
    tag = node[0]

    def sub(child: Node, prec: int) -> str:
        text = _unparse(child, mapping)
        return f"({text})" if _prec(child) < prec else text

    if tag == "lit":
        v = node[1]
        if v is None or isinstance(v, bool):
            return {None: "null", True: "true", False: "false"}[v]
        return _quote(v) if isinstance(v, str) else repr(v)
    if tag == "path":
        _, root, steps, _ = node
        if root == "bb" and steps and mapping and isinstance(steps[0], str) \
                and steps[0] in mapping:
            steps = (mapping[steps[0]], *steps[1:])
        text = root
        for s in steps:
            if isinstance(s, int):
                text += f"[{s}]"
            elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s) and s not in _KEYWORDS:
                text += f".{s}"
            else:
                text += f"[{_quote(s)}]"
        return text
    if tag == "list":
        return "[" + ", ".join(_unparse(n, mapping) for n in node[1]) + "]"
    if tag == "call":
        return f"{node[1]}(" + ", ".join(_unparse(n, mapping) for n in node[2]) + ")"
    if tag == "not":
        return "not " + sub(node[1], _PREC["not"])
    if tag in ("and", "or"):
        p = _PREC[tag]
        return f"{sub(node[1], p)} {tag} {sub(node[2], p + 1 if tag == 'and' else p)}"
    if tag == "cmp":
        p = _PREC["cmp"]
        return f"{sub(node[2], p + 1)} {node[1]} {sub(node[3], p + 1)}"
    if tag == "arith":
        p = _prec(node)
        return f"{sub(node[2], p)} {node[1]} {sub(node[3], p + 1)}"
    return "-" + sub(node[1], _PREC["neg"])


def _children(node: Node) -> tuple[Node, ...]:
    tag = node[0]
    if tag == "list":
        return tuple(node[1])
    if tag == "call":
        return tuple(node[2])
    if tag in ("not", "neg"):
        return (node[1],)
    if tag in ("and", "or"):
        return (node[1], node[2])
    if tag in ("cmp", "arith"):
        return (node[2], node[3])
    return ()


def _walk(node: Node) -> Iterable[Node]:
    yield node
    for child in _children(node):
        yield from _walk(child)


@dataclass(frozen=True)
class Expression:
    """A parsed expression: evaluate it over resolvers, list what it reads, rename keys."""

    text: str
    tree: Node
    roots: frozenset[str]

    def evaluate(self, env: Mapping[str, Resolver]) -> Any:
        """The value, with ``env`` mapping each root (``bb``, ``world``, ``outcome``) to a
        function from a first key to its value (:data:`MISSING` when absent)."""
        return _eval(self.tree, env)

    def test(self, env: Mapping[str, Resolver]) -> bool:
        return bool(self.evaluate(env))

    def reads(self, root: str = "bb") -> list[str]:
        """The first keys read under ``root`` (``bb``: blackboard keys), in order."""
        out: list[str] = []
        for node in _walk(self.tree):
            if node[0] == "path" and node[1] == root and node[2]:
                key = str(node[2][0])
                if key not in out:
                    out.append(key)
        return out

    def renamed(self, mapping: Mapping[str, str]) -> str:
        """The text with blackboard keys renamed (``{"target": "goal"}``)."""
        return _unparse(self.tree, mapping)

    def __str__(self) -> str:
        return self.text


def compile_expr(text: str, *, roots: Iterable[str] = ("bb", "world", "outcome")
                 ) -> Expression:
    """Parse ``text``; ``roots`` are the path roots this place allows. Raises
    :class:`ExprError` (with a column and a fix) on any syntax or name error."""
    if not isinstance(text, str):
        raise ExprError(f"an expression is text, got {type(text).__name__}", str(text), 1)
    allowed = frozenset(roots)
    tree = _Parser(text, allowed).parse()
    return Expression(text, tree, allowed)


# ---------------------------------------------------------------------------- run-time views

def object_view(obj: Any, age_s: float | None) -> dict[str, Any]:
    """What ``world.<id>`` shows of a world object: plain data only."""
    pose = obj.pose.to_list()
    rels = {str(k): v for k, v in obj.relations.items()}
    return {"pose": pose, "position": pose[:3], "extent": list(obj.extent),
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
