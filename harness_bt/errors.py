"""The one exception hierarchy of harness-bt.

Every error the project raises on purpose is a :class:`HarnessError`. Children say which side
of the system it comes from: :class:`DefinitionError` while loading or building a task,
:class:`CommandError` while running one, :class:`BridgeError` in a transport. Each carries
structured fields (``code``, ``command_id``, ``node_path``, ``where``, ``fix``) so callers
branch on data, not on message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["BridgeError", "CommandError", "DefinitionError", "HarnessError", "PlanningError",
           "reason_code"]


class HarnessError(Exception):
    """Base of every deliberate harness-bt error.

    ``code`` is a stable upper-case identifier; ``message`` says what went wrong and with which
    value; ``fix`` (optional) says what to do about it; ``where`` names a file position, a route
    or a worker; ``details`` holds any further structured data.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        command_id: str | None = None,
        node_path: str | None = None,
        where: str | None = None,
        fix: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.command_id = command_id
        self.node_path = node_path
        self.where = where
        self.fix = fix
        self.details: dict[str, Any] = dict(details or {})
        super().__init__(self._render())

    def _render(self) -> str:
        text = f"{self.code}: {self.message}"
        if self.where:
            text = f"{self.where}: {text}"
        if self.command_id:
            text += f" [command {self.command_id}]"
        if self.node_path:
            text += f" [node {self.node_path}]"
        if self.fix:
            text += f"; {self.fix}"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its fields, not by calling __init__ again (subclasses take other
        # arguments): an error raised in a worker process reaches the parent whole.
        return (_restore, (type(self), self.args, dict(self.__dict__)))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, for traces and HTTP error bodies."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        for key in ("command_id", "node_path", "where", "fix"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.details:
            out["details"] = self.details
        return out


def _restore(cls: type[HarnessError], args: tuple[Any, ...], state: dict[str, Any]
             ) -> HarnessError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class DefinitionError(HarnessError):
    """A task, tree, chart or registry definition is wrong (found at load or build time)."""


class CommandError(HarnessError):
    """A command was refused or broke a lifecycle rule at run time."""


class BridgeError(HarnessError):
    """A transport to a runtime or simulator failed (which worker, which route, what happened)."""


class PlanningError(HarnessError):
    """A planner could not turn an instruction into a task and its parameters: the
    instruction is ambiguous (``details["candidates"]``), matches no task, or the planner
    failed (its endpoint unreachable, slow, or its answer invalid)."""


def reason_code(reason: str) -> str:
    """The code of a reason, the part to compare: a reason (of a command's state, an ack, an
    event) is a code, or a code, a colon and a detail (``"LEASE_EXPIRED"``, ``"STOP_FORCED:
    CANCEL_REQUESTED"``)."""
    return reason.partition(":")[0].strip()
