"""Configuration and answers of the executor host (:mod:`runtime_bridge.host`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness_bt.errors import BridgeError
from harness_bt.ledger import CommandEvent
from harness_bt.runtime.bridge import RuntimeState
from harness_bt.runtime.observation import Observation

__all__ = ["EventBatch", "HeartbeatResult", "HostConfig", "StepResult"]


@dataclass(frozen=True, slots=True)
class HostConfig:
    """``lease_s``: how long a command runs without a heartbeat (None: no leases, for an
    in-process runtime that cannot outlive its harness). ``retention_s``: how long a finished
    record is kept for dedup and query. ``stop_timeout_s``: how long an executor may take to
    confirm a stop before it is held by force. ``cache_size``: finished records kept in memory
    (the rest are read from the journal). ``event_log_size``: events kept for ``events_since``."""

    lease_s: float | None = 1.0
    retention_s: float = 24 * 3600.0
    stop_timeout_s: float = 1.0
    cache_size: int = 1024
    event_log_size: int = 10_000
    purge_interval_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("retention_s", "stop_timeout_s", "purge_interval_s", "lease_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise BridgeError("INVALID_CONFIG", f"HostConfig.{name}={value!r} must be > 0")
        for name in ("cache_size", "event_log_size"):
            if getattr(self, name) < 1:
                raise BridgeError("INVALID_CONFIG", f"HostConfig.{name} must be at least 1")


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """``accepted`` False: refused (stale epoch), nothing renewed. ``states``: every asked-for
    command's state (NOT_FOUND for ids the host never saw)."""

    epoch: int
    accepted: bool
    reason: str = ""
    renewed: tuple[str, ...] = ()
    states: Mapping[str, RuntimeState] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EventBatch:
    """Events after a cursor. ``boot_id`` changes when the host restarts (cursors restart with
    it); ``gap`` True means events between the cursor and this batch were dropped from the
    log: query the commands you follow."""

    boot_id: str
    events: tuple[CommandEvent, ...]
    next_cursor: int
    gap: bool = False


@dataclass(frozen=True, slots=True)
class StepResult:
    action: Mapping[str, Any]
    observation: Observation
    events: tuple[CommandEvent, ...]
