"""Parameters in the validation pass: the values of a task's phases' trees are substituted in
place (on the same document paths, so every later check reports at the ``{name}`` that gave
a value), and each subtree copy made for a use is checked like a tree of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_bt.authoring.library import SubtreeDef
from harness_bt.authoring.params import Binding
from harness_bt.authoring.placeholders import Substitution, in_key_text, substitute_tree
from harness_bt.authoring.registries import Registries
from harness_bt.authoring.validate.nodes import check_nodes
from harness_bt.authoring.validate.structure import check_tree_shape, node_of
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem, Report
from harness_bt.source import DocPath, Document, format_path

__all__ = ["check_copy", "substitute_phases"]


def substitute_phases(doc: Document, binding: Binding, registries: Registries,
                      trees: list[DocPath]) -> tuple[list[Problem], set[str]]:
    """Substitute the parameters into the phases' trees of ``doc`` in place; the problems
    (a ``{name}`` not declared, a ``{name}`` in a blackboard port) and the names used."""
    out: list[Problem] = []
    used: set[str] = set()
    known = sorted(binding.declared)
    for tree_path in trees:
        if tree_path[0] != "phases":
            continue
        sub = Substitution(dict(binding.values))
        tree = substitute_tree(doc.get(tree_path), tree_path, registries.models, sub)
        parent = doc.get(tree_path[:-1])
        parent[tree_path[-1]] = tree
        used |= sub.used
        for name, at in sub.missing:
            doc.bad_nodes.add(node_of(doc, at, tree_path))  # its value checks would mislead
            if name in binding.broken:
                continue  # reported where it is declared
            out.append(Problem(
                "UNDECLARED_PARAM", f"'{{{name}}}' names no parameter of the task; declared: "
                f"{', '.join(known) or '(none)'}{did_you_mean(name, known)}", doc.where(at),
                fix=f"declare it (params: {{{name}: {{type: ..., default: ...}}}}) or fix the "
                "name", path=format_path(at)))
        for name, at, what in sub.in_keys:
            message, fix = in_key_text(name, what)
            out.append(Problem("PARAM_IN_KEY_PORT", message, doc.where(at), fix=fix,
                               path=format_path(at)))
    return out, used


def check_copy(report: Report, registries: Registries
               ) -> Callable[[SubtreeDef, Any, list[tuple[str, DocPath]]], None]:
    """The check of a subtree copy made for one use: its shape and its nodes, reported at
    the subtree's definition (``missing``: the ``{name}`` left without a value, whose nodes
    are not checked further)."""
    def check(sub: SubtreeDef, tree: Any, missing: list[tuple[str, DocPath]]) -> None:
        if sub.path[:1] != ("subtrees",) or len(sub.path) != 2:
            return
        view = Document(sub.doc.file, {"subtrees": {sub.path[1]: tree}}, path=sub.doc.path,
                        marks=sub.doc.marks, key_marks=sub.doc.key_marks,
                        format=sub.doc.format)
        found, bad = check_tree_shape(view, sub.path, registries)
        view.bad_nodes |= bad | {node_of(view, at, sub.path) for _, at in missing}
        report.extend(found)
        report.extend(check_nodes(view, sub.path, registries))
    return check
