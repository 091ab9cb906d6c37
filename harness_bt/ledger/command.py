"""The two messages the ledger reasons about: a :class:`Command` and a runtime
:class:`CommandEvent`."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from harness_bt.ledger.errors import LedgerCode, LedgerError
from harness_bt.ledger.states import EventKind

__all__ = ["SCHEMA_VERSION", "Command", "CommandEvent", "find_non_finite"]

SCHEMA_VERSION = 1


class Command(BaseModel):
    """One request to a runtime to run a skill, as the ledger keeps it.

    Construction only checks types; :meth:`harness_bt.ledger.Ledger.submit` checks the content
    (empty id, non-finite numbers, budgets) so a bad command from the wire is refused with a
    :class:`LedgerError` that names the field.

    ``start_within_ms`` is the start budget: it starts when a ledger first accepts the command and
    is never refreshed by a resend. ``execution_timeout_ms`` bounds one execution from its start.
    ``premises`` maps object ids to the world-model versions the plan relied on.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    command_id: str
    task_id: str = ""
    robot_id: str = ""
    skill: str
    params: dict[str, Any] = Field(default_factory=dict)
    resources: tuple[str, ...] = ()
    world_version: int = 0
    plan_version: int = 0
    start_within_ms: float
    execution_timeout_ms: float
    epoch: int = 0
    premises: dict[str, int] = Field(default_factory=dict)

    @cached_property
    def digest(self) -> str:
        """sha256 of the content (every field but ``command_id``), canonical JSON."""
        body = self.model_dump(mode="json", exclude={"command_id"})
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def to_wire(self) -> dict[str, Any]:
        """A JSON-ready dict that :meth:`from_wire` reads back equal."""
        return self.model_dump(mode="json")

    @cached_property
    def wire(self) -> dict[str, Any]:
        """:meth:`to_wire`, made once per command and shared (the journal, the ZeroMQ
        dispatch and its resends read it): read it, never change it."""
        return self.model_dump(mode="json")

    @cached_property
    def wire_text(self) -> str:
        """:attr:`wire` as compact JSON text, made once per command (the ledger's journal entry
        and the ZeroMQ dispatch embed it as is). Written by orjson from the fields directly
        (no pydantic dump; both write a NaN as null) when every value is plain JSON data with
        string keys; else from :attr:`wire`."""
        try:
            return orjson.dumps({name: getattr(self, name) for name in _WIRE_FIELDS},
                                option=_OWN_TYPES_ONLY).decode()
        except TypeError:  # a value orjson may not write as pydantic does (a big int, a date)
            return json.dumps(self.wire, separators=(",", ":"), allow_nan=True)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Command:
        return cls.model_validate(dict(data))

    def problems(self) -> list[tuple[str, str]]:
        """Every content problem as ``(field, message)``; empty when the command is well formed."""
        resources, params = self.resources, self.params
        if (0 <= self.start_within_ms < _INF and 0 < self.execution_timeout_ms < _INF
                and self.schema_version == SCHEMA_VERSION and self.command_id.strip()
                and self.skill.strip()
                and (not resources or (all(r.strip() for r in resources)
                                       and len(set(resources)) == len(resources)))
                and (not params or not find_non_finite(params, "params"))):
            return []  # the common case, checked in one expression; the same rules as below
        out: list[tuple[str, str]] = []
        if not self.command_id.strip():
            out.append(("command_id", "is empty; give every command a unique, non-empty id"))
        if not self.skill.strip():
            out.append(("skill", "is empty; name the skill to run"))
        if self.schema_version != SCHEMA_VERSION:
            out.append(("schema_version", f"is {self.schema_version}, expected {SCHEMA_VERSION}"))
        for name in ("start_within_ms", "execution_timeout_ms"):
            value = getattr(self, name)
            if not math.isfinite(value):
                out.append((name, f"is {value!r}; budgets must be finite milliseconds"))
            elif value < 0:
                out.append((name, f"is {value!r}; budgets must not be negative"))
        if math.isfinite(self.execution_timeout_ms) and self.execution_timeout_ms == 0:
            out.append(("execution_timeout_ms", "is 0; give the execution a positive timeout"))
        for path, value in find_non_finite(self.params, "params"):
            out.append((path, f"is {value!r}; every number must be finite"))
        for i, res in enumerate(self.resources):
            if not res.strip():
                out.append((f"resources[{i}]", "is empty; name the resource (arm, gripper, base)"))
        if len(set(self.resources)) != len(self.resources):
            out.append(("resources", f"{list(self.resources)} names a resource twice"))
        return out


def find_non_finite(value: Any, path: str) -> list[tuple[str, float]]:
    """Paths of every non-finite float inside nested dicts / lists / tuples."""
    found: list[tuple[str, float]] = []
    kind = type(value)
    if kind in _PLAIN:
        return found
    if kind is float or isinstance(value, float):
        if not math.isfinite(value):
            found.append((path, value))
    elif kind is dict or isinstance(value, Mapping):  # a dict skips the ABC's slower check
        for key, item in value.items():
            if type(item) in _PLAIN or (type(item) is float and math.isfinite(item)):
                continue
            found.extend(find_non_finite(item, f"{path}.{key}"))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found.extend(find_non_finite(item, f"{path}[{i}]"))
    return found


_PLAIN = frozenset({str, int, bool, type(None)})
_INF = math.inf
_WIRE_FIELDS = tuple(Command.model_fields)
#: dates and dataclasses are left to pydantic (orjson writes some of them differently)
_OWN_TYPES_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_KINDS = {k.value: k for k in EventKind}


@dataclass(frozen=True, slots=True)
class CommandEvent:
    """One report from a runtime about one command.

    ``seq`` increases per command on the runtime side; the ledger applies each seq at most once.
    ``progress`` is optional (distance remaining, fraction done: the skill's contract says which).
    """

    command_id: str
    seq: int
    kind: EventKind | str
    reason: str = ""
    progress: float | None = None
    timestep: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kind = _KINDS.get(str(self.kind))
        if kind is None:
            raise LedgerError(
                LedgerCode.INVALID_EVENT,
                f"event kind {self.kind!r} is not one of {sorted(_KINDS)}",
                command_id=self.command_id,
                field="kind",
            )
        object.__setattr__(self, "kind", kind)
        if not isinstance(self.seq, int) or isinstance(self.seq, bool) or self.seq < 0:
            raise LedgerError(
                LedgerCode.INVALID_EVENT,
                f"event seq {self.seq!r} must be a non-negative integer",
                command_id=self.command_id,
                field="seq",
            )
        if self.progress is not None and not math.isfinite(self.progress):
            raise LedgerError(
                LedgerCode.INVALID_EVENT,
                f"event progress {self.progress!r} is not finite",
                command_id=self.command_id,
                field="progress",
            )

    def to_wire(self) -> dict[str, Any]:
        return {
            "command_id": self.command_id,
            "seq": self.seq,
            "kind": str(self.kind),
            "reason": self.reason,
            "progress": self.progress,
            "timestep": self.timestep,
            "data": dict(self.data),
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> CommandEvent:
        try:
            return cls(
                command_id=str(data["command_id"]),
                seq=data["seq"],
                kind=data["kind"],
                reason=str(data.get("reason") or ""),
                progress=data.get("progress"),
                timestep=data.get("timestep"),
                data=dict(data.get("data") or {}),
            )
        except KeyError as exc:
            raise LedgerError(
                LedgerCode.INVALID_EVENT, f"event is missing {exc.args[0]!r}", field=exc.args[0]
            ) from None
