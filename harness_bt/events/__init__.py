"""Trace events as typed records (docs/architecture.md, "Traces").

The trace stays JSON lines of dicts (old traces replay unchanged); readers turn each dict into
a record with :func:`parse_event` and use its attributes (``match`` / ``isinstance``), never
the kind's string or the data's keys::

    match parse_event(line):
        case CommandEvent(state_after="FAILED", reason=reason): ...
        case VerdictEvent(verdict=verdict, evidence=evidence): ...

A kind this version does not know (from a newer writer) becomes an :class:`OtherEvent`;
a known kind whose fields are malformed is refused with a ``DefinitionError`` naming the
event's ``seq`` and kind, the field and the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_bt.events.base import Event, OtherEvent, build, malformed
from harness_bt.events.kinds import TraceKind
from harness_bt.events.records import *  # noqa: F403 (the records, exported below)
from harness_bt.events.records import RECORDS
from harness_bt.events.records import __all__ as _records

__all__ = ["Event", "OtherEvent", "TraceKind", "parse_event", *_records]

_BY_VALUE: dict[str, tuple[TraceKind, type[Event]]] = {
    kind.value: (kind, cls) for kind, cls in RECORDS.items()}


def parse_event(raw: Mapping[str, Any] | Event) -> Event:
    """The typed record of one trace event (a record is returned as it is)."""
    if isinstance(raw, Event):
        return raw
    if not isinstance(raw, Mapping):
        raise malformed("?", "?", f"not a trace event object: {type(raw).__name__}")
    kind = raw.get("kind")
    if not isinstance(kind, str):
        raise malformed(raw.get("seq"), kind, f"'kind' must be a string, got {kind!r}")
    known = _BY_VALUE.get(kind)
    if known is None:
        return build(OtherEvent, raw, kind)
    return build(known[1], raw, known[0])
