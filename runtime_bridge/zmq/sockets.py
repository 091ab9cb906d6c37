"""Sending and receiving a message's frames on the hot path.

pyzmq's ``send_multipart`` / ``recv_multipart`` and ``getsockopt`` turn their flags and option
numbers into Python enums on every call (``recv_multipart`` asks ``RCVMORE`` that way after each
frame), which costs more than moving a small frame. These helpers use plain ints and read a
received frame's ``more`` flag from the frame itself.

Copies, measured on this machine (2 cores, inproc, pyzmq 27.3 / libzmq 4.3.5):

- **receiving**: a copied small frame is cheaper than a zero-copy one (300 B: 0.46 against
  0.88 us, the ``Frame`` object costs more than the copy); from 64 kB on the copy loses (147
  kB: about 100 us against 3.5, 1 MiB: 1.7 ms against 45 us). Frames up to
  :data:`RECV_COPY_BELOW` arrive as ``bytes``, larger ones as read-only ``memoryview`` s of
  ZeroMQ's own buffer (arrays decoded from them are views of it, nothing is copied);
- **sending**: ``copy=False`` hands ZeroMQ the Python buffer and a thread of pyzmq's releases it
  later; below about 256 kB that bookkeeping costs more than the copy (64 kB: 1.6 against 2.9
  us; 147 kB: 2.4 against 9.4), above it the copy loses (512 kB: 7.8 against 2.9). Frames from
  :data:`SEND_COPY_BELOW` on go without a copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import zmq

__all__ = ["RECV_COPY_BELOW", "SEND_COPY_BELOW", "readable", "recv_frames", "send_frames"]

_SNDMORE = int(zmq.SNDMORE)
_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)
#: frames smaller than this are sent as copies (see the module docstring)
SEND_COPY_BELOW = 256 << 10
#: received frames smaller than this are copied into ``bytes`` (see the module docstring)
RECV_COPY_BELOW = 64 << 10


def send_frames(sock: zmq.Socket, frames: Sequence[bytes | memoryview]) -> None:
    """Send ``frames`` (bytes or memoryviews, as :func:`~runtime_bridge.zmq.wire.encode` makes
    them) as one multipart message."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        sock.send(frame, _SNDMORE if i < last else 0, copy=len(frame) < SEND_COPY_BELOW)


def recv_frames(sock: zmq.Socket, flags: int = 0) -> list[bytes | memoryview]:
    """Receive one multipart message (raises ``zmq.Again`` as ``recv`` does): small frames as
    ``bytes``, large ones as read-only memoryviews (see the module docstring)."""
    frame = sock.recv(flags, copy=False)
    out: list[bytes | memoryview] = [
        frame.bytes if len(frame) < RECV_COPY_BELOW else frame.buffer.toreadonly()]
    while frame.more:  # the rest of a message has arrived with its first frame
        frame = sock.recv(flags, copy=False)
        out.append(frame.bytes if len(frame) < RECV_COPY_BELOW
                   else frame.buffer.toreadonly())
    return out


def readable(sock: zmq.Socket) -> bool:
    """Whether a message waits on ``sock`` (its ``EVENTS`` option, read without enums)."""
    return bool(cast(int, sock.get(_EVENTS)) & _POLLIN)
