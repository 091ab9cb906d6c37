"""Where every value of a document came from: :class:`Mark` (file, line, column) and
:class:`Document` (plain data + a mark for every value and key, by document path). The
readers (:mod:`harness_bt.authoring.readers`) make documents; every check reports through their
marks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DocPath", "Document", "Mark", "format_path"]

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
