"""The YAML reader (``.yaml``, ``.yml``, ``.json``): a file into a :class:`Document`.

It composes the YAML node graph with PyYAML's safe loader and builds plain data from it
itself, so it can record the line and column of every value, and report what ``safe_load``
lets through silently: a key given twice, a key that YAML 1.1 reads as a boolean (``on:``,
``yes:``), a recursive alias, an unsupported tag. Problems are collected, not raised.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from harness_bt.problems import Problem
from harness_bt.source import DocPath, Document, Mark, format_path

__all__ = ["read_yaml"]


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
