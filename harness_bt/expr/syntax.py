"""The expression language's syntax: tokens, the parser (text -> a small tree of tuples) and
the printer (tree -> text, with blackboard keys renamed). See :mod:`harness_bt.expr`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = ["FUNCTIONS", "ROOTS", "ExprError", "Node", "parse", "unparse", "walk"]

ROOTS = {"bb": "bb", "blackboard": "bb", "world": "world", "outcome": "outcome"}
FUNCTIONS = ("abs", "all", "any", "count", "exists", "len", "max", "min")
_ARITY = {"exists": (1, 1), "len": (1, 1), "abs": (1, 1), "min": (2, 99), "max": (2, 99),
          "all": (1, 99), "any": (1, 99), "count": (1, 99)}
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}


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


# ---------------------------------------------------------------------------- syntax tree
# Nodes are tuples: ("lit", value) ("path", root, (steps...), col)
# ("call", fn, (args...), col, end) -- text[col - 1:end] is the call as written
# ("name", word, col) -- a bare name, only where names are open (see parse)
# ("list", (items...)) ("not", x) ("and", a, b) ("or", a, b) ("cmp", op, a, b)
# ("arith", op, a, b) ("neg", x)

Node = tuple[Any, ...]


class _Parser:
    def __init__(self, text: str, roots: Iterable[str], open_names: bool) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.roots = set(roots)
        self.open = open_names

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
                if word not in FUNCTIONS and not self.open:
                    raise self.error(f"unknown function {word!r}", tok,
                                     f"known: {', '.join(FUNCTIONS)}")
                self.take()
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


_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "arith+": 5, "arith*": 6, "neg": 7}


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
        text = root
        for s in steps:
            if isinstance(s, int):
                text += f"[{s}]"
            elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s) and s not in _KEYWORDS:
                text += f".{s}"
            else:
                text += f"[{_quote(s)}]"
        return text
    if tag == "name":
        return str(node[1])
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


def _children(node: Node) -> tuple[Node, ...]:
    tag = node[0]
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


def parse(text: str, roots: Iterable[str], *, open_names: bool = False) -> Node:
    """The syntax tree of ``text`` (paths may start at ``roots`` only). With ``open_names``,
    any function may be called and any other word is a bare ``name`` node: the caller checks
    them against what it knows (:mod:`harness_bt.expr.calls`)."""
    return _Parser(text, roots, open_names).parse()
