"""Behaviour trees from node dicts: :func:`check_tree` runs a document's tree checks on a tree
of its own (a Python-built task's ``Phase("work", {...})``), and :func:`build_tree` builds the
py_trees tree once it passes. A document's trees are checked with the whole document
(:mod:`harness_bt.authoring.validate`); these are the same checks, so a rule is written once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import py_trees

from harness_bt.authoring.nodes import SKILL_TAG, SUBTREE_TAG, node_tag
from harness_bt.authoring.placeholders import Substitution, substitute_tree
from harness_bt.authoring.registries import Registries
from harness_bt.authoring.validate.nodes import check_nodes, iter_nodes, node_kwargs
from harness_bt.authoring.validate.structure import check_tree_shape, nonfinite
from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import NodeType
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.plugins import Registry, did_you_mean
from harness_bt.problems import Problem, Severity
from harness_bt.source import Document, format_path

__all__ = ["build_tree", "check_tree"]

Behaviour = py_trees.behaviour.Behaviour


def check_tree(tree: Any, registries: Registries, *, where: str = "tree") -> list[Problem]:
    """Every problem of one tree (a node dict with its children): its shape against the node
    models, every node's own rules, non-finite numbers. ``where`` names it in the problems
    (``phase work (children[2])``). Skills are checked when ``registries.skills`` is given."""
    doc = Document(where, tree, format="python")
    problems, bad = check_tree_shape(doc, (), registries)
    doc.bad_nodes |= bad
    problems += nonfinite(doc)
    for path, _, tag in iter_nodes(doc, (), registries):
        if tag == SUBTREE_TAG:
            problems.append(Problem(
                "UNKNOWN_SUBTREE", "a subtree can only be used inside a task document (its "
                "subtrees and includes define it)", doc.where(path), path=format_path(path),
                fix="load the task from a document (harness_bt.authoring.load_task), or put the "
                    "tree here instead of the reference"))
    problems += check_nodes(doc, (), registries)
    return problems


def build_tree(tree: Mapping[str, Any], registry: Registry[NodeType] | None = None, *,
               where: str = "tree", params: Mapping[str, Any] | None = None) -> Behaviour:
    """Build a tree from ``{"type": ..., "name": ..., <params>, <tree ports>}`` (a leaf may be
    written ``{"skill": ...}``), ``{name}`` in its values standing for ``params[name]`` (a
    task's parameter values, :mod:`harness_bt.authoring.placeholders`). Every problem in the whole
    tree is reported at once, each with its place (``tree (children[2])``); nothing is built
    unless it passes."""
    registries = Registries(nodes=registry if registry is not None
                            else NodeRegistry(entry_points=True))
    sub = Substitution(dict(params or {}))
    tree = substitute_tree(tree, (), registries.models, sub)
    doc = Document(where, tree, format="python")
    problems = [Problem("UNDECLARED_PARAM", f"'{{{name}}}' names no parameter of the task; "
                        f"its parameters: {', '.join(sorted(sub.scope)) or '(none)'}"
                        f"{did_you_mean(name, sorted(sub.scope))}", doc.where(at),
                        path=format_path(at), fix="give the task the parameter (Task(..., "
                        "params={...})), or fix the name")
                for name, at in sub.missing]
    problems += [p for p in check_tree(tree, registries, where=where)
                 if p.severity is Severity.ERROR]
    if problems:
        raise DefinitionError("INVALID_TREE", f"{len(problems)} problem(s) in {where}: "
                              + "; ".join(str(p) for p in problems), where=where,
                              details={"problems": [str(p) for p in problems]},
                              fix="fix every problem listed (each names its node)")
    return _construct(tree, registries.nodes)


def _construct(node: Mapping[str, Any], registry: Registry[NodeType]) -> Behaviour:
    tag = node_tag(node)
    type_name = "skill_action" if tag == SKILL_TAG else str(node["type"])
    nt = registry.get(type_name)
    kwargs = node_kwargs(node, nt, lambda child: _construct(child, registry))
    return nt.factory(name=node["name"], **kwargs)
