"""Sending a message's frames on the hot path.

``Socket.send_multipart`` combines its flags through ZeroMQ's ``Flag`` enum for every frame,
which costs more than sending a small frame. :func:`send_frames` sends with plain int flags,
copies small frames and hands large ones (arrays) to ZeroMQ without a copy, as
``send_multipart(copy=False)`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

import zmq

__all__ = ["send_frames"]

_SNDMORE = int(zmq.SNDMORE)
_COPY_BELOW = zmq.COPY_THRESHOLD


def send_frames(sock: zmq.Socket, frames: Sequence[bytes | memoryview]) -> None:
    """Send ``frames`` (bytes or memoryviews, as :func:`~runtime_bridge.zmq.wire.encode` makes
    them) as one multipart message."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        sock.send(frame, _SNDMORE if i < last else 0, copy=len(frame) < _COPY_BELOW)
