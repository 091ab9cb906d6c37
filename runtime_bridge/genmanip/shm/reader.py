"""The client's side of the shared-memory fast path: reading a descriptor from the network.

A descriptor body is a builtins-only pickle (read with ``safe_loads``)::

    {"segment": name, "size": segment bytes, "layout": n, "slot": k, "generation": g,
     "used": bytes used in the slot, "buffers": [(offset, nbytes), ...],
     "tree": the payload with arrays as {"type": "numpy_buffer", "dtype", "shape", "index"}}

Every field is checked before a byte is read: the segment is the session's own, the layout and
the slot's generation are current (else ``SHM_STALE``), offsets and sizes lie inside the slot
(else ``SHM_BAD_DESCRIPTOR``); dtypes and shapes against byte counts are then checked by the
codec as for any array. With ``copy`` (the default) the slot is copied once and the generation
checked again after the copy: a slot rewritten meanwhile is ``SHM_TORN``, never returned.
Without ``copy`` arrays are read-only views on the segment, valid until the server writes that
slot again (after ``slots - 1`` further answers to this session).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.safepickle import safe_loads
from runtime_bridge.genmanip.shm.segment import (
    SLOT_HEADER_BYTES,
    Header,
    MappedSegment,
    check_name,
)

__all__ = ["ShmReader"]

MAX_BUFFERS = 100_000
_KEYS = ("segment", "size", "layout", "slot", "generation", "used", "buffers", "tree")


def _bad(where: str, message: str) -> HttpError:
    return HttpError("SHM_BAD_DESCRIPTOR", f"{where}: {message}", where=where,
                     fix="the descriptor does not describe this session's segment; the client "
                     "stops using shared memory with this server")


def _stale(where: str, message: str) -> HttpError:
    return HttpError("SHM_STALE", f"{where}: {message}", where=where,
                     fix="the slot was rewritten before it was read (the client fell more than "
                     "the ring behind, or the segment changed); the next request renegotiates")


def _int(desc: Mapping[str, Any], key: str, where: str) -> int:
    value = desc[key]
    if type(value) is not int or value < 0:
        raise _bad(where, f"{key!r} is {repr(value)[:40]}, expected a non-negative int")
    return value


class ShmReader:
    """Reads the descriptors of one session's segment ``name`` under ``directory``."""

    def __init__(self, directory: str, name: str, *, copy: bool = True) -> None:
        self.segment = MappedSegment(directory, name)
        self.copy = copy

    @property
    def name(self) -> str:
        return self.segment.name

    def token(self) -> bytes:
        return self.segment.header(f"shm segment {self.name}").token

    def close(self) -> None:
        self.segment.close()

    def read(self, body: bytes | memoryview, *, where: str = "body",
             max_bytes: int | None = codec.DEFAULT_MAX_BODY_BYTES) -> Any:
        """The payload a descriptor body stands for, arrays read from the segment."""
        desc = safe_loads(body, where=where, max_bytes=max_bytes)
        if not isinstance(desc, dict) or any(k not in desc for k in _KEYS):
            got = sorted(map(str, desc)) if isinstance(desc, dict) else type(desc).__name__
            raise _bad(where, f"expected a dict with {', '.join(_KEYS)}; got {got}")
        name = check_name(desc["segment"], where)
        if name != self.name:
            raise _bad(where, f"segment {name!r} is not this session's ({self.name!r})")
        size, layout, slot, generation, used = (
            _int(desc, k, where) for k in ("size", "layout", "slot", "generation", "used"))
        if size > len(self.segment):
            self.segment.remap(size, where)
        header = self.segment.header(where)
        if header.size > len(self.segment):
            self.segment.remap(header.size, where)
        if layout != header.layout or layout % 2:
            raise _stale(where, f"layout {layout} is not the segment's current layout "
                         f"{header.layout} (the slots grew)")
        if slot >= header.slots:
            raise _bad(where, f"slot {slot} is out of range; the segment has {header.slots}")
        if used > header.capacity:
            raise _bad(where, f"{used} bytes used do not fit a slot of {header.capacity} bytes")
        if max_bytes is not None and used > max_bytes:
            raise HttpError("BODY_TOO_LARGE", f"{where}: {used} bytes of arrays, over the limit "
                            f"of {max_bytes} bytes", http_status=413, where=where,
                            fix="raise the client's max_response_bytes or send smaller images",
                            details={"size": used, "limit": max_bytes})
        views = self._extents(desc["buffers"], used, where)
        if generation == 0 or generation % 2:
            raise _bad(where, f"generation {generation} is not a written slot's (even, > 0)")
        self._check(header, slot, generation, where, torn=False)
        base = header.slot_start(slot) + SLOT_HEADER_BYTES
        if self.copy:
            raw = memoryview(self._copy(base, used))
            self._check(header, slot, generation, where, torn=True)
        else:
            raw = memoryview(self.segment.buffer).toreadonly()[base:base + used]
        buffers = [raw[offset:offset + n] for offset, n in views]
        return codec.decode_tree(desc["tree"], buffers=buffers, where=where)

    def _copy(self, start: int, nbytes: int) -> bytes:
        return self.segment.buffer[start:start + nbytes]

    @staticmethod
    def _extents(buffers: Any, used: int, where: str) -> list[tuple[int, int]]:
        if not isinstance(buffers, (list, tuple)) or len(buffers) > MAX_BUFFERS:
            raise _bad(where, f"'buffers' is {repr(buffers)[:60]}, expected a list of at most "
                       f"{MAX_BUFFERS} (offset, nbytes) pairs")
        out = []
        for i, pair in enumerate(buffers):
            if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                    or not all(type(v) is int and v >= 0 for v in pair)):
                raise _bad(where, f"buffer {i} is {repr(pair)[:60]}, expected (offset, nbytes) "
                           "non-negative ints")
            offset, n = pair
            if offset + n > used:
                raise _bad(where, f"buffer {i} at offset {offset} of {n} bytes ends past the "
                           f"{used} bytes used in the slot")
            out.append((offset, n))
        return out

    def _check(self, header: Header, slot: int, generation: int, where: str, *,
               torn: bool) -> None:
        seq, _ = self.segment.slot_state(header, slot)
        layout = self.segment.layout()
        if layout == header.layout and seq == generation:
            return
        what = (f"the segment's layout changed ({header.layout} -> {layout})"
                if layout != header.layout else
                f"slot {slot} holds generation {seq}{' (being written)' if seq % 2 else ''}, "
                f"the descriptor names {generation}")
        if torn:
            raise HttpError("SHM_TORN", f"{where}: {what} while it was copied; the copy is "
                            "refused", where=where,
                            fix="the client fell behind the ring; the next request renegotiates")
        raise _stale(where, what)
