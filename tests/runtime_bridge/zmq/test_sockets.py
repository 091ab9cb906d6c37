"""The hot path's frame helpers: what arrives as bytes and what as a read-only view, the
``more`` flag read from the frame itself, the readable check, and a message with a large array
decoded from views without a copy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import zmq

from runtime_bridge.zmq.sockets import (
    RECV_COPY_BELOW,
    SEND_COPY_BELOW,
    readable,
    recv_frames,
    send_frames,
)
from runtime_bridge.zmq.wire import Message, MessageType, decode, encode


@pytest.fixture
def pair(raw_socket: Callable[..., zmq.Socket]) -> tuple[zmq.Socket, zmq.Socket]:
    a = raw_socket(zmq.PAIR)
    endpoint = f"inproc://sockets-{id(a)}"
    a.bind(endpoint)
    return a, raw_socket(zmq.PAIR, endpoint)


def test_small_frames_arrive_as_bytes_large_ones_as_read_only_views(pair):
    a, b = pair
    big = bytes(range(256)) * (RECV_COPY_BELOW // 256 + 1)  # just past the threshold
    frames = [b"head", b"", big, bytes(RECV_COPY_BELOW - 1)]
    assert not readable(b)
    send_frames(a, frames)
    b.poll(5000)
    assert readable(b)
    got = recv_frames(b)
    assert [type(f) for f in got] == [bytes, bytes, memoryview, bytes]
    assert [bytes(f) for f in got] == frames
    assert got[2].readonly
    assert not readable(b)  # one message, all of it


def test_messages_stay_apart_and_a_receive_without_a_message_raises_again(pair):
    a, b = pair
    send_frames(a, [b"one"])
    send_frames(a, [b"two", b"2"])
    b.poll(5000)
    assert recv_frames(b) == [b"one"]
    b.poll(5000)
    assert recv_frames(b) == [b"two", b"2"]
    with pytest.raises(zmq.Again):
        recv_frames(b, zmq.NOBLOCK)


class _Recording:
    """A socket that keeps what ``send`` was asked to do (a real zero-copy send would start
    pyzmq's garbage-collector thread, which lives as long as the process)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, bool]] = []

    def send(self, data, flags=0, copy=True):  # type: ignore[no-untyped-def]
        self.sent.append((len(data), flags, copy))


def test_only_frames_past_the_send_threshold_go_without_a_copy():
    sock = _Recording()
    big = memoryview(bytes(SEND_COPY_BELOW))
    send_frames(sock, [b"h", bytes(SEND_COPY_BELOW - 1), big])  # type: ignore[arg-type]
    assert sock.sent == [(1, zmq.SNDMORE, True), (SEND_COPY_BELOW - 1, zmq.SNDMORE, True),
                         (SEND_COPY_BELOW, 0, False)]


def test_a_large_array_decodes_from_the_received_view_read_only(pair):
    a, b = pair
    image = np.arange(256 * 192 * 3, dtype=np.uint8).reshape(256, 192, 3)  # 147 kB
    send_frames(a, encode(Message(MessageType.REPLY, 7, "manip", "c", {"ok": True},
                                  {"rgb": image})))
    b.poll(5000)
    msg = decode(recv_frames(b))
    assert msg.request_id == 7 and msg.body == {"ok": True}
    assert np.array_equal(msg.arrays["rgb"], image)
    assert not msg.arrays["rgb"].flags.writeable
