"""The shared-memory segment of one fast-path session: a file under ``/dev/shm``, mapped by the
server read-write and by the client read-only.

Layout (little-endian)::

    0      segment header (HEADER_BYTES): magic, version, slots, stride, layout, pid, token
    4096   slot 0: slot header (SLOT_HEADER_BYTES: seq, used), then the slot's data
    +stride slot 1 ...

* ``seq`` is the slot's generation counter, a seqlock: odd while the server writes the slot,
  even once written. Generations grow over the whole segment and are never reused, so a
  descriptor naming generation ``g`` matches its slot only until the slot is written again.
* ``layout`` is the same for the layout: odd while the server grows the slots, and a new even
  value afterwards. Slots only grow; the file only grows (never truncated while mapped).
* ``token`` is random; the client proves it mapped the segment (so it is on the same host, as
  the same user: the file is mode 0600) by sending it back.

Names are ``<prefix>-<pid>-<session>``; a server cleans the stale segments of its prefix (pid
gone, or its own pid but no longer live) when it starts.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import re
import stat
import struct
import threading
from dataclasses import dataclass

from harness_bt.errors import BridgeError
from runtime_bridge.genmanip.errors import HttpError

__all__ = [
    "DEFAULT_DIRECTORY",
    "HEADER_BYTES",
    "SLOT_HEADER_BYTES",
    "Header",
    "MappedSegment",
    "WritableSegment",
    "check_name",
    "clean_stale",
]

log = logging.getLogger(__name__)

DEFAULT_DIRECTORY = "/dev/shm"
MAGIC = b"HBTSHM\x01\x00"
VERSION = 1
HEADER_BYTES = 4096
SLOT_HEADER_BYTES = 64
PAGE = 4096
TOKEN_BYTES = 16
MAX_SLOTS = 64
_HEAD = struct.Struct("<8sIIQQQ16s")  # magic, version, slots, stride, layout, pid, token
_SLOT = struct.Struct("<QQ")  # seq, used bytes
_U64 = struct.Struct("<Q")
_LAYOUT_AT = 24  # offset of ``layout`` in _HEAD
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_PREFIX_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{0,63}")

# segments this process serves right now (the others of its pid are stale)
_LIVE: set[str] = set()
_LIVE_GUARD = threading.Lock()


def check_name(name: object, where: str) -> str:
    """A segment name from the network: one path component, letters, digits, ``-`` and ``_``."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise HttpError("SHM_BAD_DESCRIPTOR", f"{where}: segment name {str(name)[:80]!r} is not "
                        f"a plain name matching {NAME_PATTERN.pattern}", where=where,
                        fix="the server names segments <prefix>-<pid>-<session>; do not send paths")
    return name


def check_prefix(prefix: str) -> str:
    if not _PREFIX_PATTERN.fullmatch(prefix):
        raise BridgeError("INVALID_CONFIG", f"shm prefix {prefix!r} must match "
                          f"{_PREFIX_PATTERN.pattern} (no '-': it separates the prefix from the "
                          "pid)", fix="use letters and digits only")
    return prefix


class _Slots:
    """What ``slots`` slots of ``stride`` bytes each make."""

    __slots__ = ()
    slots: int
    stride: int

    @property
    def capacity(self) -> int:
        """Data bytes per slot."""
        return self.stride - SLOT_HEADER_BYTES

    @property
    def size(self) -> int:
        """Bytes of the whole segment."""
        return HEADER_BYTES + self.slots * self.stride


@dataclass(frozen=True, slots=True)
class Header(_Slots):
    """The segment header as read at one instant."""

    slots: int
    stride: int
    layout: int
    pid: int
    token: bytes

    def slot_start(self, slot: int) -> int:
        return HEADER_BYTES + slot * self.stride


def _read_header(buf: mmap.mmap, where: str) -> Header:
    if len(buf) < HEADER_BYTES:
        raise HttpError("SHM_UNAVAILABLE", f"{where}: segment of {len(buf)} bytes is smaller "
                        "than its header", where=where, fix="the segment is not ours; fall back")
    magic, version, slots, stride, layout, pid, token = _HEAD.unpack_from(buf, 0)
    if magic != MAGIC or version != VERSION:
        raise HttpError("SHM_UNAVAILABLE", f"{where}: not a harness-bt segment (magic "
                        f"{magic!r}, version {version})", where=where,
                        fix="the name belongs to something else; fall back")
    return Header(slots, stride, layout, pid, token)


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


class WritableSegment(_Slots):
    """The server's side: creates the file (mode 0600, never an existing one), grows the slots,
    writes them under the seqlock, unlinks the file on :meth:`close`."""

    def __init__(self, directory: str, name: str, slots: int, token: bytes) -> None:
        if not 1 <= slots <= MAX_SLOTS:
            raise BridgeError("INVALID_CONFIG", f"slots={slots} must be within 1..{MAX_SLOTS}",
                              fix=f"give 1 to {MAX_SLOTS} slots")
        self.path = os.path.join(directory, check_name(name, "segment"))
        self.name = name
        self.slots = slots
        self.stride = SLOT_HEADER_BYTES  # no data capacity until the first write
        self.layout = 0
        self.generation = 0
        self._next = 0
        self._token = token
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with _LIVE_GUARD:
                _LIVE.add(name)
            os.ftruncate(self._fd, HEADER_BYTES + slots * self.stride)
            self._map = mmap.mmap(self._fd, HEADER_BYTES + slots * self.stride)
            _HEAD.pack_into(self._map, 0, MAGIC, VERSION, slots, self.stride, self.layout,
                            os.getpid(), token)
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def ensure(self, nbytes: int, max_bytes: int) -> bool:
        """Grow the slots to hold ``nbytes`` (with a quarter to spare); False when that would
        make the segment larger than ``max_bytes``. Invalidates every slot written before."""
        if nbytes <= self.capacity:
            return True
        stride = _round_up(SLOT_HEADER_BYTES + nbytes + nbytes // 4, PAGE)
        if HEADER_BYTES + self.slots * stride > max_bytes:
            return False
        self.layout += 1  # odd: a reader that looks now sees a layout change
        _U64.pack_into(self._map, _LAYOUT_AT, self.layout)
        size = HEADER_BYTES + self.slots * stride
        os.ftruncate(self._fd, size)  # grows only: a client's smaller mapping stays valid
        self._map.resize(size)
        self.stride = stride
        for slot in range(self.slots):  # old slot headers are gone: no descriptor matches
            _SLOT.pack_into(self._map, HEADER_BYTES + slot * stride, 0, 0)
        self.layout += 1
        _HEAD.pack_into(self._map, 0, MAGIC, VERSION, self.slots, stride, self.layout,
                        os.getpid(), self._token)
        return True

    def write(self, buffers: list[memoryview], offsets: list[int], used: int) -> tuple[int, int]:
        """Write ``buffers`` at ``offsets`` of the next slot; returns ``(slot, generation)``."""
        slot = self._next
        self._next = (slot + 1) % self.slots
        start = HEADER_BYTES + slot * self.stride
        self.generation += 2
        _SLOT.pack_into(self._map, start, self.generation - 1, used)  # odd: being written
        data = start + SLOT_HEADER_BYTES
        for buf, offset in zip(buffers, offsets, strict=True):
            if len(buf):
                self._map[data + offset:data + offset + len(buf)] = buf
        _U64.pack_into(self._map, start, self.generation)
        return slot, self.generation

    def close(self) -> None:
        """Unmap, close and unlink (idempotent)."""
        m = getattr(self, "_map", None)
        if m is not None:
            with contextlib.suppress(BufferError):
                m.close()
            self._map = None  # type: ignore[assignment]
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        with _LIVE_GUARD:
            _LIVE.discard(self.name)


class MappedSegment:
    """The client's side: opens an existing segment read-only by name (no paths from the
    network), remaps when the server has grown it."""

    def __init__(self, directory: str, name: str) -> None:
        self.name = check_name(name, "segment")
        self.path = os.path.join(directory, name)
        where = f"shm segment {self.path}"
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            raise HttpError("SHM_UNAVAILABLE", f"{where}: cannot open ({exc.strerror}); the "
                            "server is on another host, in another container, another user's, "
                            "or the segment vanished", where=where,
                            fix="nothing to do: the client falls back to the binary fast path"
                            ) from None
        self._retired: list[mmap.mmap] = []
        try:
            info = os.fstat(self._fd)
            if not stat.S_ISREG(info.st_mode):
                raise HttpError("SHM_UNAVAILABLE", f"{where}: not a regular file", where=where,
                                fix="the name belongs to something else; fall back")
            if info.st_size < HEADER_BYTES:
                raise HttpError("SHM_UNAVAILABLE", f"{where}: segment of {info.st_size} bytes is "
                                "smaller than its header", where=where,
                                fix="the name belongs to something else; fall back")
            self._map = mmap.mmap(self._fd, info.st_size, prot=mmap.PROT_READ)
            self.header(where)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self._map)

    @property
    def buffer(self) -> mmap.mmap:
        return self._map

    def header(self, where: str) -> Header:
        return _read_header(self._map, where)

    def slot_state(self, header: Header, slot: int) -> tuple[int, int]:
        """``(seq, used)`` of ``slot`` under ``header``'s layout (bounds checked by the caller)."""
        seq, used = _SLOT.unpack_from(self._map, header.slot_start(slot))
        return seq, used

    def layout(self) -> int:
        return int(_U64.unpack_from(self._map, _LAYOUT_AT)[0])

    def remap(self, size: int, where: str) -> None:
        """Map at least ``size`` bytes (the server grew the file)."""
        actual = os.fstat(self._fd).st_size
        if actual < size:
            raise HttpError("SHM_STALE", f"{where}: the segment has {actual} bytes, the "
                            f"descriptor needs {size}", where=where,
                            fix="the segment changed under the read; the next step re-negotiates")
        old, self._map = self._map, mmap.mmap(self._fd, actual, prot=mmap.PROT_READ)
        try:
            old.close()
        except BufferError:  # views handed out still use it; it goes with them
            self._retired.append(old)

    def close(self) -> None:
        for m in [getattr(self, "_map", None), *getattr(self, "_retired", [])]:
            if m is not None:
                with contextlib.suppress(BufferError):
                    m.close()
        self._retired = []
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def clean_stale(directory: str, prefix: str) -> list[str]:
    """Unlink the segments ``<prefix>-<pid>-*`` left by a process that is gone (or by this one,
    not live any more), after checking each is a harness-bt segment. Returns their names."""
    check_prefix(prefix)
    pattern = re.compile(rf"{re.escape(prefix)}-(\d+)-[0-9a-f]+")
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    me = os.getpid()
    for name in names:
        match = pattern.fullmatch(name)
        if not match:
            continue
        pid = int(match.group(1))
        with _LIVE_GUARD:
            live = name in _LIVE
        if live or (pid != me and _pid_alive(pid)):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as f:
                magic = f.read(len(MAGIC))
            if magic != MAGIC:
                continue
            os.unlink(path)
        except OSError:
            continue
        log.info("removed stale shared-memory segment %s (pid %d gone)", path, pid)
        removed.append(name)
    return removed
