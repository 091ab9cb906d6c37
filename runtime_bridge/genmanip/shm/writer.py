"""The server's side of the shared-memory fast path: sessions, each with its own segment and a
ring of slots, and the small descriptor that replaces the arrays in the HTTP answer.

A client opens a session (``POST /harness/shm/open``), maps the segment by name, reads the
token in its header and sends ``X-Harness-Shm: <session>.<token>`` with every ``/reset`` and
``/step`` that ``Accept``s :data:`~runtime_bridge.genmanip.codec.SHM_MEDIA_TYPE`. Only then does
the server answer with a descriptor; otherwise (no or unknown session, wrong token, a payload
larger than the segment may grow) it says why in ``X-Harness-Shm-Status`` and answers in the next
encoding the client accepts.
"""

from __future__ import annotations

import atexit
import hmac
import logging
import os
import pickle
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from harness_bt.errors import BridgeError
from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.shm.segment import (
    DEFAULT_DIRECTORY,
    TOKEN_BYTES,
    WritableSegment,
    check_prefix,
    clean_stale,
)

__all__ = ["CLAIM_HEADER", "STATUS_HEADER", "ShmConfig", "ShmSessions"]

log = logging.getLogger(__name__)

CLAIM_HEADER = "x-harness-shm"
STATUS_HEADER = "x-harness-shm-status"
ALIGN = 64


@dataclass(frozen=True, slots=True)
class ShmConfig:
    """Where segments live and how large they may grow.

    ``slots``: the ring per session (a view of step N stays valid while the next ``slots - 1``
    steps are written). ``max_sessions``: the least recently used session is closed beyond it.
    """

    directory: str = DEFAULT_DIRECTORY
    prefix: str = "hbt"
    slots: int = 4
    max_sessions: int = 8
    max_segment_bytes: int = 512 * 1024 * 1024

    def __post_init__(self) -> None:
        check_prefix(self.prefix)
        if not 1 <= self.slots <= 64 or self.max_sessions < 1:
            raise BridgeError("INVALID_CONFIG", f"ShmConfig: slots={self.slots} must be within "
                              f"1..64 and max_sessions={self.max_sessions} at least 1",
                              fix="give 1 to 64 slots and at least one session")


@dataclass(eq=False)
class _Session:
    id: str
    token: bytes
    segment: WritableSegment
    lock: threading.Lock = field(default_factory=threading.Lock)


class ShmSessions:
    """Every shared-memory session of one server. ``start`` cleans stale segments of the
    prefix; ``close`` unlinks every segment (also at interpreter exit, if not called)."""

    def __init__(self, config: ShmConfig | None = None) -> None:
        self.config = config or ShmConfig()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._guard = threading.Lock()
        self._started = False

    @property
    def available(self) -> bool:
        return os.path.isdir(self.config.directory) and os.access(self.config.directory, os.W_OK)

    def start(self) -> list[str]:
        """Remove the stale segments of this prefix (a crashed server's); returns their names."""
        with self._guard:
            if self._started:
                return []
            self._started = True
        atexit.register(self.close)
        return clean_stale(self.config.directory, self.config.prefix)

    def open(self) -> dict[str, Any]:
        """A new session: ``{"session", "segment", "slots"}`` (the token stays in the segment)."""
        self.start()
        sid = secrets.token_hex(8)
        name = f"{self.config.prefix}-{os.getpid()}-{sid}"
        token = secrets.token_bytes(TOKEN_BYTES)
        segment = WritableSegment(self.config.directory, name, self.config.slots, token)
        evicted = []
        with self._guard:
            self._sessions[sid] = _Session(sid, token, segment)
            while len(self._sessions) > self.config.max_sessions:
                evicted.append(self._sessions.popitem(last=False)[1])
        for old in evicted:
            log.info("shm session %s closed: more than %d sessions", old.id,
                     self.config.max_sessions)
            self._close_session(old)
        return {"session": sid, "segment": name, "slots": self.config.slots}

    def _find(self, claim: str | None) -> _Session | None:
        if not claim or claim.count(".") != 1:
            return None
        sid, token_hex = claim.split(".")
        try:
            token = bytes.fromhex(token_hex)
        except ValueError:
            return None
        with self._guard:
            session = self._sessions.get(sid)
            if session is None or not hmac.compare_digest(session.token, token):
                return None
            self._sessions.move_to_end(sid)
            return session

    def release(self, claim: str | None) -> bool:
        """Close the session ``claim`` proves (the client is done with it)."""
        session = self._find(claim)
        if session is None:
            return False
        with self._guard:
            self._sessions.pop(session.id, None)
        self._close_session(session)
        return True

    def encode(self, claim: str | None, payload: Any) -> tuple[bytes | None, str]:
        """The descriptor body for ``payload`` with its arrays written to the session's next
        slot, and ``"ok"``; or ``(None, reason)`` to answer in another encoding."""
        session = self._find(claim)
        if session is None:
            return None, "unknown-session"
        frames: list[memoryview] = []
        tree = codec.encode_tree(payload, frames=frames)
        offsets, used = [], 0
        for frame in frames:
            used += -used % ALIGN
            offsets.append(used)
            used += len(frame)
        with session.lock:
            segment = session.segment
            if segment.closed:
                return None, "unknown-session"
            if not segment.ensure(used, self.config.max_segment_bytes):
                return None, "too-large"
            slot, generation = segment.write(frames, offsets, used)
            descriptor = {"segment": segment.name, "size": segment.size,
                          "layout": segment.layout, "slot": slot, "generation": generation,
                          "used": used,
                          "buffers": [(o, len(f)) for o, f in zip(offsets, frames, strict=True)],
                          "tree": tree}
        return pickle.dumps(descriptor, protocol=5), "ok"

    def _close_session(self, session: _Session) -> None:
        with session.lock:
            session.segment.close()

    def names(self) -> list[str]:
        """The live segments' names (for ``/harness/info`` and tests)."""
        with self._guard:
            return [s.segment.name for s in self._sessions.values()]

    def close(self) -> None:
        """Close every session and unlink its segment (idempotent)."""
        with self._guard:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            self._close_session(session)
        atexit.unregister(self.close)
