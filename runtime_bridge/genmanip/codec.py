"""The GenManip wire encodings, both directions.

* **Compatible** (the default, what upstream GenManip speaks): pickle protocol 5 of a tree in
  which every numpy array is a plain dict ``{"type": "numpy_array", "dtype", "shape", "data":
  base64}``. Media type ``application/octet-stream``.
* **Shared memory** (the same-host harness-bt fast path, negotiated per session, see
  :mod:`runtime_bridge.genmanip.shm`): the arrays go to a shared-memory segment and the body is
  a small descriptor. Media type ``application/x-harness-bt-shm``.
* **Frames** (the harness-bt fast path, negotiated with ``Accept``): a small header, the same
  tree pickled with arrays replaced by ``{"type": "numpy_buffer", "dtype", "shape", "index"}``,
  then the raw C-order bytes of each array, 64-byte aligned. No base64, and the reader wraps the
  buffers without copying them. Media type ``application/x-harness-bt-frames``.

Both are read with :func:`~runtime_bridge.genmanip.safepickle.safe_loads`, which refuses every
global, and every array dict is checked (dtype from an allow-list, shape against byte count).
"""

from __future__ import annotations

import base64
import binascii
import math
import pickle
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness_bt.request_budget import RequestBudget, bounded
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.safepickle import safe_loads

__all__ = [
    "ALLOWED_DTYPES",
    "COMPAT_MEDIA_TYPE",
    "DEFAULT_MAX_BODY_BYTES",
    "FRAMES_MEDIA_TYPE",
    "SHM_MEDIA_TYPE",
    "accepts",
    "decode",
    "decode_tree",
    "dumps",
    "dumps_frames",
    "encode_tree",
    "loads",
    "loads_frames",
    "wants_frames",
]

COMPAT_MEDIA_TYPE = "application/octet-stream"
FRAMES_MEDIA_TYPE = "application/x-harness-bt-frames"
SHM_MEDIA_TYPE = "application/x-harness-bt-shm"
DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024
ALLOWED_DTYPES = frozenset(
    ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
     "float16", "float32", "float64"]
)
MAX_NODES = 1_000_000  # shared references can make a small pickle a huge tree
MAX_NDIM = 8

_MAGIC = b"HBTF\x01\x00\x00\x00"
_HEAD = struct.Struct("<8sII")  # magic, pickle length, buffer count
_ALIGN = 64


def _norm_dtype(array: np.ndarray, where: str) -> str:
    name = array.dtype.name
    if array.dtype.byteorder == ">":
        raise HttpError("BAD_ARRAY", f"{where}: big-endian arrays are not sent", where=where,
                        http_status=500, fix="convert with .astype(dtype.newbyteorder('<'))")
    if name not in ALLOWED_DTYPES:
        raise HttpError(
            "BAD_ARRAY", f"{where}: dtype {name!r} cannot be sent; allowed: "
            f"{', '.join(sorted(ALLOWED_DTYPES))}", where=where, http_status=500,
            fix="convert the array to one of the allowed dtypes",
        )
    return name


def encode_tree(obj: Any, *, frames: list[memoryview] | None = None, where: str = "$") -> Any:
    """Replace every numpy array (and numpy scalar) in ``obj`` by builtins.

    With ``frames`` None arrays become base64 dicts (compatible); otherwise their bytes are
    appended to ``frames`` and the tree keeps an index (fast path).
    """
    if isinstance(obj, np.ndarray):
        dtype = _norm_dtype(obj, where)
        array = obj if obj.flags.c_contiguous else obj.copy(order="C")
        if frames is None:
            return {"type": "numpy_array", "dtype": dtype, "shape": tuple(array.shape),
                    "data": base64.b64encode(array.data).decode("ascii")}
        frames.append(memoryview(array.data).cast("B") if array.size else memoryview(b""))
        return {"type": "numpy_buffer", "dtype": dtype, "shape": tuple(array.shape),
                "index": len(frames) - 1}
    if isinstance(obj, dict):
        return {k: encode_tree(v, frames=frames, where=f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(encode_tree(v, frames=frames, where=f"{where}[{i}]")
                     for i, v in enumerate(obj))
    if isinstance(obj, list):
        return [encode_tree(v, frames=frames, where=f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


class _Decoder:
    def __init__(self, buffers: list[memoryview] | None) -> None:
        self.buffers = buffers
        self.nodes = 0

    def visit(self, obj: Any, where: str) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise HttpError("TOO_MANY_NODES", f"the message expands to more than {MAX_NODES} "
                            "values (shared references?)", where=where,
                            fix="send each value once; do not repeat references")
        if isinstance(obj, dict):
            kind = obj.get("type")
            if kind == "numpy_array" and "data" in obj:
                return self.array_b64(obj, where)
            if kind == "numpy_buffer" and "index" in obj:
                return self.array_frame(obj, where)
            return {k: self.visit(v, f"{where}[{bounded(k, 40)}]") for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.visit(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return tuple(self.visit(v, f"{where}[{i}]") for i, v in enumerate(obj))
        return obj

    @staticmethod
    def header(obj: Mapping[str, Any], where: str) -> tuple[np.dtype, tuple[int, ...], int]:
        dtype_name, shape = obj.get("dtype"), obj.get("shape")
        if not isinstance(dtype_name, str) or dtype_name not in ALLOWED_DTYPES:
            raise HttpError("BAD_ARRAY", f"{where}: dtype {bounded(dtype_name, 40)} is not "
                            "allowed; "
                            f"allowed: {', '.join(sorted(ALLOWED_DTYPES))}", where=where,
                            fix="send arrays in one of the allowed dtypes")
        if (not isinstance(shape, (list, tuple)) or len(shape) > MAX_NDIM
                or not all(type(n) is int and n >= 0 for n in shape)):
            raise HttpError("BAD_ARRAY", f"{where}: shape {bounded(shape, 80)} is not a tuple "
                            "of at most "
                            f"{MAX_NDIM} non-negative ints", where=where,
                            fix="send the array's shape as a tuple of ints")
        dtype = np.dtype(dtype_name).newbyteorder("<")
        nbytes = math.prod(shape) * dtype.itemsize
        return dtype, tuple(shape), nbytes

    def array_b64(self, obj: Mapping[str, Any], where: str) -> np.ndarray:
        dtype, shape, nbytes = self.header(obj, where)
        data = obj["data"]
        if not isinstance(data, (str, bytes)):
            raise HttpError("BAD_ARRAY", f"{where}: 'data' is a {type(data).__name__}, expected "
                            "base64 text", where=where, fix="base64-encode the array bytes")
        if len(data) > 4 * (nbytes // 3 + 1) + 4:
            raise HttpError("BAD_ARRAY", f"{where}: {len(data)} base64 characters for {nbytes} "
                            f"bytes of shape {shape}", where=where,
                            fix="send exactly the array's C-order bytes")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise HttpError("BAD_ARRAY", f"{where}: 'data' is not valid base64 ({exc})",
                            where=where, fix="base64-encode the array bytes") from None
        if len(raw) != nbytes:
            raise HttpError("BAD_ARRAY", f"{where}: {len(raw)} bytes do not fill shape {shape} "
                            f"of {dtype.name} ({nbytes} bytes)", where=where,
                            fix="send exactly the array's C-order bytes")
        return np.frombuffer(raw, dtype=dtype).reshape(shape)

    def array_frame(self, obj: Mapping[str, Any], where: str) -> np.ndarray:
        dtype, shape, nbytes = self.header(obj, where)
        index = obj["index"]
        if self.buffers is None or not isinstance(index, int) or not 0 <= index < len(self.buffers):
            count = 0 if self.buffers is None else len(self.buffers)
            raise HttpError("BAD_ARRAY", f"{where}: buffer index {bounded(index, 40)} does "
                            "not name one of "
                            f"the {count} buffers", where=where,
                            fix="numpy_buffer dicts belong in frames messages only")
        buf = self.buffers[index]
        if len(buf) != nbytes:
            raise HttpError("BAD_ARRAY", f"{where}: buffer {index} has {len(buf)} bytes, shape "
                            f"{shape} of {dtype.name} needs {nbytes}", where=where,
                            fix="send exactly the array's C-order bytes")
        return np.frombuffer(buf, dtype=dtype).reshape(shape)


def decode_tree(tree: Any, *, buffers: list[memoryview] | None = None, where: str = "$") -> Any:
    """Turn array dicts in ``tree`` back into (read-only) numpy arrays, checking each one."""
    try:
        return _Decoder(buffers).visit(tree, where)
    except RecursionError:
        raise HttpError("PICKLE_TOO_DEEP", f"{where}: containers nested too deeply",
                        where=where, fix="send a flatter structure") from None


def dumps(obj: Any) -> bytes:
    """The compatible encoding (what upstream GenManip sends and reads)."""
    return pickle.dumps(encode_tree(obj), protocol=5)


def loads(data: bytes | memoryview, *, where: str = "body",
          max_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
          budget: RequestBudget | None = None) -> Any:
    """Read the compatible encoding safely (no globals; arrays checked; with ``budget``, the
    server's stricter reader and limits)."""
    return decode_tree(safe_loads(data, where=where, max_bytes=max_bytes, budget=budget),
                       where=where)


def dumps_frames(obj: Any) -> bytes:
    """The fast path: header, pickled tree, then raw aligned array buffers."""
    frames: list[memoryview] = []
    tree = pickle.dumps(encode_tree(obj, frames=frames), protocol=5)
    lengths = [len(f) for f in frames]
    head = _HEAD.pack(_MAGIC, len(tree), len(frames)) + struct.pack(f"<{len(frames)}Q", *lengths)
    parts: list[bytes | memoryview] = [head, tree]
    offset = len(head) + len(tree)
    for frame in frames:
        pad = -offset % _ALIGN
        if pad:
            parts.append(b"\0" * pad)
        parts.append(frame)
        offset += pad + len(frame)
    return b"".join(parts)


def loads_frames(data: bytes | memoryview, *, where: str = "body",
                 max_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
                 budget: RequestBudget | None = None) -> Any:
    """Read the fast-path encoding safely; arrays are views on ``data`` (no copy)."""
    view = memoryview(data).cast("B")
    if max_bytes is not None and len(view) > max_bytes:
        raise HttpError("BODY_TOO_LARGE", f"{where} is {len(view)} bytes, over the limit of "
                        f"{max_bytes} bytes", http_status=413, where=where,
                        fix="send a smaller message or raise the size limit",
                        details={"size": len(view), "limit": max_bytes})
    if len(view) < _HEAD.size or bytes(view[:8]) != _MAGIC:
        raise HttpError("FRAMES_UNREADABLE", f"{where} does not start with the harness-bt frames "
                        "header", where=where,
                        fix=f"send {FRAMES_MEDIA_TYPE} bodies made by dumps_frames, or use "
                        f"{COMPAT_MEDIA_TYPE}")
    _, tree_len, count = _HEAD.unpack_from(view, 0)
    lengths_end = _HEAD.size + 8 * count
    if count > 100_000 or lengths_end > len(view):
        raise HttpError("FRAMES_UNREADABLE", f"{where}: header announces {count} buffers, more "
                        "than the body holds", where=where, fix="send a complete message")
    lengths = struct.unpack_from(f"<{count}Q", view, _HEAD.size)
    offset = lengths_end + tree_len
    if offset > len(view):
        raise HttpError("FRAMES_UNREADABLE", f"{where}: truncated ({len(view)} bytes, the tree "
                        f"alone ends at {offset})", where=where, fix="send a complete message")
    tree = safe_loads(view[lengths_end:offset], where=where, budget=budget)
    buffers = []
    for n in lengths:
        offset += -offset % _ALIGN
        if offset + n > len(view):
            raise HttpError("FRAMES_UNREADABLE", f"{where}: truncated ({len(view)} bytes, buffer "
                            f"ends at {offset + n})", where=where, fix="send a complete message")
        buffers.append(view[offset:offset + n])
        offset += n
    return decode_tree(tree, buffers=buffers, where=where)


def decode(data: bytes | memoryview, media_type: str | None, *, where: str = "body",
           max_bytes: int | None = DEFAULT_MAX_BODY_BYTES,
           budget: RequestBudget | None = None) -> Any:
    """Read a body in whichever encoding its ``Content-Type`` names (compatible by default)."""
    if media_type and media_type.split(";")[0].strip().lower() == FRAMES_MEDIA_TYPE:
        return loads_frames(data, where=where, max_bytes=max_bytes, budget=budget)
    return loads(data, where=where, max_bytes=max_bytes, budget=budget)


def accepts(accept: str | None, media_type: str) -> bool:
    """True when an ``Accept`` header names ``media_type`` with a non-zero quality."""
    if not accept:
        return False
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        if parts[0].lower() != media_type:
            continue
        for param in parts[1:]:
            if param.startswith("q="):
                try:
                    return float(param[2:]) > 0
                except ValueError:
                    return False
        return True
    return False


def wants_frames(accept: str | None) -> bool:
    """True when an ``Accept`` header asks for the frames fast path (with a non-zero quality)."""
    return accepts(accept, FRAMES_MEDIA_TYPE)
