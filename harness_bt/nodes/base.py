"""What every harness node shares: its manifest (ports, description, what each status means),
its binding to the run (``setup(context=..., scope=...)``), its path, and failure recording."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import py_trees
from py_trees.common import Status

from harness_bt.context import Outcome, OutcomeKind, PhaseScope, RunContext
from harness_bt.errors import DefinitionError

__all__ = [
    "GatedDecorator",
    "HarnessNode",
    "NodeManifest",
    "NodeType",
    "Port",
    "assign_paths",
    "iter_nodes",
]


@dataclass(frozen=True, slots=True)
class Port:
    """One constructor keyword of a node type. ``type`` is one of ``str, int, float, bool, list,
    dict, any, tree, trees, expr`` (``tree``/``trees``: child subtrees; ``expr``: a
    :mod:`harness_bt.expr` expression).

    ``blackboard`` says how the value names blackboard keys, for validation and remapping:
    ``read`` / ``write`` (the value is a key), ``read_values`` (a dict whose values are keys),
    ``read_list`` (a list of keys), ``expr`` (an expression whose ``bb.<key>`` paths are read);
    empty when the value is not a key."""

    name: str
    type: str = "any"
    required: bool = False
    default: Any = None
    description: str = ""
    blackboard: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required}
        if self.default is not None:
            out["default"] = self.default
        if self.description:
            out["description"] = self.description
        if self.blackboard:
            out["blackboard"] = self.blackboard
        return out


@dataclass(frozen=True, slots=True)
class NodeManifest:
    """What files, docs and drawings need to know about a node type."""

    type_name: str
    kind: str  # action | condition | decorator | composite | idiom
    description: str
    ports: tuple[Port, ...] = ()
    status: Mapping[str, str] = field(default_factory=dict)  # SUCCESS/FAILURE/RUNNING meaning
    #: blackboard keys the node writes that no port names, as templates (``"{name}.cmd"``)
    writes: tuple[str, ...] = ()
    #: a part of an idiom or a test stub: buildable, but left out of what users are offered
    #: (the known names in errors, did-you-mean suggestions, listings)
    internal: bool = False

    def port(self, name: str) -> Port | None:
        return next((p for p in self.ports if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "kind": self.kind,
            "description": self.description,
            "ports": [p.to_dict() for p in self.ports],
            "status": dict(self.status),
            **({"writes": list(self.writes)} if self.writes else {}),
            **({"internal": True} if self.internal else {}),
        }


@dataclass(frozen=True, slots=True)
class NodeType:
    """A constructor and its manifest: what the ``harness_bt.nodes`` entry points name.
    ``factory(name=..., **params)`` builds the node; ports of type ``tree`` / ``trees``
    receive already-built subtrees."""

    factory: Callable[..., py_trees.behaviour.Behaviour]
    manifest: NodeManifest


def iter_nodes(root: py_trees.behaviour.Behaviour) -> Iterator[py_trees.behaviour.Behaviour]:
    """Pre-order (root first, then children in order)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def assign_paths(root: py_trees.behaviour.Behaviour, *, where: str = "") -> dict[str, Any]:
    """Give every node its path (``root/child/grandchild``, by names) as ``harness_path``.
    Sibling names must be unique, and no name may contain ``/`` or ``#``."""
    paths: dict[str, Any] = {}
    problems: list[str] = []

    def visit(node: py_trees.behaviour.Behaviour, prefix: str) -> None:
        if "/" in node.name or "#" in node.name or not node.name.strip():
            problems.append(f"node name {node.name!r} must be non-empty and contain no '/' or '#'")
        path = f"{prefix}/{node.name}" if prefix else node.name
        if path in paths:
            problems.append(f"two siblings are both named {node.name!r} (path {path!r})")
        node.harness_path = path  # type: ignore[attr-defined]
        paths[path] = node
        for child in node.children:
            visit(child, path)

    visit(root, "")
    if problems:
        raise DefinitionError(
            "INVALID_TREE", "; ".join(problems), where=where or None,
            fix="give every node a unique name among its siblings (names build command ids)",
            details={"problems": problems},
        )
    return paths


class HarnessNode(py_trees.behaviour.Behaviour):
    """Base of the harness's leaves and decorators (a mixin in front of a py_trees class).

    Construction is pure configuration; ``setup(context=RunContext, scope=PhaseScope)`` binds the
    node to a run. ``update()`` never blocks.
    """

    MANIFEST: ClassVar[NodeManifest]
    context: RunContext
    scope: PhaseScope

    def setup(self, **kwargs: Any) -> None:
        context = kwargs.get("context")
        scope = kwargs.get("scope")
        if not isinstance(context, RunContext) or not isinstance(scope, PhaseScope):
            raise DefinitionError(
                "NODE_NOT_BOUND",
                f"{type(self).__name__} {self.name!r} needs setup(context=RunContext, "
                "scope=PhaseScope)",
                node_path=self.path,
                fix="run it through harness_bt.TaskRunner, which binds every node",
            )
        self.context = context
        self.scope = scope
        self.bind()

    def bind(self) -> None:
        """Per-run set-up after the context is known (resolve skills, check params)."""

    @property
    def path(self) -> str:
        return getattr(self, "harness_path", self.name)

    def params(self) -> dict[str, Any]:
        """Constructor keywords, JSON-ready (for traces, validation and drawings)."""
        return {}

    def problems(self, context: RunContext) -> list[str]:
        """Definition problems found against the run's registries (unknown skill, ...)."""
        return []

    def fail(self, kind: OutcomeKind, reason: str, *, retryable: bool = True,
             command_id: str | None = None, cause: Outcome | None = None,
             **details: Any) -> Status:
        self.scope.record(Outcome(kind, reason, self.path, retryable, command_id, details, cause))
        self.feedback_message = f"{kind.value}: {reason}"
        return Status.FAILURE


class GatedDecorator(HarnessNode, py_trees.decorators.Decorator):
    """A decorator that may hold its child back or cut it short before it ticks (on the run's
    clock: a timeout, a delay, a retry's backoff): :meth:`gate` says so."""

    def gate(self) -> Status | None:
        """Before the child ticks: a status to return instead of ticking it, or None."""
        return None

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        if self.status != Status.RUNNING:
            self.initialise()
        early = self.gate()
        if early is not None:
            if early != Status.RUNNING:
                self.stop(early)
            self.status = early
            yield self
            return
        yield from self.decorated.tick()
        new_status = self.update()
        if new_status != Status.RUNNING:
            self.stop(new_status)
        self.status = new_status
        yield self

    def update(self) -> Status:
        return self.decorated.status
