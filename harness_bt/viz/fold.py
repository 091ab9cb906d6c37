"""Idioms folded for drawing: the plumbing nodes of a ready-made subtree hidden behind one node.

A task's structure lists every node the trees hold, including the ones an idiom builds
(:mod:`harness_bt.nodes.idioms`): ``recover`` expands into ``.try`` / ``.recovery`` /
``.gate`` / ``.guard`` / ``.again`` around the attempt and the recovery, and
``act_and_evaluate`` into ``.act`` / ``.check``. :func:`fold_tree` recognises them by shape
(so a trace written before the idiom was tagged folds too) and says, for one phase's tree,
which nodes to hide, which node stands for the idiom, and what its drawn children are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Folded", "FoldedTree", "fold_tree"]


@dataclass(frozen=True)
class Folded:
    """One idiom drawn as one node: ``kind`` is ``recover`` or ``act_and_evaluate``;
    ``parts`` names the hidden nodes whose state shows on it (``act``, ``check``,
    ``recovery``)."""

    kind: str
    parts: Mapping[str, str]


@dataclass
class FoldedTree:
    """The drawn shape of one tree: node path -> drawn children (path, edge kind ``""`` or
    ``recovery``), the hidden paths, and the folded idioms by the path of the node that
    stands for them."""

    children: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    idioms: dict[str, Folded] = field(default_factory=dict)


def _by_name(entry: Mapping[str, Any], by_path: Mapping[str, Mapping[str, Any]]
             ) -> list[Mapping[str, Any]]:
    return [by_path[k] for k in entry.get("children", ()) if k in by_path]


def _recover(entry: Mapping[str, Any], by_path: Mapping[str, Mapping[str, Any]]
             ) -> tuple[str, str, list[str]] | None:
    """(attempt path, recovery path, hidden paths) when ``entry`` is a ``recover`` idiom."""
    name = entry["name"]
    if entry["type"] != "retry":
        return None
    kids = _by_name(entry, by_path)
    if len(kids) != 1 or kids[0]["name"] != f"{name}.try" or kids[0]["type"] != "selector":
        return None
    try_ = kids[0]
    pair = _by_name(try_, by_path)
    if len(pair) != 2 or pair[1]["name"] != f"{name}.recovery":
        return None
    steps = _by_name(pair[1], by_path)
    if [s["name"] for s in steps] != [f"{name}.gate", f"{name}.guard", f"{name}.again"]:
        return None
    guarded = _by_name(steps[1], by_path)
    if len(guarded) != 1:
        return None
    hidden = [try_["path"], pair[1]["path"], *(s["path"] for s in steps)]
    return pair[0]["path"], guarded[0]["path"], hidden


def _act_and_evaluate(entry: Mapping[str, Any], by_path: Mapping[str, Mapping[str, Any]]
                      ) -> tuple[str, str] | None:
    """(act path, check path) when ``entry`` is an ``act_and_evaluate`` idiom."""
    if entry["type"] != "sequence":
        return None
    kids = _by_name(entry, by_path)
    name = entry["name"]
    if [(k["name"], k["type"]) for k in kids] != [(f"{name}.act", "skill_action"),
                                                   (f"{name}.check", "evaluate")]:
        return None
    return kids[0]["path"], kids[1]["path"]


def fold_tree(entries: Sequence[Mapping[str, Any]], *, fold: bool = True) -> FoldedTree:
    """The drawn shape of one phase's tree (``entries``: pre-order, as in a task structure).
    With ``fold=False`` every node is drawn, as the tree holds it."""
    by_path = {e["path"]: e for e in entries}
    out = FoldedTree()
    for entry in entries:
        path = entry["path"]
        if path in out.hidden:
            continue
        plain = [(k, "") for k in entry.get("children", ()) if k in by_path]
        if not fold:
            out.children[path] = plain
            continue
        rec = _recover(entry, by_path)
        if rec is not None:
            attempt, recovery, hidden = rec
            out.hidden.update(hidden)
            out.children[path] = [(attempt, ""), (recovery, "recovery")]
            out.idioms[path] = Folded("recover", {"recovery": recovery})
            continue
        aae = _act_and_evaluate(entry, by_path)
        if aae is not None:
            out.hidden.update(aae)
            out.children[path] = []
            out.idioms[path] = Folded("act_and_evaluate", {"act": aae[0], "check": aae[1]})
            continue
        out.children[path] = plain
    return out
