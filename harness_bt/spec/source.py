"""Where every value of a document came from: :class:`Mark` (file, line, column) and
:class:`Document` (plain data + a mark for every value and key), with the YAML reader.

The reader composes the YAML node graph with PyYAML's safe loader and builds plain data from
it itself, so it can record the line and column of every value, and report what ``safe_load``
lets through silently: a key given twice, a key that YAML 1.1 reads as a boolean (``on:``,
``yes:``), a recursive alias, an unsupported tag. Problems are collected, not raised.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness_bt.spec.problems import Problem

__all__ = ["DocPath", "Document", "Mark", "format_path", "read_yaml"]

DocPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Mark:
    """A position in a file: 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def format_path(path: DocPath) -> str:
    """``("phases", 0, "tree")`` -> ``phases[0].tree``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class Document:
    """Plain data read from one file (or built in Python: no marks), with the mark of every
    value (``marks``) and of every mapping key (``key_marks``), by document path."""

    file: str
    data: Any
    path: Path | None = None
    marks: dict[DocPath, Mark] = field(default_factory=dict)
    key_marks: dict[DocPath, Mark] = field(default_factory=dict)
    format: str = "yaml"
    #: nodes with structural problems (their finer checks are skipped)
    bad_nodes: set[DocPath] = field(default_factory=set)

    def mark(self, path: DocPath, *, key: bool = False) -> Mark | None:
        """The mark of the value (or key) at ``path``, else of its nearest ancestor."""
        if key and path in self.key_marks:
            return self.key_marks[path]
        probe = tuple(path)
        while True:
            if probe in self.marks:
                return self.marks[probe]
            if not probe:
                return None
            probe = probe[:-1]

    def where(self, path: DocPath, *, key: bool = False) -> str:
        """``file:line:column`` of the path (or ``file`` with the path when unmarked)."""
        mark = self.mark(path, key=key)
        if mark is not None and (mark.line, mark.column) != (0, 0):
            return str(mark)
        return f"{self.file} ({format_path(path)})" if path else self.file

    def get(self, path: DocPath) -> Any:
        value = self.data
        for part in path:
            value = value[part]
        return value

    def walk(self) -> Iterator[tuple[DocPath, Any]]:
        stack: list[tuple[DocPath, Any]] = [((), self.data)]
        while stack:
            path, value = stack.pop()
            yield path, value
            if isinstance(value, dict):
                stack.extend(((*path, k), v) for k, v in reversed(list(value.items())))
            elif isinstance(value, list):
                stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))


_SCALARS = {
    "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float", "tag:yaml.org,2002:str",
}


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, doc: Document, problems: list[Problem]) -> None:
        self.loader = loader
        self.doc = doc
        self.problems = problems
        self.active: set[int] = set()

    def mark(self, node: yaml.Node) -> Mark:
        return Mark(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def problem(self, code: str, message: str, node: yaml.Node, fix: str,
                path: DocPath) -> None:
        self.problems.append(Problem(code, message, str(self.mark(node)), fix=fix,
                                     path=format_path(path)))

    def build(self, node: yaml.Node, path: DocPath) -> Any:
        self.doc.marks[path] = self.mark(node)
        if id(node) in self.active:
            self.problem("YAML_RECURSIVE_ALIAS", "an alias refers to a mapping or list that "
                         "contains it", node, "unfold the recursion; a task is a tree", path)
            return None
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, path)
        finally:
            self.active.discard(id(node))
        return None  # pragma: no cover - PyYAML has no other node kinds

    def scalar(self, node: yaml.ScalarNode, path: DocPath) -> Any:
        if node.tag in _SCALARS:
            return self.loader.construct_object(node)
        if node.tag in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary"):
            return node.value  # kept as written: a task has no use for dates or bytes
        self.problem("YAML_TAG", f"unsupported YAML tag {node.tag!r}", node,
                     "remove the tag: task files use plain YAML (include files with "
                     "'includes:' and reuse trees with '{subtree: name}')", path)
        return node.value

    def mapping(self, node: yaml.MappingNode, path: DocPath) -> dict[str, Any]:
        if node.tag != "tag:yaml.org,2002:map":
            self.problem("YAML_TAG", f"unsupported YAML tag {node.tag!r}", node,
                         "remove the tag", path)
        own = {id(k) for k, _ in node.value}
        self.loader.flatten_mapping(node)  # `<<: *anchor` merges (their keys come first)
        out: dict[str, Any] = {}
        first: dict[str, Mark] = {}
        merged: set[str] = set()
        for key_node, value_node in node.value:
            key_path = (*path, str(getattr(key_node, "value", "?")))
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem("YAML_KEY", "a mapping key must be plain text", key_node,
                             "write the key as text", key_path)
                continue
            key = self.scalar(key_node, key_path)
            if not isinstance(key, str):
                self.problem("YAML_KEY", f"key {key_node.value!r} is read as "
                             f"{type(key).__name__} {key!r}, not text", key_node,
                             f"quote it: '{key_node.value}' (YAML 1.1 reads yes/no/on/off as "
                             "booleans)", key_path)
                key = str(key_node.value)
            if key in merged:  # an explicit key overrides a merged one
                merged.discard(key)
                first.pop(key)
            if key in first:
                self.problem("YAML_DUPLICATE_KEY", f"key {key!r} is given twice in this mapping "
                             f"(first at line {first[key].line})", key_node,
                             "keep one of them", (*path, key))
                continue
            first[key] = self.mark(key_node)
            if id(key_node) not in own:
                merged.add(key)
            self.doc.key_marks[(*path, key)] = self.mark(key_node)
            out[key] = self.build(value_node, (*path, key))
        return out


def read_yaml(source: str | os.PathLike[str], *, text: str | None = None,
              file: str | None = None) -> tuple[Document, list[Problem]]:
    """Read one YAML file (or ``text``, named ``file`` in marks) into a :class:`Document`.
    Returns the document and every problem found; a malformed file gives one problem with the
    parser's position and ``data`` None."""
    path = None if text is not None else Path(source)
    name = file or str(source)
    doc = Document(name, None, path=path)
    problems: list[Problem] = []
    if text is None:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem("FILE_UNREADABLE", f"cannot read the file: {exc}", name,
                                    fix="check the path and that the file is UTF-8 text"))
            return doc, problems
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            doc.data = _Builder(loader, doc, problems).build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        fix = "fix the YAML syntax (indentation, a missing ':' or closing quote or bracket)"
        if "expected a single document" in what:
            fix = "keep one task per file (remove the '---' separator)"
        problems.append(Problem("YAML_SYNTAX", f"malformed YAML: {what}", where, fix=fix))
        doc.data = None
    except yaml.YAMLError as exc:
        problems.append(Problem("YAML_SYNTAX", f"malformed YAML: {exc}", name,
                                fix="fix the YAML syntax"))
        doc.data = None
    finally:
        loader.dispose()
    return doc, problems
