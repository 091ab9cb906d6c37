"""The policy wire format of the openpi WebSocket protocol: msgpack, with NumPy arrays as maps.

Every message (the server's metadata, an observation, an action chunk) is one binary WebSocket
frame holding one msgpack value. An array travels as the map ``{"__ndarray__": true, "data":
<raw bytes, C order>, "dtype": <NumPy dtype string such as "<f4">, "shape": [..]}`` and a NumPy
scalar as ``{"__npgeneric__": true, "data": <value>, "dtype": ..}``; the reference
implementation writes these keys as msgpack *bin* strings, so both bin and str keys are read.

Decoding is strict, because the peer is on the network: only plain msgpack (maps with str or
bytes keys, arrays, strings, numbers, booleans, nil) and arrays of booleans, integers and
floats are accepted. Extension types, object / structured / complex dtypes, a shape that does
not match the data, and messages over a size limit are refused with a ``POLICY_PROTOCOL`` or
``POLICY_TOO_LARGE`` :class:`~harness_bt.errors.BridgeError`; nothing is ever unpickled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np

from harness_bt.errors import BridgeError
from harness_bt.request_budget import bounded

__all__ = ["DEFAULT_MAX_BYTES", "MAX_NDIM", "pack", "unpack", "unpack_map"]

#: the largest message read by default (a few camera images and a chunk fit many times over)
DEFAULT_MAX_BYTES = 64 << 20
#: the most dimensions an array may have (images are 3, batched images 4)
MAX_NDIM = 8
#: dtype kinds that may travel: boolean, signed and unsigned integers, floating point
ARRAY_KINDS = frozenset("biuf")

_NDARRAY = ("__ndarray__", b"__ndarray__")
_GENERIC = ("__npgeneric__", b"__npgeneric__")


def _refusal(message: str, *, fix: str | None = None) -> BridgeError:
    return BridgeError("POLICY_PROTOCOL", message, fix=fix or (
        "the peer must speak the openpi policy protocol: msgpack values, NumPy arrays as "
        "__ndarray__ maps of bool / int / float data"))


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray | np.generic) and obj.dtype.kind not in ARRAY_KINDS:
        raise _refusal(f"an array of dtype {obj.dtype} cannot be sent",
                       fix="send bool, integer or floating-point arrays")
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": np.ascontiguousarray(obj).tobytes(),
                b"dtype": obj.dtype.str, b"shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise _refusal(f"a {type(obj).__name__} cannot be sent",
                   fix="send dicts, lists, strings, numbers, booleans, None and NumPy arrays")


def pack(value: Any) -> bytes:
    """One message: ``value`` (dicts, lists, str, numbers, None, NumPy arrays) as msgpack."""
    try:
        return msgpack.packb(value, default=_encode, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise _refusal(f"the message cannot be packed: {exc}") from exc


def _field(obj: Mapping[Any, Any], name: str) -> Any:
    for key in (name, name.encode()):
        if key in obj:
            return obj[key]
    raise _refusal(f"an array map has no {name!r} field")


def _dtype(obj: Mapping[Any, Any]) -> np.dtype[Any]:
    spec = _field(obj, "dtype")
    if isinstance(spec, bytes):
        spec = spec.decode("ascii", "replace")
    if not isinstance(spec, str) or len(spec) > 8:
        raise _refusal(f"an array's dtype is {bounded(spec, 40)}, not a NumPy dtype string "
                       "such as '<f4'")
    try:
        dtype = np.dtype(spec)
    except (TypeError, ValueError) as exc:
        raise _refusal(f"an array's dtype {spec!r} is not a NumPy dtype") from exc
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise _refusal(f"an array of dtype {spec!r} is refused: only bool, integer and float "
                       "arrays travel (never objects, which would mean unpickling)")
    return dtype


def _decode(obj: dict[Any, Any]) -> Any:
    if any(key in obj for key in _NDARRAY):
        dtype = _dtype(obj)
        shape = _field(obj, "shape")
        data = _field(obj, "data")
        if (not isinstance(shape, list | tuple) or len(shape) > MAX_NDIM
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                           for n in shape)):
            raise _refusal(f"an array's shape is {bounded(shape, 80)}, not a list of at most "
                           f"{MAX_NDIM} "
                           "non-negative integers")
        if not isinstance(data, bytes):
            raise _refusal(f"an array's data is a {type(data).__name__}, not bytes")
        expected = math.prod(shape) * dtype.itemsize
        if len(data) != expected:
            raise _refusal(f"an array of shape {list(shape)} and dtype {dtype.str} needs "
                           f"{expected} bytes of data, and {len(data)} came")
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    if any(key in obj for key in _GENERIC):
        dtype = _dtype(obj)
        data = _field(obj, "data")
        if isinstance(data, bytes | str | list | dict) or data is None:
            raise _refusal(f"a NumPy scalar's data is a {type(data).__name__}, not a number")
        try:
            return dtype.type(data)
        except (TypeError, ValueError, OverflowError) as exc:
            raise _refusal(f"a NumPy scalar {bounded(data, 40)} does not fit dtype {dtype.str}"
                           ) from exc
    return obj


def _no_extensions(code: int, data: bytes) -> Any:
    raise _refusal(f"a msgpack extension value (type {code}, {len(data)} bytes) is refused")


def unpack(data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """The value of one message, decoded strictly (see the module docstring)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise _refusal(f"a message is a {type(data).__name__}, not binary msgpack")
    if len(data) > max_bytes:
        raise BridgeError("POLICY_TOO_LARGE", f"a message of {len(data)} bytes is over the "
                          f"limit of {max_bytes} bytes",
                          fix="send smaller images or chunks, or raise the limit "
                              "(max_message_bytes) on both sides")
    try:
        return msgpack.unpackb(data if isinstance(data, bytes) else bytes(data),
                               object_hook=_decode, ext_hook=_no_extensions,
                               raw=False, strict_map_key=True, use_list=True)
    except BridgeError:
        raise
    except msgpack.StackError as exc:
        raise _refusal("a message nests maps and arrays deeper than msgpack reads (StackError: "
                       "over 1024 levels)", fix="send a flatter message") from exc
    except msgpack.FormatError as exc:
        raise _refusal("a message is not valid msgpack (FormatError: a byte that starts no "
                       "msgpack value, e.g. the reserved type 0xc1)",
                       fix="send one msgpack value per binary frame") from exc
    except RecursionError as exc:
        raise _refusal("a message nests too deeply to decode (RecursionError)",
                       fix="send a flatter message") from exc
    except (ValueError, TypeError, msgpack.ExtraData) as exc:
        reason = bounded(str(exc), 160) if str(exc) else "no detail from the decoder"
        raise _refusal(f"a message is not valid msgpack ({type(exc).__name__}: {reason})"
                       ) from exc


def unpack_map(data: bytes, what: str, *, max_bytes: int = DEFAULT_MAX_BYTES
               ) -> dict[str, Any]:
    """:func:`unpack` for a message that must be a map with string keys (metadata, an
    observation, an action chunk): ``what`` names it in the error."""
    value = unpack(data, max_bytes=max_bytes)
    if not isinstance(value, dict):
        raise _refusal(f"the {what} is a msgpack {type(value).__name__}, not a map")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(key, bytes):
            try:
                key = key.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _refusal(f"the {what} has a key that is not UTF-8: {bounded(key, 40)}"
                               ) from exc
        out[key] = item
    return out
