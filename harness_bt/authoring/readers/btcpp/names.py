"""Node names BT.CPP leaves implicit, made explicit where ours need them.

An unnamed ``<SubTree ID="Sub"/>`` takes the name of the tree it runs (its root's name, e.g.
``success`` for an unnamed ``<AlwaysSuccess/>``); beside a sibling of that name, node paths
would clash, though BT.CPP (whose paths carry a uid) runs it. Such a use is named after its
ID instead (``Sub``, ``Sub_2``, ...)."""

from __future__ import annotations

from typing import Any

__all__ = ["name_subtree_uses"]

_BRANCHES = ("children", "child", "attempt", "recovery")


def _walk(node: Any, subtrees: dict[str, Any]) -> None:
    if not isinstance(node, dict):
        return
    kids = node.get("children")
    if isinstance(kids, list):
        _rename(kids, subtrees)
    for key in _BRANCHES:
        value = node.get(key)
        for kid in value if isinstance(value, list) else [value]:
            _walk(kid, subtrees)


def _effective(kid: dict[str, Any], subtrees: dict[str, Any]) -> str | None:
    if isinstance(kid.get("name"), str):
        return str(kid["name"])
    ref = kid.get("subtree")
    root = subtrees.get(ref) if isinstance(ref, str) else None
    return str(root.get("name") or ref) if isinstance(root, dict) else ref


def _rename(kids: list[Any], subtrees: dict[str, Any]) -> None:
    names = [_effective(k, subtrees) if isinstance(k, dict) else None for k in kids]
    taken = {n for n in names if n is not None}
    for i, kid in enumerate(kids):
        if not (isinstance(kid, dict) and "subtree" in kid and "name" not in kid):
            continue
        if names[i] is not None and names[i] in names[:i] + names[i + 1:]:
            base = new = str(kid["subtree"])
            n = 1
            while new in taken:
                n += 1
                new = f"{base}_{n}"
            kid["name"] = names[i] = new
            taken.add(new)


def name_subtree_uses(subtrees: dict[str, Any]) -> None:
    """Name, in place, every unnamed subtree use whose implicit name a sibling has."""
    for tree in subtrees.values():
        _walk(tree, subtrees)
