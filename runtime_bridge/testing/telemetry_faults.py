"""A fault-injecting proxy for telemetry, the PUB/SUB sibling of
:class:`~runtime_bridge.testing.fault_proxy.FaultProxy`: subscribers connect to it instead of the
runtime's PUB endpoint, and it drops, delays, duplicates or reorders messages, or goes silent
(a partition of telemetry only), on request.

It is an XSUB (connected upstream) / XPUB (bound) pair, so subscriptions pass through and the
runtime still filters by topic; an XSUB resends its subscriptions when the runtime restarts on
the same endpoint. Faults are per message, seeded. A delayed message is held for a random time
up to ``delay_s`` and released after newer ones may have gone past it; a reordered one is held
until a later message has overtaken it (or ``hold_s`` has passed). Subscribers keep the value
with the highest sequence number per topic, so neither makes an older value win.

The proxy's thread owns both sockets (LINGER 0); the fault settings are thread-safe.
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

__all__ = ["TelemetryFaultCounts", "TelemetryFaultProxy"]

_RATES = ("drop", "delay", "duplicate", "reorder")


@dataclass(slots=True)
class TelemetryFaultCounts:
    messages: int = 0
    forwarded: int = 0
    dropped: int = 0
    silenced: int = 0
    delayed: int = 0
    duplicated: int = 0
    reordered: int = 0
    subscriptions: int = 0


class TelemetryFaultProxy:
    """``start()`` returns the endpoint subscribers connect to instead of ``upstream``."""

    def __init__(self, upstream: str, *, bind: str = "tcp://127.0.0.1:*",
                 context: zmq.Context | None = None, seed: int = 0,
                 sndhwm: int = 1000) -> None:
        self.upstream = upstream
        self.bind = bind
        self.context = context or zmq.Context.instance()
        self.sndhwm = sndhwm
        self.counts = TelemetryFaultCounts()
        self.endpoint: str | None = None
        self._lock = threading.Lock()
        self._rates: dict[str, float] = {}
        self._rng = random.Random(seed)
        self._delay_s = 0.5
        self._hold_s = 0.5
        self._silent = False
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ controls

    def set_rates(self, **rates: float) -> None:
        """Per-message fault probabilities (seeded): keys ``drop``, ``delay``, ``duplicate``,
        ``reorder``; 0 turns one off."""
        for name, rate in rates.items():
            if name not in _RATES or not 0.0 <= rate <= 1.0:
                raise BridgeError("INVALID_CONFIG", f"telemetry fault rate {name}={rate!r}: the "
                                  f"name must be one of {', '.join(_RATES)} and the rate "
                                  "within 0..1")
        with self._lock:
            self._rates.update({k: float(v) for k, v in rates.items()})

    def delay_messages(self, max_s: float) -> None:
        """A delayed message is held for a random time in ``0..max_s``."""
        with self._lock:
            self._delay_s = max_s

    def reorder_hold(self, hold_s: float) -> None:
        """A reordered message waits at most ``hold_s`` for a later one to overtake it."""
        with self._lock:
            self._hold_s = hold_s

    def silence(self, on: bool = True) -> None:
        """Drop every message while on (the control channel is not touched)."""
        with self._lock:
            self._silent = on

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout_s: float = 5.0) -> str:
        self._thread = threading.Thread(target=self._run, name="telemetry-fault-proxy",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s) or self.endpoint is None:
            self.stop()
            raise BridgeError("BIND_FAILED", f"the telemetry fault proxy could not bind "
                              f"{self.bind} or connect {self.upstream}")
        return self.endpoint

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _take(self, name: str) -> bool:
        with self._lock:
            rate = self._rates.get(name, 0.0)
            return rate > 0.0 and self._rng.random() < rate

    def _run(self) -> None:
        front = self.context.socket(zmq.XPUB)
        upper = self.context.socket(zmq.XSUB)
        for sock in (front, upper):
            sock.setsockopt(zmq.LINGER, 0)
        front.setsockopt(zmq.SNDHWM, self.sndhwm)
        later: list[tuple[float, int, list[bytes]]] = []
        held: list[tuple[float, list[bytes]]] = []
        order = itertools.count()
        poller = zmq.Poller()
        try:
            try:
                front.bind(self.bind)
                upper.connect(self.upstream)
            except zmq.ZMQError:
                return
            self.endpoint = front.getsockopt_string(zmq.LAST_ENDPOINT)
            self._ready.set()
            poller.register(front, zmq.POLLIN)
            poller.register(upper, zmq.POLLIN)
            while not self._stop.is_set():
                due = [t for t, *_ in later[:1]] + [t for t, _ in held[:1]]
                wait = min([5.0, *(1000 * (t - time.monotonic()) for t in due)])
                for sock, _ in poller.poll(max(0, int(wait))):
                    frames = sock.recv_multipart()
                    if sock is front:  # a (un)subscription: pass it on
                        self.counts.subscriptions += 1
                        upper.send_multipart(frames)
                    else:
                        self._on_message(frames, front, later, held, order)
                now = time.monotonic()
                while later and later[0][0] <= now:
                    self._send(front, heapq.heappop(later)[2])
                while held and held[0][0] <= now:
                    self._send(front, held.pop(0)[1])
        finally:
            upper.close(0)
            front.close(0)
            self._ready.set()

    def _send(self, front: zmq.Socket, frames: list[bytes]) -> None:
        try:
            front.send_multipart(frames, zmq.NOBLOCK)
            self.counts.forwarded += 1
        except zmq.Again:  # like the runtime's PUB: never wait for a subscriber
            pass

    def _on_message(self, frames: list[bytes], front: zmq.Socket,
                    later: list[tuple[float, int, list[bytes]]],
                    held: list[tuple[float, list[bytes]]], order: itertools.count[int]) -> None:
        self.counts.messages += 1
        with self._lock:
            silent, delay_s, hold_s = self._silent, self._delay_s, self._hold_s
        if silent:
            self.counts.silenced += 1
            return
        if self._take("drop"):
            self.counts.dropped += 1
            return
        if self._take("reorder"):
            self.counts.reordered += 1
            held.append((time.monotonic() + hold_s, frames))
            return
        copies = 2 if self._take("duplicate") else 1
        self.counts.duplicated += copies - 1
        went = False
        for _ in range(copies):
            if self._take("delay"):
                self.counts.delayed += 1
                with self._lock:
                    wait = self._rng.uniform(0.0, delay_s)
                heapq.heappush(later, (time.monotonic() + wait, next(order), frames))
            else:
                self._send(front, frames)
                went = True
        if not went:
            return
        overtaken, held[:] = list(held), []  # this message went first: release the held ones
        for _, old in overtaken:
            self._send(front, old)
