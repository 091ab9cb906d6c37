"""A fault-injecting proxy for tests and chaos runs: it sits between REQ clients and a server
and drops, delays, duplicates, reorders or corrupts messages, or partitions the link, on
request.

Each client connection gets its own upstream DEALER, so the server sees ordinary REQ-shaped
peers. The proxy's thread owns all its sockets; the fault controls are plain thread-safe
settings.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from dataclasses import dataclass

import zmq

from harness_bt.errors import BridgeError

__all__ = ["CORRUPTIONS", "FaultCounts", "FaultProxy", "corrupt"]


@dataclass(slots=True)
class FaultCounts:
    requests: int = 0
    replies: int = 0
    dropped_requests: int = 0
    dropped_replies: int = 0
    delayed_replies: int = 0
    duplicated_replies: int = 0
    reordered_replies: int = 0
    corrupted_requests: int = 0
    corrupted_replies: int = 0


#: How ``corrupt_requests`` / ``corrupt_replies`` mangle a message, in turn.
CORRUPTIONS = ("malformed", "truncated", "oversized")


def corrupt(frames: list[bytes], how: str, *, oversize_bytes: int = (1 << 20) + 1) -> list[bytes]:
    """``frames`` (one harness-bt message, no envelope) mangled: ``malformed`` (garbage in place
    of the header), ``truncated`` (the header cut short, the body gone), ``oversized`` (a body
    past the default 1 MiB limit, under the socket's hard cap, so the peer must read it and
    answer)."""
    if how == "malformed":
        return [b"\x00not-a-harness-bt-header", *frames[1:]]
    if how == "truncated":
        return [frames[0][: max(1, len(frames[0]) // 2)]]
    if how == "oversized":
        return [frames[0], b'{"pad":"' + b"x" * oversize_bytes + b'"}', *frames[2:]]
    raise BridgeError("INVALID_CONFIG", f"unknown corruption {how!r}; known: "
                      f"{', '.join(CORRUPTIONS)}")


class FaultProxy:
    """``start()`` returns the endpoint clients connect to instead of ``upstream``."""

    def __init__(self, upstream: str, *, bind: str = "tcp://127.0.0.1:*",
                 context: zmq.Context | None = None, seed: int = 0) -> None:
        self.upstream = upstream
        self.bind = bind
        self.context = context or zmq.Context.instance()
        self.counts = FaultCounts()
        self.endpoint: str | None = None
        self._lock = threading.Lock()
        self._drop_requests = 0
        self._drop_replies = 0
        self._duplicate_replies = 0
        self._reorder_replies = 0
        self._reorder_hold_s = 1.0
        self._corrupt_requests = 0
        self._corrupt_replies = 0
        self._corruption = itertools.cycle(CORRUPTIONS)
        self._rates: dict[str, float] = {}
        self._rng = random.Random(seed)
        self._delay_s = 0.0
        self._held: list[tuple[float, list[bytes], list[bytes]]] = []  # the proxy thread's
        self._partitioned = False
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ controls

    def drop_requests(self, n: int = 1) -> None:
        with self._lock:
            self._drop_requests += n

    def drop_replies(self, n: int = 1) -> None:
        """Let the server handle the next ``n`` requests, but lose their replies."""
        with self._lock:
            self._drop_replies += n

    def duplicate_replies(self, n: int = 1) -> None:
        with self._lock:
            self._duplicate_replies += n

    def reorder_replies(self, n: int = 1, *, hold_s: float = 1.0) -> None:
        """Hold back each of the next ``n`` replies until a later reply (to any client) has
        overtaken it, or ``hold_s`` has passed; then deliver it to the peer that asked. A REQ
        client that gave up and resent on a new socket never sees the stale reply; one still
        waiting gets it late."""
        with self._lock:
            self._reorder_replies += n
            self._reorder_hold_s = hold_s

    def corrupt_requests(self, n: int = 1) -> None:
        """Mangle the next ``n`` requests on their way to the server (malformed, truncated,
        oversized in turn): the server must answer with an error, or drop, and keep serving."""
        with self._lock:
            self._corrupt_requests += n

    def corrupt_replies(self, n: int = 1) -> None:
        """Mangle the next ``n`` replies on their way to the client (in turn as above)."""
        with self._lock:
            self._corrupt_replies += n

    def set_rates(self, **rates: float) -> None:
        """Per-message fault probabilities (seeded), on top of the counted faults: keys
        ``drop_requests``, ``drop_replies``, ``duplicate_replies``, ``reorder_replies``,
        ``corrupt_requests``, ``corrupt_replies``; 0 turns one off. Unlike counts, a rate never
        piles up while the link is quiet."""
        known = ("drop_requests", "drop_replies", "duplicate_replies", "reorder_replies",
                 "corrupt_requests", "corrupt_replies")
        for name, rate in rates.items():
            if name not in known or not 0.0 <= rate <= 1.0:
                raise BridgeError("INVALID_CONFIG", f"fault rate {name}={rate!r}: the name must "
                                  f"be one of {', '.join(known)} and the rate within 0..1")
        with self._lock:
            self._rates.update({f"_{k}": float(v) for k, v in rates.items()})

    def delay_replies(self, seconds: float) -> None:
        with self._lock:
            self._delay_s = seconds

    def partition(self, on: bool = True) -> None:
        """Drop everything both ways while on."""
        with self._lock:
            self._partitioned = on

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout_s: float = 5.0) -> str:
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s) or self.endpoint is None:
            self.stop()
            raise BridgeError("BIND_FAILED", f"the fault proxy could not bind {self.bind}")
        return self.endpoint

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def _take(self, name: str) -> bool:
        with self._lock:
            left = getattr(self, name)
            if left > 0:
                setattr(self, name, left - 1)
                return True
            rate = self._rates.get(name, 0.0)
            return rate > 0.0 and self._rng.random() < rate

    def _run(self) -> None:
        front = self.context.socket(zmq.ROUTER)
        front.setsockopt(zmq.LINGER, 0)
        uppers: dict[bytes, zmq.Socket] = {}
        owners: dict[zmq.Socket, list[bytes]] = {}
        later: list[tuple[float, int, list[bytes], list[bytes]]] = []
        order = itertools.count()
        poller = zmq.Poller()
        try:
            front.bind(self.bind)
            self.endpoint = front.getsockopt_string(zmq.LAST_ENDPOINT)
            self._ready.set()
            poller.register(front, zmq.POLLIN)
            while not self._stop.is_set():
                wait = 5 if not later else max(0, int(1000 * (later[0][0] - time.monotonic())))
                if self._held:
                    wait = min(wait, max(0, int(1000 * (self._held[0][0] - time.monotonic()))))
                for sock, _ in poller.poll(min(wait, 5)):
                    frames = sock.recv_multipart()
                    if sock is front:
                        self._on_request(frames, uppers, owners, poller)
                    else:
                        self._on_reply(owners[sock], frames, front, later, order)
                while later and later[0][0] <= time.monotonic():
                    _, _, envelope, frames = heapq.heappop(later)
                    front.send_multipart([*envelope, *frames])
                while self._held and self._held[0][0] <= time.monotonic():
                    _, envelope, frames = self._held.pop(0)
                    front.send_multipart([*envelope, *frames])
        finally:
            for sock in uppers.values():
                sock.close(0)
            front.close(0)
            self._ready.set()

    def _on_request(self, frames: list[bytes], uppers: dict[bytes, zmq.Socket],
                    owners: dict[zmq.Socket, list[bytes]], poller: zmq.Poller) -> None:
        self.counts.requests += 1
        with self._lock:
            cut = self._partitioned
        if cut or self._take("_drop_requests"):
            self.counts.dropped_requests += 1
            return
        cut_at = 2 if len(frames) > 1 and not frames[1] else 1
        envelope, body = frames[:cut_at], frames[cut_at:]
        if body and self._take("_corrupt_requests"):
            self.counts.corrupted_requests += 1
            body = corrupt(body, next(self._corruption))
        upper = uppers.get(envelope[0])
        if upper is None:
            upper = self.context.socket(zmq.DEALER)
            upper.setsockopt(zmq.LINGER, 0)
            upper.connect(self.upstream)
            uppers[envelope[0]] = upper
            owners[upper] = envelope
            poller.register(upper, zmq.POLLIN)
        upper.send_multipart([b"", *body])

    def _on_reply(self, envelope: list[bytes], frames: list[bytes], front: zmq.Socket,
                  later: list[tuple[float, int, list[bytes], list[bytes]]],
                  order: itertools.count[int]) -> None:
        self.counts.replies += 1
        body = frames[1:] if frames and not frames[0] else frames
        with self._lock:
            cut, delay = self._partitioned, self._delay_s
        if cut or self._take("_drop_replies"):
            self.counts.dropped_replies += 1
            return
        if body and self._take("_corrupt_replies"):
            self.counts.corrupted_replies += 1
            body = corrupt(body, next(self._corruption))
        if self._take("_reorder_replies"):
            self.counts.reordered_replies += 1
            with self._lock:
                hold = self._reorder_hold_s
            self._held.append((time.monotonic() + hold, envelope, body))
            return
        copies = 2 if self._take("_duplicate_replies") else 1
        self.counts.duplicated_replies += copies - 1
        for _ in range(copies):
            if delay > 0:
                self.counts.delayed_replies += 1
                heapq.heappush(later, (time.monotonic() + delay, next(order), envelope, body))
            else:
                front.send_multipart([*envelope, *body])
        overtaken, self._held = self._held, []  # this reply went first: release the held ones
        for _, held_envelope, held_body in overtaken:
            front.send_multipart([*held_envelope, *held_body])

