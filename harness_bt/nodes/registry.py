"""The node-type registry: type name -> constructor + manifest, so a task file can be validated,
built and drawn. :func:`build_tree` builds a tree from a neutral nested dict; :func:`describe_tree`
turns a built tree back into one (what the trace's first event and the drawings use)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import py_trees
from py_trees.common import ParallelPolicy

from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import HarnessNode, NodeManifest, Port
from harness_bt.nodes.conditions import Check, Observe, WaitFor
from harness_bt.nodes.decorators import RecoveryDone, RecoveryGate, RecoveryGuard, Retry
from harness_bt.nodes.evaluate import Evaluate
from harness_bt.nodes.flow import (
    Delay,
    ForceFailure,
    ForceSuccess,
    KeepRunningUntilFailure,
    Repeat,
    Timeout,
)
from harness_bt.nodes.idioms import act_and_evaluate, recover
from harness_bt.nodes.skill_action import SkillAction
from harness_bt.plugins import Registry, did_you_mean

__all__ = ["NodeRegistry", "NodeType", "build_tree", "describe_tree"]

Behaviour = py_trees.behaviour.Behaviour


@dataclass(frozen=True, slots=True)
class NodeType:
    """A constructor and its manifest. ``factory(name=..., **params)`` builds the node; ports of
    type ``tree`` / ``trees`` receive already-built subtrees."""

    factory: Callable[..., Behaviour]
    manifest: NodeManifest


def _sequence(name: str, children: list[Behaviour], memory: bool = True) -> Behaviour:
    return py_trees.composites.Sequence(name, memory=memory, children=children)


def _selector(name: str, children: list[Behaviour], memory: bool = True) -> Behaviour:
    return py_trees.composites.Selector(name, memory=memory, children=children)


def _parallel(name: str, children: list[Behaviour], policy: str = "all") -> Behaviour:
    policies = {"all": ParallelPolicy.SuccessOnAll, "one": ParallelPolicy.SuccessOnOne}
    if policy not in policies:
        raise DefinitionError("INVALID_NODE", f"parallel {name!r}: policy {policy!r} must be "
                              f"one of {sorted(policies)}", node_path=name)
    return py_trees.composites.Parallel(name, policy=policies[policy](), children=children)


def _inverter(name: str, child: Behaviour) -> Behaviour:
    return py_trees.decorators.Inverter(name, child)


def _status(cls: type[Behaviour]) -> Callable[..., Behaviour]:
    def make(name: str) -> Behaviour:
        return cls(name)
    return make


def _recover(name: str, attempt: Behaviour, recovery: Behaviour, budget: int = 2,
             backoff: Mapping[str, Any] | None = None) -> Behaviour:
    return recover(attempt, recovery, budget, name=name, backoff=backoff)


def _validate(name: str, item: NodeType) -> None:
    if not isinstance(item, NodeType):
        raise DefinitionError("INVALID_NODE_TYPE",
                              f"node type {name!r} must be a NodeType(factory, manifest)")
    if item.manifest.type_name != name:
        raise DefinitionError("INVALID_NODE_TYPE", f"node type registered as {name!r} has a "
                              f"manifest named {item.manifest.type_name!r}")


def _leaf(cls: type[HarnessNode]) -> NodeType:
    return NodeType(cls, cls.MANIFEST)


_COMPOSITE_STATUS = {"SUCCESS": "see the py_trees composite", "FAILURE": "idem",
                     "RUNNING": "idem"}


def builtin_types() -> list[NodeType]:
    trees = Port("children", "trees", True)
    memory = Port("memory", "bool", default=True, description="resume at the running child")
    return [
        NodeType(_sequence, NodeManifest("sequence", "composite",
                                         "Children in order until one does not succeed.",
                                         (trees, memory), _COMPOSITE_STATUS)),
        NodeType(_selector, NodeManifest("selector", "composite",
                                         "Children in order until one does not fail.",
                                         (trees, memory), _COMPOSITE_STATUS)),
        NodeType(_parallel, NodeManifest("parallel", "composite", "Children side by side.",
                                         (trees, Port("policy", "str", default="all",
                                                      description="all | one")),
                                         _COMPOSITE_STATUS)),
        NodeType(_inverter, NodeManifest("inverter", "decorator", "SUCCESS <-> FAILURE.",
                                         (Port("child", "tree", True),), _COMPOSITE_STATUS)),
        NodeType(_status(py_trees.behaviours.Success),
                 NodeManifest("success", "action", "Always SUCCESS.", (),
                              {"SUCCESS": "always"})),
        NodeType(_status(py_trees.behaviours.Failure),
                 NodeManifest("failure", "action", "Always FAILURE.", (),
                              {"FAILURE": "always"})),
        NodeType(_status(py_trees.behaviours.Running),
                 NodeManifest("running", "action", "Always RUNNING.", (),
                              {"RUNNING": "always"})),
        NodeType(_recover, NodeManifest(
            "recover", "idiom", "Attempt; on failure recover, then attempt again (budgeted).",
            (Port("attempt", "tree", True), Port("recovery", "tree", True),
             Port("budget", "int", default=2, description="runs of the attempt in all"),
             Port("backoff", "dict")),
            {"SUCCESS": "the attempt succeeded", "FAILURE": "see recover()",
             "RUNNING": "attempt or recovery running"})),
        NodeType(act_and_evaluate, NodeManifest(
            "act_and_evaluate", "idiom", "A skill action followed by its evaluation.",
            (*SkillAction.MANIFEST.ports[:6], Port("max_observations", "int", default=3)),
            {"SUCCESS": "verdict SUCCEEDED", "FAILURE": "action or verdict failed",
             "RUNNING": "acting or evaluating"},
            writes=("{name}.cmd", "{name}.check.verdict"))),
        _leaf(SkillAction), _leaf(Evaluate), _leaf(Observe), _leaf(Check), _leaf(WaitFor),
        _leaf(Retry), _leaf(RecoveryGate), _leaf(RecoveryGuard), _leaf(RecoveryDone),
        _leaf(Timeout), _leaf(Delay), _leaf(Repeat), _leaf(ForceSuccess), _leaf(ForceFailure),
        _leaf(KeepRunningUntilFailure),
    ]


class NodeRegistry(Registry[NodeType]):
    """Type name -> :class:`NodeType`. Built with the built-ins (unless ``builtins=False``);
    ``entry_points=True`` also loads the ``harness_bt.nodes`` group."""

    def __init__(self, *, builtins: bool = True, entry_points: bool = False) -> None:
        super().__init__("node type", validate=_validate)
        if builtins:
            for nt in builtin_types():
                self.register(nt.manifest.type_name, nt, origin="harness_bt.nodes")
        if entry_points:
            self.load_entry_points("harness_bt.nodes")

    def manifests(self) -> dict[str, dict[str, Any]]:
        return {name: nt.manifest.to_dict() for name, nt in self.items()}

    def build(self, spec: Mapping[str, Any], *, where: str = "tree") -> Behaviour:
        return build_tree(spec, self, where=where)


def build_tree(spec: Mapping[str, Any], registry: NodeRegistry | None = None, *,
               where: str = "tree") -> Behaviour:
    """Build a tree from ``{"type": ..., "name": ..., <params>, <tree ports>}``. Every problem in
    the whole spec is reported at once, each with its place (``tree.children[2]``)."""
    registry = registry if registry is not None else NodeRegistry(entry_points=True)
    problems: list[str] = []
    built = _build(spec, registry, where, problems)
    if problems or built is None:
        raise DefinitionError("INVALID_TREE", f"{len(problems)} problem(s) in {where}: "
                              + "; ".join(problems), where=where,
                              details={"problems": problems})
    return built


def _build(spec: Any, registry: NodeRegistry, where: str, problems: list[str]
           ) -> Behaviour | None:
    if not isinstance(spec, Mapping):
        problems.append(f"{where}: expected a mapping with 'type' and 'name', got "
                        f"{type(spec).__name__}")
        return None
    kind = spec.get("type")
    if kind not in registry:
        known = registry.names()
        problems.append(f"{where}: unknown node type {kind!r}; known: {', '.join(known)}"
                        f"{did_you_mean(str(kind), known)}")
        return None
    nt = registry.get(str(kind))
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: node of type {kind!r} needs a non-empty 'name'")
        return None
    ports = {p.name: p for p in nt.manifest.ports}
    kwargs: dict[str, Any] = {}
    for key, value in spec.items():
        if key in ("type", "name"):
            continue
        port = ports.get(key)
        if port is None:
            problems.append(f"{where} ({kind} {name!r}): unknown param {key!r}; known: "
                            f"{', '.join(sorted(ports)) or '(none)'}"
                            f"{did_you_mean(key, list(ports))}")
            continue
        if port.type == "tree":
            kwargs[key] = _build(value, registry, f"{where}.{key}", problems)
        elif port.type == "trees":
            if not isinstance(value, list):
                problems.append(f"{where}.{key}: expected a list of nodes")
                continue
            kwargs[key] = [_build(v, registry, f"{where}.{key}[{i}]", problems)
                           for i, v in enumerate(value)]
        else:
            kwargs[key] = value
    for port in nt.manifest.ports:
        if port.required and port.name not in spec:
            problems.append(f"{where} ({kind} {name!r}): missing required param {port.name!r}")
    if problems:
        return None
    try:
        return nt.factory(name=name, **kwargs)
    except DefinitionError as exc:
        problems.append(f"{where}: {exc.message}")
    except (TypeError, ValueError) as exc:
        problems.append(f"{where} ({kind} {name!r}): {exc}")
    return None


_TYPE_BY_CLASS: dict[type, str] = {
    py_trees.composites.Sequence: "sequence",
    py_trees.composites.Selector: "selector",
    py_trees.composites.Parallel: "parallel",
    py_trees.decorators.Inverter: "inverter",
    py_trees.behaviours.Success: "success",
    py_trees.behaviours.Failure: "failure",
    py_trees.behaviours.Running: "running",
}


def describe_tree(root: Behaviour) -> list[dict[str, Any]]:
    """Every node, pre-order: path, name, type, kind, params, children's paths."""
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        manifest = getattr(node, "MANIFEST", None)
        if manifest is not None:
            type_name, kind = manifest.type_name, manifest.kind
        else:
            type_name = _TYPE_BY_CLASS.get(type(node), type(node).__name__)
            kind = ("composite" if isinstance(node, py_trees.composites.Composite)
                    else "decorator" if isinstance(node, py_trees.decorators.Decorator)
                    else "action")
        entry: dict[str, Any] = {
            "path": getattr(node, "harness_path", node.name), "name": node.name,
            "type": type_name, "kind": kind, "class": type(node).__qualname__,
            "children": [getattr(c, "harness_path", c.name) for c in node.children],
        }
        if isinstance(node, HarnessNode):
            entry["params"] = node.params()
        elif hasattr(node, "memory"):
            entry["params"] = {"memory": node.memory}
        elif isinstance(node, py_trees.composites.Parallel):
            entry["params"] = {"policy": "one" if isinstance(
                node.policy, ParallelPolicy.SuccessOnOne) else "all"}
        out.append(entry)
        stack.extend(reversed(node.children))
    return out
