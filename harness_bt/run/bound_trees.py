"""The behaviour trees of one run: one per atomic phase, built fresh for the run, every node
bound to the run's context and its phase's scope, and every node's status tracked so the trace
holds each change (a ``status`` event per phase and tick that changed any). Nodes written
outside harness-bt run guarded (:mod:`harness_bt.run.guard`): an exception in one ends it
FAILED with the traceback in the trace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import py_trees

from harness_bt.context import PhaseScope, RunContext
from harness_bt.errors import DefinitionError
from harness_bt.events import TraceKind
from harness_bt.nodes.base import HarnessNode, iter_nodes
from harness_bt.run.guard import guard_node, is_user_node

__all__ = ["RunTrees"]

Behaviour = py_trees.behaviour.Behaviour


class RunTrees:
    """The nodes of a run's trees, by atomic phase id, each with its path (pre-order)."""

    def __init__(self, trees: Mapping[str, Behaviour]) -> None:
        self.nodes = {pid: list(iter_nodes(root)) for pid, root in trees.items()}
        self.paths = {pid: [n.harness_path for n in nodes]  # type: ignore[attr-defined]
                      for pid, nodes in self.nodes.items()}
        self._last = {pid: [n.status for n in nodes] for pid, nodes in self.nodes.items()}

    def bind(self, context: RunContext, scopes: Mapping[str, PhaseScope], *, task: str) -> None:
        """Bind every node to the run; every node's problem (an unknown skill or evaluator)
        is reported at once, before any is bound."""
        problems: list[str] = []
        for pid, nodes in self.nodes.items():
            for node in nodes:
                if isinstance(node, HarnessNode):
                    problems.extend(f"phase {pid}, node {node.path}: {p}"
                                    for p in node.problems(context))
        if problems:
            raise DefinitionError(
                "INVALID_TASK", f"task {task!r}: {len(problems)} problem(s): "
                + "; ".join(problems), details={"problems": problems},
                fix="register the missing skills / evaluators or fix the names")
        for pid, nodes in self.nodes.items():
            for node in nodes:
                if not is_user_node(node):
                    node.setup(context=context, scope=scopes[pid])
                    continue
                try:
                    node.setup(context=context, scope=scopes[pid])
                except Exception as exc:
                    where = getattr(node, "harness_path", node.name)
                    problems.append(f"phase {pid}, node {where}: setup() raised "
                                    f"{type(exc).__name__}: {exc}")
                guard_node(node, context, scopes[pid])
        if problems:
            raise DefinitionError(
                "INVALID_TASK", f"task {task!r}: {len(problems)} problem(s): "
                + "; ".join(problems), details={"problems": problems},
                fix="fix the setup() of the nodes named")

    def root_path(self, pid: str) -> str:
        return self.paths[pid][0]

    def status_map(self, phases: Sequence[str]) -> dict[str, dict[str, str]]:
        """``{phase: {node path: status}}`` for these phases."""
        return {pid: {p: n.status.value for p, n in zip(self.paths[pid], self.nodes[pid],
                                                        strict=True)}
                for pid in phases}

    def record_status(self, pid: str, context: RunContext) -> None:
        """Trace the nodes of ``pid`` whose status changed since the last look."""
        current = [n.status for n in self.nodes[pid]]
        last = self._last[pid]
        if current == last:
            return
        changes = {path: [a.value, b.value] for path, a, b in zip(self.paths[pid], last, current,
                                                                   strict=True) if a is not b}
        self._last[pid] = current
        context.emit(TraceKind.STATUS, phase=pid, changes=changes)
