"""Nodes written outside harness-bt (a node-type plug-in, a Python tree's own behaviour) run
guarded: an exception raised in their ``initialise``, ``update`` or ``terminate`` does not
take the run (and the command line) down. The node ends FAILURE instead, with the outcome
``failed`` / ``NODE_ERROR`` (not retryable) recorded in its phase, so the phase's failure
transition fires, and the exception and its traceback are the evidence in the trace (a
``node_error`` event, and the ``failure`` event's outcome details).

The framework's own nodes (``harness_bt``, ``py_trees``) are not guarded: an exception there
is a defect of harness-bt and stays loud.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import py_trees
from py_trees.common import Status

from harness_bt.context import Outcome, OutcomeKind, PhaseScope, RunContext
from harness_bt.events import TraceKind

__all__ = ["NODE_ERROR", "guard_node", "is_user_node"]

#: The outcome reason of a node that raised.
NODE_ERROR = "NODE_ERROR"
_OWN = ("harness_bt", "py_trees")


def is_user_node(node: py_trees.behaviour.Behaviour) -> bool:
    """Whether the node's class comes from outside harness-bt and py_trees."""
    return type(node).__module__.partition(".")[0] not in _OWN


def guard_node(node: py_trees.behaviour.Behaviour, context: RunContext,
               scope: PhaseScope) -> None:
    """Wrap the node's ``initialise`` / ``update`` / ``terminate`` (see the module
    docstring). An exception in ``initialise`` makes the ``update`` of that tick FAILURE
    without calling it; one in ``terminate`` is traced only (the node is being stopped)."""
    initialise: Callable[[], None] = node.initialise
    update: Callable[[], Status] = node.update
    terminate: Callable[[Status], None] = node.terminate
    pending: list[Outcome] = []

    def failed(stage: str, exc: Exception) -> Outcome:
        path = str(getattr(node, "harness_path", node.name))
        details: dict[str, Any] = {
            "stage": stage, "node_class": f"{type(node).__module__}.{type(node).__qualname__}",
            "exception": f"{type(exc).__name__}: {exc}",
            "traceback": "".join(traceback.format_exception(exc)),
        }
        context.emit(TraceKind.NODE_ERROR, phase=scope.phase, node_path=path, **details)
        return Outcome(OutcomeKind.FAILED, NODE_ERROR, path, retryable=False, details=details)

    def guarded_initialise() -> None:
        try:
            initialise()
        except Exception as exc:
            pending.append(failed("initialise", exc))

    def guarded_update() -> Status:
        if pending:
            scope.record(pending.pop())
            return Status.FAILURE
        try:
            return update()
        except Exception as exc:
            scope.record(failed("update", exc))
            return Status.FAILURE

    def guarded_terminate(new_status: Status) -> None:
        pending.clear()
        try:
            terminate(new_status)
        except Exception as exc:
            failed("terminate", exc)

    setattr(node, "initialise", guarded_initialise)  # noqa: B010 (an instance's own method)
    setattr(node, "update", guarded_update)  # noqa: B010
    setattr(node, "terminate", guarded_terminate)  # noqa: B010
