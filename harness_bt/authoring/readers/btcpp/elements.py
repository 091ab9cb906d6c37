"""BehaviorTree.CPP XML, read with expat so every element keeps its line and column; a
DOCTYPE (and so any entity) is refused."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from harness_bt.errors import DefinitionError
from harness_bt.problems import Problem

__all__ = ["Element", "parse_xml", "snake"]


@dataclass
class Element:
    """One XML element: tag, attributes, where it starts, its child elements."""

    tag: str
    attrs: dict[str, str]
    line: int = 0
    column: int = 0
    children: list[Element] = field(default_factory=list)
    text: str = ""  # the text inside it (written by the exporter; the reader ignores it)


def snake(name: str) -> str:
    """``GraspObject`` -> ``grasp_object``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


_ENTITY = re.compile(r"&(?:[A-Za-z_][\w.-]*|#[0-9]+|#x[0-9A-Fa-f]+);")


def lenient(text: str) -> str:
    """``text`` with what BT.CPP's parser (tinyxml2) accepts in an attribute value and XML
    does not escaped: a bare ``&`` (``a && b``) and ``<`` (``a < b``)."""
    out: list[str] = []
    quote, in_tag, i = "", False, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "<":
                c = "&lt;"
            elif c == "&" and not _ENTITY.match(text, i):
                c = "&amp;"
        elif in_tag:
            if c in "'\"":
                quote = c
            elif c == ">":
                in_tag = False
        elif c == "<":
            if text.startswith("<!--", i):  # a comment is copied as it is
                end = text.find("-->", i)
                end = len(text) if end < 0 else end + 3
                out.append(text[i:end])
                i = end
                continue
            in_tag = True
        out.append(c)
        i += 1
    return "".join(out)


def parse_xml(text: str, file: str) -> tuple[Element | None, list[Problem]]:
    """The document element of ``text`` (None, with the problem, when it is not XML)."""
    text = lenient(text)
    parser = expat.ParserCreate()
    root: list[Element] = []
    stack: list[Element] = []
    problems: list[Problem] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        el = Element(tag, dict(attrs), parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)
        (stack[-1].children if stack else root).append(el)
        stack.append(el)

    def end(tag: str) -> None:
        stack.pop()

    def doctype(*_: Any) -> None:
        raise DefinitionError("XML_DOCTYPE", "a DOCTYPE is not allowed",
                              where=f"{file}:{parser.CurrentLineNumber}")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = doctype
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        problems.append(Problem("XML_SYNTAX", f"malformed XML: {expat.ErrorString(exc.code)}",
                                f"{file}:{exc.lineno}:{exc.offset + 1}",
                                fix="fix the XML (a closing tag, a quote, an '&' to escape)"))
        return None, problems
    except DefinitionError as exc:
        problems.append(Problem(exc.code, exc.message, exc.where or file,
                                fix="remove the DOCTYPE and any entity declarations"))
        return None, problems
    return (root[0] if root else None), problems
