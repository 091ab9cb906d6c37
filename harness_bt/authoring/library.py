"""What a task document can use besides its own phases and the registries: the subtrees and
guards of the document itself and of every file it includes (YAML libraries, or
BehaviorTree.CPP XML files whose ``<BehaviorTree ID=...>`` become subtrees)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_bt.authoring.locate import find_include
from harness_bt.authoring.readers import read_document
from harness_bt.authoring.registries import Registries
from harness_bt.authoring.validate.structure import check_library
from harness_bt.problems import Problem, Report
from harness_bt.source import DocPath, Document

__all__ = ["GuardDef", "Library", "SubtreeDef"]


@dataclass(frozen=True)
class SubtreeDef:
    """A named tree: where it is defined (document and path) and the tree itself."""

    name: str
    tree: Any
    doc: Document
    path: DocPath


@dataclass(frozen=True)
class GuardDef:
    """A named guard expression from a document's ``guards:``."""

    name: str
    text: str
    doc: Document
    path: DocPath


@dataclass
class Library:
    """Subtrees and guards by name, gathered from a document and its includes (recursively,
    each include relative to the file that names it). Every included document is kept, so
    its problems and marks stay available."""

    subtrees: dict[str, SubtreeDef] = field(default_factory=dict)
    guards: dict[str, GuardDef] = field(default_factory=dict)
    documents: list[Document] = field(default_factory=list)

    @classmethod
    def gather(cls, doc: Document, registries: Registries, report: Report) -> Library:
        lib = cls()
        lib._add(doc, registries, report, [])
        return lib

    def _add(self, doc: Document, registries: Registries, report: Report,
             stack: list[Path]) -> None:
        self.documents.append(doc)
        data = doc.data if isinstance(doc.data, dict) else {}
        subtrees = data.get("subtrees")
        if isinstance(subtrees, dict):
            for name, tree in subtrees.items():
                self._define_subtree(SubtreeDef(name, tree, doc, ("subtrees", name)), report)
        guards = data.get("guards")
        if isinstance(guards, dict):
            for name, text in guards.items():
                if name in self.guards:
                    first = self.guards[name]
                    report.add(Problem(
                        "DUPLICATE_GUARD", f"guard {name!r} is defined twice (first at "
                        f"{first.doc.where(first.path, key=True)})",
                        doc.where(("guards", name), key=True), fix="rename one of them",
                        path=f"guards.{name}"))
                    continue
                self.guards[name] = GuardDef(name, text, doc, ("guards", name))
        includes = data.get("includes")
        if not isinstance(includes, list):
            return
        here = doc.path.parent if doc.path is not None else Path.cwd()
        for i, item in enumerate(includes):
            if not isinstance(item, str):
                continue  # the model reports it
            found, looked = find_include(item, here)
            target = found if found is not None else looked[0]
            where = doc.where(("includes", i))
            if target in stack or (doc.path is not None and target == doc.path.resolve()):
                chain = " -> ".join(p.name for p in [*stack, target])
                report.add(Problem("INCLUDE_CYCLE", f"include {item!r} closes a cycle: {chain}",
                                   where, fix="remove one of the includes in the cycle",
                                   path=f"includes[{i}]"))
                continue
            if any(d.path is not None and d.path.resolve() == target for d in self.documents):
                continue  # included twice through different files: once is enough
            if not target.is_file():
                report.add(Problem("INCLUDE_NOT_FOUND", f"included file {item!r} does not exist "
                                   f"(looked for {', '.join(map(str, looked))})", where,
                                   fix="give a path relative to the including file, or the "
                                       "name of a file of the installed task library",
                                   path=f"includes[{i}]"))
                continue
            inc, problems = read_document(target, registries)
            report.extend(problems)
            if inc.data is None:
                continue
            if inc.format == "xml" and isinstance(inc.data, dict):  # an exported task's chart:
                inc.data.pop("task", None)  # included, the file lends its trees only
                inc.data.pop("task_tree", None)
            report.extend(check_library(inc, registries))
            self._add(inc, registries, report,
                      [*stack, doc.path.resolve() if doc.path is not None else target])

    def _define_subtree(self, sub: SubtreeDef, report: Report) -> None:
        if sub.name in self.subtrees:
            first = self.subtrees[sub.name]
            report.add(Problem(
                "DUPLICATE_SUBTREE", f"subtree {sub.name!r} is defined twice (first at "
                f"{first.doc.where(first.path, key=True)})", sub.doc.where(sub.path, key=True),
                fix="rename one of them", path=f"subtrees.{sub.name}"))
            return
        self.subtrees[sub.name] = sub
