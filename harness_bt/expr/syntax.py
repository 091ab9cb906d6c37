"""The expression language's syntax: tokens, the parser (text -> a small tree of tuples) and
the printer (tree -> text, with blackboard keys renamed). See :mod:`harness_bt.expr`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.plugins import did_you_mean

__all__ = ["FUNCTIONS", "OBJECT_FIELDS", "ROOTS", "SELECTORS", "ExprError", "Node", "parse",
           "unparse", "walk"]

ROOTS = {"bb": "bb", "blackboard": "bb", "world": "world", "outcome": "outcome"}
#: functions whose second argument is evaluated once per item, with the item bound to ``it``
SELECTORS = ("argmax", "argmin", "filter")
FUNCTIONS = ("abs", "all", "any", "argmax", "argmin", "count", "exists", "filter", "len", "max",
             "min", "nearest")
_ARITY = {"exists": (1, 1), "len": (1, 1), "abs": (1, 1), "min": (2, 99), "max": (2, 99),
          "all": (1, 99), "any": (1, 99), "count": (1, 99), "nearest": (2, 2)}
#: what ``world.<id>`` (and an item of ``world.objects``) shows of an object; ``shape``,
#: ``colour`` and ``group`` are what the task's scene declares, shown in a ``for_each``'s
#: ``over`` / ``where`` / ``order`` only (missing elsewhere)
OBJECT_FIELDS = ("age_s", "colour", "confidence", "extent", "group", "held_by", "id", "in",
                 "label", "on", "pose", "position", "shape", "version")
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null", "let"}


class ExprError(DefinitionError):
    """A syntax or name error in an expression (code ``INVALID_EXPRESSION``, or the code of a
    check of calls and names: ``UNKNOWN_PREDICATE``, ...): ``message`` says what, ``column``
    (1-based) where in ``text``, ``fix`` what to write instead."""

    def __init__(self, message: str, text: str, column: int, fix: str = "",
                 code: str = "INVALID_EXPRESSION") -> None:
        self.text = text
        self.column = column
        super().__init__(code, f"{message} at column {column} of {text!r}",
                         fix=fix or None, details={"column": column, "text": text})
        self.message = message


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
        if m is None and text[pos] == "=" and _binding(out):
            out.append(_Tok("op", "=", pos + 1))
            pos += 1
            continue
        if m is None:
            ch = text[pos]
            fix = "use '==' to compare; a function's arguments are positional" if ch == "=" \
                else \
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


def _binding(toks: list[_Tok]) -> bool:
    """Whether a '=' here binds a name (``let x = ...``, ``..., y = ...`` inside a let)."""
    if len(toks) < 2 or toks[-1].kind != "name" or toks[-1].text in _KEYWORDS:
        return False
    if toks[-2].kind == "name" and toks[-2].text == "let":
        return True
    return toks[-2].text == "," and any(t.kind == "name" and t.text == "let" for t in toks)


# ---------------------------------------------------------------------------- syntax tree
# Nodes are tuples: ("lit", value) ("path", root, (steps...), col)
# ("call", fn, (args...), col, end) -- text[col - 1:end] is the call as written
# ("name", word, col) -- a bare name, only where names are open (see parse)
# ("list", (items...)) ("not", x) ("and", a, b) ("or", a, b) ("cmp", op, a, b)
# ("arith", op, a, b) ("neg", x)
# ("var", word, (steps...), col) -- a name bound by let, a selector's 'it', or the place
# ("let", ((word, value), ...), body) ("select", fn, items, per_item, col)
# ("at", value, (steps...)) -- a field or an index of a computed value: nearest(...).id

Node = tuple[Any, ...]


class _Parser:
    def __init__(self, text: str, roots: Iterable[str], open_names: bool,
                 bound: Iterable[str] = ()) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.roots = set(roots)
        self.open = open_names
        self.bound = list(bound)  # names in scope: let bindings, 'it', the place's own
        self.no_in = 0  # > 0 while reading a let binding's value ('in' ends it)

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
        elif tok.kind == "name" and tok.text == "in" and not self.no_in:
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
        node = self.atom()
        if node[0] in ("call", "select", "let", "list") or self._parens:
            self._parens = False
            if self.peek().kind == "op" and self.peek().text in (".", "["):
                return ("at", node, tuple(self.steps()))
        self._parens = False
        return node

    _parens = False

    def atom(self) -> Node:
        tok = self.take()
        if tok.kind == "number":
            value = float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
            return ("lit", value)
        if tok.kind == "string":
            return ("lit", _unquote(tok.text))
        if tok.kind == "op" and tok.text == "(":
            node = self.inner(self.or_)
            self.expect(")")
            self._parens = True
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
            if word == "let" and not self.open:
                return self.let(tok)
            if word in self.bound:
                return self.var(word, tok)
            if self.peek().kind == "op" and self.peek().text == "(":
                if word not in FUNCTIONS and not self.open:
                    raise self.error(f"unknown function {word!r}", tok,
                                     f"known: {', '.join(FUNCTIONS)}"
                                     f"{did_you_mean(word, FUNCTIONS)}")
                self.take()
                if word in SELECTORS and not self.open:
                    return self.select(word, tok)
                args = self.items(")")
                end = self.toks[self.i - 1].col  # the closing ')'
                arity = _ARITY.get(word)
                if arity is not None and not arity[0] <= len(args) <= arity[1]:
                    raise self.error(f"{word}() takes {arity[0]}"
                                     f"{'' if arity[0] == arity[1] else ' or more'} "
                                     f"argument(s), got {len(args)}", tok)
                return ("call", word, tuple(args), tok.col, end)
            if word in _KEYWORDS:
                raise self.error(f"unexpected {word!r}", tok)
            if self.open and (word not in ROOTS or ROOTS[word] not in self.roots):
                return ("name", word, tok.col)
            if word not in ROOTS or ROOTS[word] not in self.roots:
                known = sorted({*(r for r, v in ROOTS.items() if v in self.roots),
                                *self.bound})
                raise self.error(f"unknown name {word!r}", tok,
                                 f"a path starts with one of {', '.join(known)}; write "
                                 f"strings in quotes{did_you_mean(word, known)}")
            return self.path(ROOTS[word], tok)
        got = "the end" if tok.kind == "end" else repr(tok.text)
        raise self.error(f"expected a value, found {got}", tok)

    def let(self, start: _Tok) -> Node:
        """``let NAME = value (, NAME = value)* in body``: each value sees the names before."""
        bindings: list[tuple[str, Node]] = []
        depth = len(self.bound)
        while True:
            tok = self.take()
            if tok.kind != "name" or tok.text in _KEYWORDS or tok.text in ROOTS:
                raise self.error("expected a name to bind after 'let'", tok,
                                 "write let NAME = value in expression")
            self.expect("=")
            self.no_in += 1
            try:
                value = self.or_()
            finally:
                self.no_in -= 1
            bindings.append((tok.text, value))
            self.bound.append(tok.text)
            if self.peek().kind == "op" and self.peek().text == ",":
                self.take()
                continue
            break
        if not (self.peek().kind == "name" and self.peek().text == "in"):
            raise self.error("a let needs 'in' and the expression that uses its names",
                             self.peek(), "write let NAME = value in expression; use "
                             "parentheses for the operator 'in' in a binding")
        self.take()
        body = self.or_()
        del self.bound[depth:]
        return ("let", tuple(bindings), body)

    def var(self, word: str, start: _Tok) -> Node:
        steps = self.steps()
        if word == "it" and steps and isinstance(steps[0], str):
            self.field(steps[0], start)
        return ("var", word, tuple(steps), start.col)

    def select(self, fn: str, start: _Tok) -> Node:
        """``argmin(items, per_item)`` and co.: ``per_item`` sees each item as ``it``."""
        items = self.inner(self.or_)
        self.expect(",")
        self.bound.append("it")
        try:
            per_item = self.inner(self.or_)
        finally:
            self.bound.pop()
        self.expect(")")
        return ("select", fn, items, per_item, start.col)

    def field(self, name: str, tok: _Tok) -> None:
        if name not in OBJECT_FIELDS:
            raise self.error(f"an object has no field {name!r}", tok,
                             f"its fields: {', '.join(OBJECT_FIELDS)}"
                             f"{did_you_mean(name, OBJECT_FIELDS)}")

    def inner(self, read: Any) -> Any:
        """Inside brackets 'in' is the operator again, even in a let binding's value."""
        saved, self.no_in = self.no_in, 0
        try:
            return read()
        finally:
            self.no_in = saved

    def items(self, close: str) -> list[Node]:
        return self.inner(lambda: self._items(close))

    def _items(self, close: str) -> list[Node]:
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
        steps = self.steps()
        if not steps:
            raise self.error(f"{start.text!r} needs a key", start,
                             f"e.g. {start.text}.name or {start.text}['a.b']")
        if root == "world":  # world.<id>.<field>, world.objects[<i>].<field>
            at = 2 if steps[0] == "objects" else 1
            step = steps[at] if len(steps) > at else None
            if isinstance(step, str):
                self.field(step, start)
        return ("path", root, tuple(steps), start.col)

    def steps(self) -> list[str | int]:
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
        return steps


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


_PREC = {"let": 0, "or": 1, "and": 2, "not": 3, "cmp": 4, "arith+": 5, "arith*": 6, "neg": 7}


def _prec(node: Node) -> int:
    if node[0] == "arith":
        return _PREC["arith+" if node[1] in "+-" else "arith*"]
    return _PREC.get(node[0], 9)


def unparse(node: Node, mapping: Mapping[str, str] | None = None) -> str:
    tag = node[0]

    def sub(child: Node, prec: int) -> str:
        text = unparse(child, mapping)
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
        return root + _steps_text(steps)
    if tag == "name":
        return str(node[1])
    if tag == "var":
        return node[1] + _steps_text(node[2])
    if tag == "let":
        binds = ", ".join(f"{k} = {unparse(v, mapping)}" for k, v in node[1])
        return f"let {binds} in {unparse(node[2], mapping)}"
    if tag == "select":
        return f"{node[1]}({unparse(node[2], mapping)}, {unparse(node[3], mapping)})"
    if tag == "at":
        return sub(node[1], 9) + _steps_text(node[2])
    if tag == "list":
        return "[" + ", ".join(unparse(n, mapping) for n in node[1]) + "]"
    if tag == "call":
        return f"{node[1]}(" + ", ".join(unparse(n, mapping) for n in node[2]) + ")"
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


def _steps_text(steps: Iterable[str | int]) -> str:
    text = ""
    for s in steps:
        if isinstance(s, int):
            text += f"[{s}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s) and s not in _KEYWORDS:
            text += f".{s}"
        else:
            text += f"[{_quote(s)}]"
    return text


def _children(node: Node) -> tuple[Node, ...]:
    tag = node[0]
    if tag == "let":
        return (*(v for _, v in node[1]), node[2])
    if tag == "select":
        return (node[2], node[3])
    if tag == "at":
        return (node[1],)
    if tag == "list":
        return tuple(node[1])
    if tag in ("call", "apply"):
        return tuple(node[2])
    if tag in ("not", "neg"):
        return (node[1],)
    if tag in ("and", "or"):
        return (node[1], node[2])
    if tag in ("cmp", "arith"):
        return (node[2], node[3])
    return ()


def walk(node: Node) -> Iterable[Node]:
    """Every node of a syntax tree, pre-order."""
    yield node
    for child in _children(node):
        yield from walk(child)


def parse(text: str, roots: Iterable[str], *, open_names: bool = False,
          bound: Iterable[str] = ()) -> Node:
    """The syntax tree of ``text`` (paths may start at ``roots`` only; ``bound``: names the
    place gives a value, such as ``items`` in a ``for_each`` order). With ``open_names``,
    any function may be called and any other word is a bare ``name`` node: the caller checks
    them against what it knows (:mod:`harness_bt.expr.calls`)."""
    return _Parser(text, roots, open_names, bound).parse()
