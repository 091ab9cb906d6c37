"""The envelope every trace event shares, and the typed fields of the records built on it.

A record is a frozen dataclass: the envelope (``seq``, ``kind``, ``task_id``, ``run_id``,
``command_id``, ``plan_version``, ``tick``, ``mono``, ``wall``), the event's ``data`` exactly as
written (so :meth:`Event.to_dict` gives back the very dict of the trace), and, per kind, typed
fields read from ``data`` and checked once, when the event is parsed. A field declared with
:func:`field_of` names its key in ``data`` (when it differs from the attribute), the check that
converts it (:func:`text`, :func:`number`, ...) and its default when the key may be absent.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = ["Event", "OtherEvent", "anything", "field_of", "flag", "integer", "mapping",
           "number", "optional", "text", "texts", "values"]

Check = Callable[[Any], Any]


class _Bad(Exception):
    """A value a check refuses: ``str(exc)`` says what it should have been."""


def text(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _Bad("a string")


def integer(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _Bad("an integer")


def number(value: Any) -> float:
    """A float; ``"inf"``, ``"-inf"`` and ``"nan"`` are how the trace writes non-finite ones."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if value in ("inf", "-inf", "nan"):
        return float(value)
    raise _Bad("a number")


def flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _Bad("true or false")


def mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise _Bad("an object")


def values(value: Any) -> tuple[Any, ...]:
    if isinstance(value, list | tuple):
        return tuple(value)
    raise _Bad("a list")


def texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _Bad("a list of strings")


def anything(value: Any) -> Any:
    return value


def optional(check: Check) -> Check:
    """``check``, or None."""
    def either(value: Any) -> Any:
        if value is None:
            return None
        try:
            return check(value)
        except _Bad as exc:
            raise _Bad(f"{exc} or null") from None

    return either


_REQUIRED = object()


def field_of(check: Check, *, key: str | None = None, default: Any = _REQUIRED) -> Any:
    """A typed field read from ``data[key]`` (the attribute's own name when ``key`` is None);
    without ``default`` the key must be there. A dict default gives a fresh empty dict."""
    meta = {"check": check, "key": key}
    if default is _REQUIRED:
        return dataclasses.field(metadata=meta)
    if isinstance(default, dict):
        return dataclasses.field(default_factory=dict, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


#: The envelope's keys: their check and their default (None: required).
_ENVELOPE: tuple[tuple[str, Check, Any], ...] = (
    ("task_id", text, ""), ("run_id", text, ""), ("command_id", optional(text), None),
    ("plan_version", integer, 0), ("tick", integer, 0), ("mono", number, 0.0),
    ("wall", number, 0.0))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One trace event: the envelope, ``data`` as written, and (in a kind's record) its
    typed fields."""

    seq: int
    kind: str
    task_id: str = ""
    run_id: str = ""
    command_id: str | None = None
    plan_version: int = 0
    tick: int = 0
    mono: float = 0.0
    wall: float = 0.0
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The event as the trace holds it (``parse_event(e.to_dict()) == e``)."""
        return {"seq": self.seq, "kind": str(self.kind), "task_id": self.task_id,
                "run_id": self.run_id, "command_id": self.command_id,
                "plan_version": self.plan_version, "tick": self.tick,
                "mono": _written(self.mono), "wall": _written(self.wall),
                "data": dict(self.data)}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OtherEvent(Event):
    """An event of a kind this version does not know (a newer writer's): the envelope and its
    ``data``, nothing typed."""


def _written(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


_SPECS: dict[type[Event], tuple[tuple[str, str, Check, bool], ...]] = {}
_BASE = frozenset(f.name for f in dataclasses.fields(Event))


def _specs(cls: type[Event]) -> tuple[tuple[str, str, Check, bool], ...]:
    """(attribute, key in data, check, required) for each typed field of ``cls``."""
    specs = _SPECS.get(cls)
    if specs is None:
        specs = tuple(
            (f.name, f.metadata.get("key") or f.name, f.metadata["check"],
             f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls) if f.name not in _BASE)
        _SPECS[cls] = specs
    return specs


def malformed(seq: Any, kind: Any, what: str) -> DefinitionError:
    return DefinitionError(
        "INVALID_TRACE_EVENT", f"trace event seq {seq} (kind "
        f"{repr(str(kind)) if isinstance(kind, str) else repr(kind)}): {what}",
        where=f"seq {seq}",
        fix="give a trace written by a TaskRunner of this version or an earlier one; a "
            "hand-edited trace must keep each kind's fields (docs/architecture.md, \"Traces\")")


def build(cls: type[Event], raw: Mapping[str, Any], kind: str) -> Event:
    """The record ``cls`` of ``raw`` (a trace event dict), every field checked."""
    seq = raw.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise malformed(seq, kind, f"'seq' must be an integer, got {seq!r}")
    fields: dict[str, Any] = {"seq": seq, "kind": kind}
    for name, check, default in _ENVELOPE:
        value = raw.get(name, default)
        try:
            fields[name] = default if value is None and default is None else check(value)
        except _Bad as exc:
            raise malformed(seq, kind, f"'{name}' must be {exc}, got {value!r}") from None
    data = raw.get("data", {})
    if not isinstance(data, dict):
        raise malformed(seq, kind, f"'data' must be an object, got {data!r}")
    fields["data"] = data
    for name, key, check, required in _specs(cls):
        if key not in data:
            if required:
                raise malformed(seq, kind, f"data has no '{key}' (its keys: "
                                f"{', '.join(sorted(data)) or 'none'})")
            continue
        try:
            fields[name] = check(data[key])
        except _Bad as exc:
            raise malformed(seq, kind, f"data '{key}' must be {exc}, got "
                            f"{_short(data[key])}") from None
    return cls(**fields)


def _short(value: Any) -> str:
    text_ = repr(value)
    return text_ if len(text_) <= 80 else text_[:77] + "..."
