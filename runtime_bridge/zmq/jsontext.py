"""JSON text on the runtime's hot paths: orjson's speed with the standard library's meaning.

orjson encodes and parses a small body about ten times faster than :mod:`json`, but it differs
at the edges: it writes NaN and infinities as ``null``, turns integers past 64 bits into floats,
and refuses what :mod:`json` reads (``1e400``, lone surrogate escapes). Each function here uses
orjson only where the answer is the one :mod:`json` would give, and otherwise asks :mod:`json`
itself, so errors, limits and accepted inputs stay exactly those of the standard library.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["RawJSON", "dumps", "loads"]

#: dataclasses and datetimes go to ``default`` (there is none: TypeError), as :mod:`json` refuses
#: them; a NaN becomes ``null``, so any output with ``null`` in it is written again by json.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
#: 19 or more digits in a row may be an integer orjson would read as a float: digits map to
#: "0", all else to " ", and the run is a substring search (both in C; a regex is slower)
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_RUN = b"0" * 19


class RawJSON:
    """JSON text embedded as it is by :func:`dumps` (text made once and sent many times, as a
    command's :attr:`~harness_bt.ledger.Command.wire_text`): orjson copies it into the output
    instead of encoding the value again. The text must be JSON that :mod:`json` reads."""

    __slots__ = ("fragment", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.fragment = orjson.Fragment(text)


def _fragment(value: Any) -> Any:
    if type(value) is RawJSON:
        return value.fragment
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _parsed(value: Any) -> Any:
    if type(value) is RawJSON:
        return json.loads(value.text, parse_constant=_reject_constant)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; raises ``ValueError`` for NaN or an infinity and ``TypeError`` for
    what JSON cannot hold (the errors of ``json.dumps(..., allow_nan=False)``). A
    :class:`RawJSON` value is written as its text."""
    try:
        out = orjson.dumps(value, default=_fragment, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        out = b"null"
    if b"null" in out:
        return json.dumps(value, separators=(",", ":"), allow_nan=False,
                          default=_parsed).encode("utf-8")
    return out


def loads(data: bytes | bytearray | memoryview) -> Any:
    """Parse UTF-8 JSON text; refuses NaN and infinities. Raises what ``json.loads`` raises
    (``ValueError``, ``UnicodeDecodeError``, ``RecursionError``)."""
    if _LONG_RUN not in bytes(data).translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # json decides (and words the error)
    return json.loads(bytes(data).decode("utf-8"), parse_constant=_reject_constant)
