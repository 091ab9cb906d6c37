"""``ZmqBridge``: the harness's :class:`~harness_bt.RuntimeBridge` to a ZeroMQ runtime.

- ``query``, heartbeats and event reads are idempotent: Lazy-Pirate retries.
- ``dispatch`` and ``cancel`` change things, but the runtime deduplicates by command id, so a
  call that gets no answer is resent with the **same** command id (the start budget shrinks by
  the time spent; it is never refreshed). When every try stays silent the outcome is unknown:
  the call raises ``WireError`` with code ``OUTCOME_UNKNOWN`` (``details["outcome"] ==
  "unknown"``): mark the command UNKNOWN in the ledger and reconcile it with ``query``; never
  resend it under a new id.
- ``poll`` renews the leases of the commands this bridge follows (heartbeat), reads command
  events after its cursor (the authoritative path for results), and drains telemetry (the
  latest robot state becomes an :class:`Observation`). It never raises for a silent runtime:
  it waits once, reports a ``runtime_silent`` notice, and tries again on the next poll.
- A slow link: the wait of poll's requests starts at ``poll_timeout_s``, doubles after each
  silent poll and follows the measured round trip after answers (twice the last one), up to
  ``max_wait_s`` (default: 0.8 x the lease the runtime announces, at least ``timeout_s``): on
  a link slower than the wait every reply would arrive after its socket was reset, and no
  event would ever get through. When the measured round trip leaves no room for an events
  read before the next heartbeat is due within the lease, the poll sends only the heartbeat
  (events are read on a faster moment): leases come first, and the runtime's own protection
  (it holds a command whose lease ran out) is unchanged. ``dispatch``, ``cancel``, ``query``
  and ``heartbeat`` start from the same learned wait and double it on each silent try, within
  the same bound.
- Telemetry is evidence of liveness, never of results: the ``started`` and ``progress`` of a
  followed command published on ``progress/<command id>`` (PUB/SUB, which a slow request path
  does not hold up) are reported as its events (same sequence numbers as the runtime's
  record, so the ledger applies each at most once), which confirms its start and keeps it
  from looking stalled. Terminal events come only from ``EVENTS`` / ``QUERY``; a terminal kind
  on telemetry only tells the poll that the command needs no lease any more, so its events
  read goes out even on a slow link.
- Fencing: ``epoch`` goes with every cancel and heartbeat (commands carry their own); a
  ``fenced`` notice says the runtime has a newer epoch.

One thread owns the bridge and all its sockets.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import zmq

from harness_bt.clock import Clock, SystemClock
from harness_bt.ledger import Command, CommandEvent, EventKind
from harness_bt.runtime.bridge import Ack, BridgeNotice, PollResult, RuntimeStatus
from harness_bt.runtime.observation import Observation
from runtime_bridge.host import HeartbeatResult
from runtime_bridge.zmq.client import LazyPirateClient
from runtime_bridge.zmq.codec import (
    ack_from_wire,
    batch_from_wire,
    heartbeat_from_wire,
    status_from_wire,
)
from runtime_bridge.zmq.jsontext import RawJSON
from runtime_bridge.zmq.observations import observation_from_telemetry
from runtime_bridge.zmq.telemetry import TelemetrySubscriber, TopicValue
from runtime_bridge.zmq.wire import Message, MessageType, WireCode, WireError, raise_for_error

__all__ = ["ZmqBridge", "ZmqBridgeConfig"]

_FINAL = frozenset({EventKind.CONTROL_DONE, EventKind.ABORTED, EventKind.STOPPED,
                    EventKind.REJECTED})
#: Telemetry topics of command events (``progress/<command id>``), and the kinds taken from
#: them: evidence that a command runs, never its result.
_PROGRESS = "progress/"
_LIVENESS = frozenset({"started", "progress"})
_ENDED = frozenset(str(k) for k in _FINAL)
#: The share of the runtime's lease one wait may take, and the longest gap between two
#: heartbeats a poll allows itself (the runtime holds a command at the whole lease).
_LEASE_SHARE = 0.8
#: Errors that prove a dispatch was not carried out (safe to send again later, same id).
_NOT_DONE = frozenset({WireCode.SERVICE_UNAVAILABLE, WireCode.BROKER_BUSY,
                       WireCode.SERVICE_TIMEOUT, WireCode.NO_SUCH_SERVICE})


@dataclass(frozen=True, slots=True)
class ZmqBridgeConfig:
    """``telemetry``: the PUB endpoint (None: ask the runtime; "": no telemetry). ``timeout_s``
    x ``retries`` bounds dispatch, cancel and query; ``poll_timeout_s`` is the first wait of each
    of poll's (single-try) requests, doubled after silent polls up to ``timeout_s``."""

    endpoint: str = "tcp://127.0.0.1:5555"
    service: str = "manip"
    telemetry: str | None = None
    epoch: int = 0
    timeout_s: float = 0.5
    retries: int = 3
    poll_timeout_s: float = 0.25
    heartbeat_interval_s: float = 0.25
    max_events: int = 1000
    linger_ms: int = 0
    max_wait_s: float | None = None


class ZmqBridge:
    """See the module docstring."""

    def __init__(self, config: ZmqBridgeConfig | None = None, *,
                 context: zmq.Context | None = None, clock: Clock | None = None) -> None:
        self.config = cfg = config or ZmqBridgeConfig()
        self.context = context or zmq.Context.instance()
        self.clock: Clock = clock or SystemClock()
        self.epoch = cfg.epoch
        self.client = LazyPirateClient(cfg.endpoint, context=self.context,
                                       timeout_s=cfg.timeout_s, retries=cfg.retries,
                                       linger_ms=cfg.linger_ms)
        self.followed: set[str] = set()
        self.boot_id: str | None = None
        self.cursor = 0
        self._seen: dict[str, int] = {}
        self._hello: dict[str, Any] | None = None
        self._next_beat = 0.0
        self._subscriber: TelemetrySubscriber | None = None
        self._state_seq = -1
        self._poll_wait = cfg.poll_timeout_s
        self._beat_sent_at: float | None = None
        self._rtt = 0.0
        self._ended: set[str] = set()

    # ------------------------------------------------------------------ calls

    def _call(self, mtype: MessageType, command_id: str = "", body: dict[str, Any] | None = None,
              *, retries: int | None = None, timeout_s: float | None = None) -> Message:
        msg = Message(mtype, 0, self.config.service, command_id, body or {})
        return raise_for_error(self.client.request(msg, retries=retries, timeout_s=timeout_s))

    def hello(self, *, retries: int | None = None,
              timeout_s: float | None = None) -> dict[str, Any]:
        """The runtime's identity: protocol, epoch, boot id, event cursor, telemetry endpoint."""
        began = self.clock.monotonic()
        info = dict(self._call(MessageType.HELLO, retries=retries, timeout_s=timeout_s).body)
        if self.boot_id is None and not self.followed:  # nothing to catch up on: news only
            self.boot_id, self.cursor = str(info.get("boot_id")), int(info.get("cursor", 0))
        self._hello = info
        self._learn(self.clock.monotonic() - began)
        return info

    def _ensure_hello(self) -> bool:
        """True when the runtime has introduced itself (one short try otherwise)."""
        if self._hello is None:
            with contextlib.suppress(WireError):  # then: from cursor 0 of the first boot to answer
                self.hello(retries=1, timeout_s=self._poll_wait)
        return self._hello is not None

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        self._ensure_hello()
        cid = command.command_id
        budget = command.start_within_ms if start_budget_ms is None else start_budget_ms
        text = RawJSON(command.wire_text)  # encoded once per command (the ledger's journal too)
        began = self.clock.monotonic()
        self.followed.add(cid)
        tries = 0
        waits = self._waits(self.config.timeout_s)
        for tries in range(1, self.config.retries + 1):
            sent = self.clock.monotonic()
            left = budget - 1000.0 * (sent - began)
            if tries > 1 and left <= 0:
                break
            try:
                reply = self._call(MessageType.DISPATCH, cid, {"command": text,
                                                      "start_budget_ms": left}, retries=1,
                                   timeout_s=next(waits))
            except WireError as err:
                if err.code == WireCode.NO_REPLY:
                    continue
                if err.code in _NOT_DONE:
                    self.followed.discard(cid)
                    raise
                if err.code == WireCode.WORKER_LOST:
                    break
                raise
            self._learn(self.clock.monotonic() - sent)
            return ack_from_wire(reply.body)
        raise self._unknown("dispatch", cid, tries)

    def cancel(self, command_id: str) -> Ack:
        self._ensure_hello()
        self.followed.add(command_id)
        try:
            reply = self._patient(MessageType.CANCEL, command_id, {"epoch": self.epoch},
                                  base_s=self.config.timeout_s, tries=self.config.retries)
        except WireError as err:
            if err.code in (WireCode.NO_REPLY, WireCode.WORKER_LOST):
                raise self._unknown("cancel", command_id, self.config.retries) from err
            raise
        return ack_from_wire(reply.body)

    def _unknown(self, what: str, command_id: str, tries: int) -> WireError:
        return WireError(
            WireCode.OUTCOME_UNKNOWN,
            f"{what} of {command_id!r} got no answer from {self.config.endpoint} after {tries} "
            "tries; the runtime may or may not have it", command_id=command_id,
            where=self.config.endpoint, details={"outcome": "unknown", "call": what,
                                                 "tries": tries},
            fix="mark it UNKNOWN and reconcile with query(); never resend it under a new id")

    def query(self, command_id: str) -> RuntimeStatus:
        """The runtime's record (raises ``WireError(NO_REPLY)`` when it stays silent)."""
        self.followed.add(command_id)
        return status_from_wire(self._patient(MessageType.QUERY, command_id,
                                              base_s=self.config.timeout_s,
                                              tries=self.config.retries).body)

    def follow(self, command_ids: list[str] | set[str] | tuple[str, ...]) -> None:
        """Adopt commands (a resumed harness): renew their leases, report their events."""
        self.followed.update(command_ids)

    def heartbeat(self, command_ids: list[str] | None = None, *,
                  retries: int | None = None) -> HeartbeatResult:
        ids = sorted(self.followed) if command_ids is None else command_ids
        self._beat_sent_at = self.clock.monotonic()
        reply = self._patient(MessageType.HEARTBEAT, "", {"epoch": self.epoch, "command_ids": ids},
                              base_s=self._poll_wait,
                              tries=self.config.retries if retries is None else retries)
        return heartbeat_from_wire(reply.body)

    # ------------------------------------------------------------------ waits

    def _wait_cap(self) -> float:
        """The longest single wait (see the module docstring)."""
        cfg = self.config
        if cfg.max_wait_s is not None:
            return max(cfg.poll_timeout_s, cfg.max_wait_s)
        lease = self._lease_s()
        floor = max(cfg.poll_timeout_s, cfg.timeout_s)
        return floor if lease is None else max(floor, _LEASE_SHARE * lease)

    def _lease_s(self) -> float | None:
        lease = None if self._hello is None else self._hello.get("lease_s")
        return float(lease) if isinstance(lease, int | float) and lease > 0 else None

    def _learn(self, elapsed_s: float) -> None:
        """An answer came after ``elapsed_s``: wait about twice that next time (at least half
        the current wait, so a fast answer after slow ones brings it down step by step)."""
        self._rtt = elapsed_s
        cap = self._wait_cap()
        self._poll_wait = min(cap, max(self.config.poll_timeout_s, 2.0 * elapsed_s,
                                       self._poll_wait / 2))

    def _waits(self, base_s: float) -> Iterator[float]:
        """The waits of successive tries: the learned wait (at least ``base_s``), doubled on
        each silent try, never past the cap."""
        cap = max(base_s, self._wait_cap())
        wait = min(cap, max(base_s, self._poll_wait))
        while True:
            yield wait
            wait = min(cap, 2.0 * wait)

    def _patient(self, mtype: MessageType, command_id: str = "",
                 body: dict[str, Any] | None = None, *, base_s: float, tries: int) -> Message:
        """An idempotent call, tried up to ``tries`` times with growing waits (``_waits``);
        raises ``WireError(NO_REPLY)`` when every try stays silent."""
        waits = self._waits(base_s)
        tried: list[int] = []
        for _ in range(max(1, tries)):
            wait = next(waits)
            tried.append(int(1000 * wait))
            began = self.clock.monotonic()
            try:
                reply = self._call(mtype, command_id, body, retries=1, timeout_s=wait)
            except WireError as err:
                if err.code == WireCode.NO_REPLY:
                    continue
                raise
            self._learn(self.clock.monotonic() - began)
            return reply
        raise WireError(WireCode.NO_REPLY, f"no reply to {mtype.name} {command_id} from "
                        f"{self.config.endpoint} after {len(tried)} tries of "
                        f"{'/'.join(map(str, tried))} ms", where=self.config.endpoint,
                        command_id=command_id or None,
                        details={"tries": len(tried), "timeout_ms": tried[-1]})

    def _room_for_events(self) -> bool:
        """Whether an events read answered at the measured round trip (twice it, for margin)
        still lets the next heartbeat leave within ``_LEASE_SHARE`` of the lease since the
        last one. On a link as slow as the lease, only heartbeats go out (leases first);
        events wait for a faster moment, and telemetry keeps saying the commands run; once
        telemetry says every followed command has ended, no lease needs keeping and the
        events read (their results) goes first."""
        lease = self._lease_s()
        if lease is None or self._beat_sent_at is None or not self.followed - self._ended:
            return True  # no lease to keep: nothing followed still runs
        since = self.clock.monotonic() - self._beat_sent_at
        return since + 2.0 * self._rtt <= _LEASE_SHARE * lease

    # ------------------------------------------------------------------ poll

    def poll(self) -> PollResult:
        notices: list[BridgeNotice] = []
        now = self.clock.monotonic()
        if not self._ensure_hello():  # telemetry has its own channel: keep observing
            self._slower()
            return PollResult(observations=tuple(self._drain_telemetry(now)),
                              notices=(BridgeNotice("runtime_silent", data={"call": "hello"}),))
        events: list[CommandEvent] = []
        seen: list[CommandEvent] = []  # telemetry's, applied after the authoritative read
        observations = self._drain_telemetry(now, seen)  # first: it costs no wait
        try:
            if now >= self._next_beat:
                self._next_beat = now + self.config.heartbeat_interval_s
                call = "heartbeat"
                beat = self.heartbeat(retries=1)
                if not beat.accepted:
                    notices.append(BridgeNotice("fenced", data={"reason": beat.reason,
                                                                "runtime_epoch": beat.epoch}))
            call = "events"
            if self._room_for_events():
                events.extend(self._read_events(notices))
        except WireError as err:  # silent: say so, and try again on the next poll
            notices.append(self._silent(call, err))
            if err.code == WireCode.NO_REPLY:
                self._slower()
        observations.extend(self._drain_telemetry(now, seen))
        events.extend(e for e in sorted(seen, key=lambda e: e.seq) if self._fresh(e))
        return PollResult(tuple(events), tuple(observations), tuple(notices))

    def _slower(self) -> None:
        """Wait longer on the next poll (see the module docstring)."""
        self._poll_wait = min(self._wait_cap(), 2 * self._poll_wait)

    def _silent(self, call: str, err: WireError) -> BridgeNotice:
        return BridgeNotice("runtime_silent", data={"call": call, "code": err.code,
                                                    "message": err.message})

    def _read_events(self, notices: list[BridgeNotice]) -> list[CommandEvent]:
        body = {"cursor": self.cursor, "limit": self.config.max_events}
        began = self.clock.monotonic()
        batch = batch_from_wire(self._call(MessageType.EVENTS, "", body, retries=1,
                                           timeout_s=self._poll_wait).body)
        self._learn(self.clock.monotonic() - began)
        if batch.boot_id != self.boot_id:
            if self.boot_id is not None:
                notices.append(BridgeNotice("runtime_restarted", data={
                    "old_boot_id": self.boot_id, "boot_id": batch.boot_id}))
            self.boot_id, self.cursor = batch.boot_id, 0
            body["cursor"] = 0
            batch = batch_from_wire(self._call(MessageType.EVENTS, "", body, retries=1,
                                               timeout_s=self._poll_wait).body)
        self.cursor = batch.next_cursor
        out = [e for e in batch.events if self._fresh(e)]
        if batch.gap:
            notices.append(BridgeNotice("events_gap", data={"cursor": self.cursor}))
            for cid in sorted(self.followed):
                out.extend(e for e in self.query(cid).events if self._fresh(e))
        return out

    def _fresh(self, event: CommandEvent) -> bool:
        cid = event.command_id
        if cid not in self.followed or event.seq <= self._seen.get(cid, -1):
            return False
        self._seen[cid] = event.seq
        if event.kind in _FINAL:
            self.followed.discard(cid)
            self._ended.discard(cid)
            self._seen.pop(cid, None)
        return True

    def _drain_telemetry(self, now: float,
                         events: list[CommandEvent] | None = None) -> list[Observation]:
        """The latest robot state as an observation (when new); with ``events``, also append
        the liveness events (started / progress) of followed commands published since (not
        yet checked against what was reported: ``_fresh`` does that)."""
        if self._subscriber is None:
            endpoint = self.config.telemetry
            if endpoint is None and self._hello is not None:
                endpoint = self._hello.get("telemetry") or ""
            if not endpoint:
                return []
            self._subscriber = TelemetrySubscriber(endpoint, topics=("state", _PROGRESS),
                                                   context=self.context)
        updated = self._subscriber.drain()
        if events is not None:
            for topic in sorted(updated):
                if topic.startswith(_PROGRESS):
                    event = self._liveness(updated[topic])
                    if event is not None:
                        events.append(event)
                    body = updated[topic].body
                    if body.get("kind") in _ENDED and body.get("command_id") in self.followed:
                        self._ended.add(str(body["command_id"]))
        state = self._subscriber.latest.get("state")
        if state is None or state.seq == self._state_seq:
            return []
        self._state_seq = state.seq
        return [_observation(state, now)]

    def _liveness(self, value: TopicValue) -> CommandEvent | None:
        """A followed command's ``started`` / ``progress`` from telemetry (None otherwise: a
        terminal kind, an unknown command, or a malformed body)."""
        body = value.body
        cid = body.get("command_id")
        kind = body.get("kind")
        seq = body.get("event_seq")
        progress = body.get("progress")
        if (not isinstance(cid, str) or cid not in self.followed or kind not in _LIVENESS
                or not isinstance(seq, int) or isinstance(seq, bool) or seq < 0):
            return None
        if not (progress is None or isinstance(progress, int | float)):
            progress = None
        return CommandEvent(cid, seq, str(kind), progress=progress,
                            data={"source": "telemetry"})

    def close(self) -> None:
        if self._subscriber is not None:
            self._subscriber.close()
            self._subscriber = None
        self.client.close()

    def __enter__(self) -> ZmqBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _observation(value: TopicValue, now: float) -> Observation:
    return observation_from_telemetry(value.body, value.arrays, now)
