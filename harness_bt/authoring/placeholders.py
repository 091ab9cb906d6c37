"""``{name}`` in a tree's values: a task parameter, or an input of the subtree it is in.

A string that is exactly ``{name}`` becomes the value itself (a number stays a number, a
vector a list); ``{name}`` inside a longer string is replaced by the value as text. Only
values are substituted: node types, names and skills are not, nor the ports that name
blackboard keys (``inputs``, ``output``, ``record``, ``snapshot``, ``when``, ...): there a
key is written plainly, and a ``{name}`` is reported. A subtree use is not entered: its tree is
substituted per use, with the use's ``values`` (:class:`~harness_bt.authoring.expand.Expander`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from harness_bt.authoring.nodes import SKILL_TAG, SUBTREE_TAG, NodeModels, node_tag
from harness_bt.source import DocPath

__all__ = ["PLACEHOLDER", "Substitution", "has_placeholders", "in_key_text", "render",
           "substitute_tree"]

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FIXED = ("type", "name", "skill", "subtree")


def render(value: Any) -> str:
    """A value as it reads inside a longer string."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(render(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, default=str)


@dataclass
class Substitution:
    """What one substitution met: every name used (``{name}``), the ones with no value (with
    the path of the value naming them), and blackboard ports that hold a ``{name}``."""

    scope: dict[str, Any]
    used: set[str] = field(default_factory=set)
    missing: list[tuple[str, DocPath]] = field(default_factory=list)
    #: (name, path, what the port holds: "'inputs' names blackboard keys")
    in_keys: list[tuple[str, DocPath, str]] = field(default_factory=list)

    def text(self, value: str, path: DocPath) -> Any:
        whole = PLACEHOLDER.fullmatch(value)
        if whole is not None:
            name = whole.group(1)
            self.used.add(name)
            if name in self.scope:
                return self.scope[name]
            self.missing.append((name, path))
            return value

        def one(m: re.Match[str]) -> str:
            name = m.group(1)
            self.used.add(name)
            if name in self.scope:
                return render(self.scope[name])
            self.missing.append((name, path))
            return m.group(0)

        return PLACEHOLDER.sub(one, value)

    def value(self, value: Any, path: DocPath) -> Any:
        if isinstance(value, str):
            return self.text(value, path)
        if isinstance(value, list):
            return [self.value(v, (*path, i)) for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: self.value(v, (*path, k)) for k, v in value.items()}
        return value


def _found(value: Any, path: DocPath) -> list[tuple[str, DocPath]]:
    """Every ``{name}`` in ``value``, with the path of the string holding it."""
    if isinstance(value, str):
        return [(name, path) for name in PLACEHOLDER.findall(value)]
    if isinstance(value, list):
        return [f for i, v in enumerate(value) for f in _found(v, (*path, i))]
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in _found(v, (*path, k))]
    return []


def substitute_tree(tree: Any, path: DocPath, models: NodeModels, sub: Substitution) -> Any:
    """A copy of ``tree`` (at ``path``) with every ``{name}`` in its values replaced from
    ``sub.scope``; subtree uses keep their ``values`` as written (they are read per use)."""
    tag = node_tag(tree)
    if tag is None or not isinstance(tree, dict) or tag == SUBTREE_TAG:
        return tree
    manifest = models.manifest("skill_action" if tag == SKILL_TAG else tag)
    if manifest is None:
        return tree  # an unknown node type: reported by the structure checks
    out: dict[str, Any] = {}
    for key, value in tree.items():
        port = manifest.port(key)
        here = (*path, key)
        if key in _FIXED or port is None:
            out[key] = value
        elif port.type == "tree":
            out[key] = substitute_tree(value, here, models, sub)
        elif port.type == "trees" and isinstance(value, list):
            out[key] = [substitute_tree(v, (*here, i), models, sub) for i, v in enumerate(value)]
        elif port.blackboard:
            what = f"{key!r} is an expression" if port.blackboard == "expr" else \
                f"{key!r} names blackboard keys"
            sub.in_keys += [(name, at, what) for name, at in _found(value, here)]
            out[key] = value
        else:
            out[key] = sub.value(value, here)
    return out


def in_key_text(name: str, what: str) -> tuple[str, str]:
    """The message and the fix for a ``{name}`` in a port that takes no values."""
    message = f"{what}: '{{{name}}}' is not substituted there"
    if "expression" in what:
        return message, ("parameters are not substituted in expressions: write the object id "
                         "or the key itself")
    return message, ("write the key plainly, or give the value in a value port (params: "
                     f"{{...: '{{{name}}}'}})")


def has_placeholders(tree: Any, models: NodeModels) -> bool:
    """Whether ``tree`` has a ``{name}`` in a value (its own nodes; uses not entered)."""
    probe = Substitution({})
    substitute_tree(tree, (), models, probe)
    return bool(probe.used)
