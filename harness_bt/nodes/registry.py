"""The node-type registry: type name -> constructor + manifest, so a task file can be validated,
built and drawn (:func:`harness_bt.authoring.build_tree` builds a tree from a node dict through it);
:func:`describe_tree` turns a built tree back into data (what the trace's first event and the
drawings use)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import py_trees
from py_trees.common import ParallelPolicy

from harness_bt.errors import DefinitionError
from harness_bt.nodes import flow
from harness_bt.nodes.base import HarnessNode, NodeManifest, NodeType, Port
from harness_bt.nodes.conditions import Check, Observe, WaitFor
from harness_bt.nodes.decorators import RecoveryDone, RecoveryGate, RecoveryGuard, Retry
from harness_bt.nodes.evaluate import Evaluate
from harness_bt.nodes.idioms import act_and_evaluate, recover
from harness_bt.nodes.loops import ForEach, for_each
from harness_bt.nodes.poses import DerivePose
from harness_bt.nodes.skill_action import SkillAction
from harness_bt.plugins import Group, Origin, Registry

__all__ = ["INTERNAL_TYPES", "NodeRegistry", "builtin_types", "describe_tree"]

Behaviour = py_trees.behaviour.Behaviour


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
                              {"RUNNING": "always"}, internal=True)),
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
        _leaf(DerivePose), NodeType(for_each, ForEach.MANIFEST),
        _leaf(Retry), _leaf(RecoveryGate), _leaf(RecoveryGuard), _leaf(RecoveryDone),
        _leaf(flow.Timeout), _leaf(flow.Delay), _leaf(flow.Repeat), _leaf(flow.ForceSuccess),
        _leaf(flow.ForceFailure), _leaf(flow.KeepRunningUntilFailure),
    ]


#: The built-in node types whose manifest says ``internal`` (``recover`` builds the three
#: ``recovery_*``; ``running`` never ends): registered, but kept out of the lists a user reads.
INTERNAL_TYPES = frozenset(nt.manifest.type_name for nt in builtin_types()
                           if nt.manifest.internal)


class NodeRegistry(Registry[NodeType]):
    """Type name -> :class:`NodeType`. Built with the built-ins (unless ``builtins=False``);
    ``entry_points=True`` also loads the ``harness_bt.nodes`` group."""

    def __init__(self, *, builtins: bool = True, entry_points: bool = False) -> None:
        super().__init__("node type", validate=_validate)
        if builtins:
            for nt in builtin_types():
                self.register(nt.manifest.type_name, nt,
                              origin=Origin("built in (harness_bt.nodes)"))
        if entry_points:
            self.load(Group.NODES)

    def manifests(self) -> dict[str, dict[str, Any]]:
        return {name: nt.manifest.to_dict() for name, nt in self.items()}

    def hidden(self, name: str) -> bool:
        """Internal node types (the parts of ``recover``, the always-RUNNING stub) are built
        from documents but not offered in lists or suggestions."""
        return name in self and self.get(name).manifest.internal



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
