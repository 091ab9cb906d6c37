"""Hostile inputs for the abuse suites, built opcode by opcode (building them as Python values
first would hang the test itself: hashing or printing a tuple of shared references walks
2**depth values), and the measures the suites check them by."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Iterator

PROTO = b"\x80\x04"
STOP = b"."
EMPTY_DICT = b"}"
EMPTY_LIST = b"]"
MEMOIZE = b"\x94"
TUPLE1 = b"\x85"
TUPLE2 = b"\x86"
SETITEM = b"s"
APPEND = b"a"


def text(value: str) -> bytes:
    data = value.encode()
    return b"\x8c" + bytes([len(data)]) + data  # SHORT_BINUNICODE


def get(index: int) -> bytes:
    return b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)


def shared_tuple(depth: int, memo_start: int = 0) -> tuple[bytes, int]:
    """Opcodes pushing ``t_depth`` where ``t_0 = ('w',)`` and ``t_k = (t_{k-1}, t_{k-1})``:
    2**depth leaves, 4 bytes a level. Returns the opcodes and the next free memo index."""
    ops = text("w") + TUPLE1 + MEMOIZE
    index = memo_start
    for _ in range(depth):
        ops += get(index) + TUPLE2 + MEMOIZE  # the top of the stack and its memo copy
        index += 1
    return ops, index + 1


def reset_with_shared_tuple(depth: int) -> bytes:
    """A ``/reset`` body ``{'worker_ids': t_depth}``: about 200 bytes at depth 26."""
    key = text("worker_ids") + MEMOIZE
    tup, _ = shared_tuple(depth, memo_start=2)
    return PROTO + EMPTY_DICT + MEMOIZE + key + tup + SETITEM + STOP


def dict_keyed_by_shared_tuple(depth: int) -> bytes:
    """``{t_depth: 1}``: building it hashes the key, 2**depth values, unless refused."""
    tup, _ = shared_tuple(depth, memo_start=1)
    return PROTO + EMPTY_DICT + MEMOIZE + tup + b"K\x01" + SETITEM + STOP


def one_string_many_times(refs: int, size: int) -> bytes:
    """``{'worker_ids': [s] * refs}`` with one string ``s`` of ``size`` bytes, referenced
    ``refs`` times (memo refs: 2 to 5 bytes each on the wire)."""
    body = PROTO + EMPTY_DICT + MEMOIZE + text("worker_ids") + MEMOIZE + EMPTY_LIST + MEMOIZE
    body += b"X" + struct.pack("<I", size) + b"s" * size + MEMOIZE + APPEND  # BINUNICODE, memo 3
    body += b"(" + get(3) * (refs - 1) + b"e"  # MARK ... APPENDS
    return body + SETITEM + STOP


def nested_lists(depth: int) -> bytes:
    """``[[[...]]]`` ``depth`` deep."""
    return PROTO + EMPTY_LIST * depth + APPEND * (depth - 1) + STOP


def self_containing_list() -> bytes:
    """``l = []; l.append(l)``."""
    return PROTO + EMPTY_LIST + MEMOIZE + get(0) + APPEND + STOP


def huge_declared_string() -> bytes:
    """A string announcing 2**31 bytes, followed by 8."""
    return PROTO + b"X" + struct.pack("<I", 2**31) + b"8 bytes!" + STOP


def global_call() -> bytes:
    """``os.system('true')``, the classic."""
    return PROTO + text("os") + text("system") + b"\x93" + text("true") + TUPLE1 + b"R" + STOP


def rss_bytes() -> int:
    """This process's resident memory."""
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def raw(host: str, port: int, timeout_s: float = 10.0) -> Iterator[socket.socket]:
    """A plain TCP connection (closed at the end)."""
    sock = socket.create_connection((host, port), timeout=timeout_s)
    try:
        yield sock
    finally:
        sock.close()


def read_status(sock: socket.socket) -> int:
    """The status code of the HTTP answer on ``sock`` (0 when it closed without one)."""
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return 0
        data += chunk
    return int(data.split(b" ", 2)[1])
