"""Checks on each node of a tree, past its shape: the skill exists and the params fit its
params model, expressions parse, budgets (attempts, backoff, timeouts) are sound, and the node
type's own constructor accepts it (with placeholder children: building a node is pure
configuration, so this is safe and catches every rule a node type enforces)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import py_trees
from pydantic import BaseModel, ValidationError

from harness_bt.authoring.nodes import SKILL_TAG, SUBTREE_TAG, node_tag
from harness_bt.authoring.registries import Registries
from harness_bt.errors import DefinitionError
from harness_bt.expr import ExprError, compile_expr
from harness_bt.nodes.base import NodeType
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem
from harness_bt.skill_params import signature
from harness_bt.source import DocPath, Document, format_path

__all__ = ["check_nodes", "iter_nodes", "node_kwargs"]

_POSE = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
_SKILL_TYPES = ("skill_action", "act_and_evaluate")


def iter_nodes(doc: Document, tree_path: DocPath, registries: Registries
               ) -> Iterator[tuple[DocPath, dict[str, Any], str]]:
    """Every node dict of the tree at ``tree_path`` (subtree uses included, not entered):
    ``(path, node, tag)``, pre-order."""
    stack = [tree_path]
    while stack:
        path = stack.pop()
        try:
            node = doc.get(path)
        except (KeyError, IndexError, TypeError):
            continue
        tag = node_tag(node)
        if tag is None or not isinstance(node, dict):
            continue
        yield path, node, tag
        manifest = registries.models.manifest(tag)
        if manifest is None:
            continue
        kids: list[DocPath] = []
        for port in manifest.ports:
            value = node.get(port.name)
            if port.type == "tree" and value is not None:
                kids.append((*path, port.name))
            elif port.type == "trees" and isinstance(value, list):
                kids += [(*path, port.name, i) for i in range(len(value))]
        stack.extend(reversed(kids))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _model_help(model: type[BaseModel]) -> str:
    """The params model with every field's type, default, range and unit."""
    return signature(model)


class _NodeChecks:
    def __init__(self, doc: Document, registries: Registries) -> None:
        self.doc = doc
        self.registries = registries
        self.out: list[Problem] = []

    def add(self, code: str, message: str, path: DocPath, fix: str, *, key: bool = False
            ) -> None:
        self.out.append(Problem(code, message, self.doc.where(path, key=key), fix=fix,
                                path=format_path(path)))

    # ------------------------------------------------------------------ skills

    def skill(self, node: dict[str, Any], path: DocPath, label: str) -> None:
        name = node.get("skill")
        skills = self.registries.skills
        if not isinstance(name, str) or skills is None:
            return
        if name not in skills:
            known = skills.names()
            self.add("UNKNOWN_SKILL", f"unknown skill {name!r} in {label}; known: "
                     f"{', '.join(known) or '(none)'}{did_you_mean(name, known)}",
                     (*path, "skill"), "use a registered skill, or install the package that "
                     "provides it" + ("" if known else " (no skills are registered: install a "
                                      "skills package, or pass --skills module:factory)"))
            return
        model = skills.get(name).params_model
        params, inputs, objects = (_mapping(node.get(k)) for k in ("params", "inputs",
                                                                    "objects"))
        fields = set(model.model_fields) | {f.alias for f in model.model_fields.values()
                                            if f.alias}
        strict_keys = model.model_config.get("extra") == "forbid"
        for port, given in (("inputs", inputs), ("objects", objects)):
            for param in given:
                if strict_keys and param not in fields:
                    self.add("UNKNOWN_PARAM", f"skill {name!r} has no param {param!r} "
                             f"(named in {port} of {label}); its params: "
                             f"{', '.join(sorted(fields))}{did_you_mean(param, fields)}",
                             (*path, port, param), f"see {_model_help(model)}", key=True)
        candidate = dict(params)
        candidate.update({p: list(_POSE) for p in objects})
        try:
            model.model_validate(candidate)
        except ValidationError as exc:
            for err in exc.errors():
                loc = [str(x) for x in err["loc"]]
                field = loc[0] if loc else ""
                if field in inputs or field in objects:
                    continue  # filled at run time from the blackboard / the world
                here = (*path, "params", *err["loc"]) if field in params else (*path,)
                if err["type"] == "missing":
                    self.add("MISSING_PARAM", f"skill {name!r} needs param {field!r} and "
                             f"{label} does not give it",
                             (*path, "params") if params else path,
                             f"give it in params (a value), inputs (a blackboard key) or "
                             f"objects (an object's pose); see {_model_help(model)}")
                elif err["type"] == "extra_forbidden":
                    self.add("UNKNOWN_PARAM", f"skill {name!r} has no param {field!r}; its "
                             f"params: {', '.join(sorted(fields))}{did_you_mean(field, fields)}",
                             here, f"remove it or fix its spelling; see {_model_help(model)}",
                             key=True)
                else:
                    self.add("INVALID_PARAMS", f"param {'.'.join(loc)} of skill {name!r} in "
                             f"{label}: {err['msg']} (got {err.get('input')!r})", here,
                             f"see {_model_help(model)}")

    # ------------------------------------------------------------------ budgets

    def budgets(self, node: dict[str, Any], path: DocPath, tag: str, label: str) -> bool:
        """Attempts, backoff and time bounds; True when all are sound."""
        before = len(self.out)
        bounds = {"retry": ("attempts", 1), "recover": ("budget", 1),
                  "evaluate": ("max_observations", 1), "act_and_evaluate":
                  ("max_observations", 1)}
        if tag in bounds:
            key, low = bounds[tag]
            value = node.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value < low:
                self.add("INVALID_BUDGET", f"{label}: {key}={value} must be >= {low} (runs in "
                         "all, the first included)" if key != "max_observations" else
                         f"{label}: {key}={value} must be >= {low}", (*path, key),
                         f"set {key} to {low} or more")
        if tag in ("retry", "recover") and isinstance(node.get("backoff"), dict):
            backoff = node["backoff"]
            for key, value in backoff.items():
                if key not in ("base_s", "cap_s"):
                    self.add("INVALID_BUDGET", f"{label}: backoff has no {key!r}; it takes "
                             f"base_s and cap_s{did_you_mean(key, ['base_s', 'cap_s'])}",
                             (*path, "backoff", key), "remove it or fix its spelling", key=True)
                elif isinstance(value, bool) or not isinstance(value, int | float) or (
                        math.isfinite(value) and value < 0):
                    self.add("INVALID_BUDGET", f"{label}: backoff {key}={value!r} must be a "
                             "number >= 0", (*path, "backoff", key), "write seconds, e.g. 0.1")
        if tag in ("timeout", "delay"):
            value = node.get("seconds")
            if isinstance(value, int | float) and not isinstance(value, bool) and (
                    value < 0 or (value == 0 and tag == "timeout")):
                self.add("INVALID_BUDGET", f"{label}: seconds={value!r} must be "
                         f"{'positive' if tag == 'timeout' else '>= 0'}", (*path, "seconds"),
                         "write a time in seconds")
        if tag == "repeat":
            value = node.get("times")
            if isinstance(value, int) and not isinstance(value, bool) and value < 1 \
                    and value != -1:
                self.add("INVALID_BUDGET", f"{label}: times={value} must be >= 1 (or -1: "
                         "until it fails)", (*path, "times"), "set times to 1 or more")
        return len(self.out) == before

    # ------------------------------------------------------------------ the rest

    def expressions(self, node: dict[str, Any], path: DocPath, tag: str, label: str) -> bool:
        manifest = self.registries.models.manifest(tag)
        ok = True
        for port in manifest.ports if manifest else ():
            value = node.get(port.name)
            if port.type != "expr" or not isinstance(value, str):
                continue
            try:
                compile_expr(value, roots=("bb", "world"))
            except ExprError as exc:
                ok = False
                self.add("INVALID_EXPRESSION", f"{port.name} of {label}: {exc.message} at "
                         f"column {exc.column} of {value!r}", (*path, port.name),
                         exc.fix or "see harness_bt.expr for the expression language")
        return ok

    def construct(self, node: dict[str, Any], path: DocPath, tag: str, label: str) -> None:
        type_name = "skill_action" if tag == SKILL_TAG else tag
        nt = self.registries.nodes.get(type_name)
        placeholders = itertools.count()
        kwargs = node_kwargs(node, nt, lambda _: py_trees.behaviours.Success(
            f"placeholder{next(placeholders)}"))
        try:
            nt.factory(name=node.get("name"), **kwargs)
        except DefinitionError as exc:
            self.add("INVALID_NODE", exc.message if str(node.get("name")) in exc.message
                     else f"{label}: {exc.message}", path,
                     exc.fix or f"see the {type_name!r} node type's ports (harness schema)")
        except (TypeError, ValueError, KeyError) as exc:
            self.add("INVALID_NODE", f"{label}: {exc}", path,
                     f"see the {type_name!r} node type's ports (harness schema)")

    def run(self, tree_path: DocPath) -> None:
        for path, node, tag in iter_nodes(self.doc, tree_path, self.registries):
            if path in self.doc.bad_nodes or tag == SUBTREE_TAG:
                continue
            type_name = "skill_action" if tag == SKILL_TAG else tag
            label = f"{type_name} {node.get('name')!r}"
            before = len(self.out)
            if type_name in _SKILL_TYPES:
                self.skill(node, path, label)
            sound = self.budgets(node, path, tag, label)
            sound = self.expressions(node, path, tag, label) and sound
            if sound and len(self.out) == before:
                self.construct(node, path, tag, label)


def node_kwargs(node: Mapping[str, Any], nt: NodeType,
                child: Callable[[Any], py_trees.behaviour.Behaviour]) -> dict[str, Any]:
    """The constructor keywords of ``node``: its params as written, each child tree built with
    ``child``."""
    kwargs: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("type", "name"):
            continue
        port = nt.manifest.port(key)
        if port is not None and port.type == "tree":
            kwargs[key] = child(value)
        elif port is not None and port.type == "trees":
            kwargs[key] = [child(v) for v in value] if isinstance(value, list) else []
        else:
            kwargs[key] = value
    return kwargs


def check_nodes(doc: Document, tree_path: DocPath, registries: Registries) -> list[Problem]:
    """Every node problem of the tree at ``tree_path`` past the structural ones."""
    checks = _NodeChecks(doc, registries)
    checks.run(tree_path)
    return checks.out
