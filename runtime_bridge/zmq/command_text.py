"""The journal text of a command that arrived over the wire, written from the request's own
decoded body instead of encoding the validated :class:`~harness_bt.ledger.Command` again.

The runtime journals every command it accepts as JSON (``RuntimeRecord.to_row``), and a
restarted runtime reads it back with ``Command.model_validate_json``. A DISPATCH body has
already been parsed into a dict and validated into that ``Command``; orjson writes the dict,
with every field the sender left out filled in with its default, in a few microseconds, where
pydantic's ``model_dump_json`` of the command takes several times as long on the reply path.
Read back, the text validates to a command equal to the one accepted (the same dict passed the
same validation, every field explicit, so a later version's defaults cannot change what was
journaled). Where orjson would not write what :mod:`json` means (an integer past 64 bits), the
answer is None and the record encodes its command itself, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from harness_bt.ledger import Command

__all__ = ["command_text"]


def _defaults() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in Command.model_fields.items():
        if info.is_required():
            continue
        factory = info.default_factory
        out[name] = factory() if factory is not None else info.default  # type: ignore[call-arg]
    return out


_DEFAULTS = _defaults()  # only ever read (written out by orjson), never handed on


def command_text(data: Mapping[str, Any]) -> str | None:
    """JSON text of the received command ``data`` (already validated into a Command), or None
    when the record should encode the command itself."""
    try:
        return orjson.dumps({**_DEFAULTS, **data}).decode()
    except TypeError:  # an integer past 64 bits, a lone surrogate
        return None
