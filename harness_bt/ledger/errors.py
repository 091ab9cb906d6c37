"""Errors of the command ledger, each with a stable code."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

from harness_bt.errors import CommandError

__all__ = ["LedgerCode", "LedgerError", "finite_seconds"]


class LedgerCode(StrEnum):
    COMMAND_ID_CONFLICT = "COMMAND_ID_CONFLICT"  # same id, different content
    STALE_WORLD = "STALE_WORLD"  # planned on an older world version than the ledger's
    EXPIRED_COMMAND = "EXPIRED_COMMAND"  # no start budget left
    RESOURCE_BUSY = "RESOURCE_BUSY"  # a resource is held by a non-terminal command
    STALE_EPOCH = "STALE_EPOCH"  # issued under an older control epoch
    INVALID_COMMAND = "INVALID_COMMAND"  # malformed command or argument (the field is named)
    INVALID_EVENT = "INVALID_EVENT"  # malformed runtime event
    UNKNOWN_COMMAND = "UNKNOWN_COMMAND"  # no record with that id
    INVALID_TRANSITION = "INVALID_TRANSITION"  # the lifecycle forbids this step from this state
    JOURNAL_FAILED = "JOURNAL_FAILED"  # the durable journal could not be read or written
    LEDGER_CLOSED = "LEDGER_CLOSED"


class LedgerError(CommandError):
    """A ledger call was refused. ``code`` is a :class:`LedgerCode` value (a ``str``)."""

    def __init__(
        self,
        code: LedgerCode | str,
        message: str,
        *,
        command_id: str | None = None,
        field: str | None = None,
        fix: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.field = field
        merged = dict(details or {})
        if field is not None:
            merged.setdefault("field", field)
        super().__init__(
            LedgerCode(code).value, message, command_id=command_id, fix=fix, details=merged
        )


def finite_seconds(name: str, value: float, command_id: str | None = None) -> float:
    """``value`` as a float, refused (``INVALID_COMMAND`` naming ``name``) unless it is a
    finite number: a time or a duration in seconds."""
    if type(value) is float and value - value == 0.0:  # fast path: finite float
        return value
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise LedgerError(
            LedgerCode.INVALID_COMMAND,
            f"{name}={value!r} must be a finite number of seconds",
            command_id=command_id,
            field=name,
        )
    return float(value)
