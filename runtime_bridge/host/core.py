"""What the executor host knows: its commands' records, the active ones with their executors,
the resources they hold, the control epoch; how a record changes (an event staged for the
journal), and the answers read from them. :mod:`~runtime_bridge.host.intake` takes commands in,
:mod:`~runtime_bridge.host.step` runs the control step; both build on :class:`HostCore`."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import BridgeError
from harness_bt.ledger import CommandEvent, EventKind
from harness_bt.runtime.backend import Backend
from harness_bt.runtime.bridge import RuntimeState, RuntimeStatus
from harness_bt.runtime.executor import Executor, ExecutorFactory
from harness_bt.runtime.observation import Observation
from runtime_bridge.host.batching import JournalBatch
from runtime_bridge.host.giveway import GiveWay, GiveWayScheduler
from runtime_bridge.host.merge import ActionMerger
from runtime_bridge.host.record import RuntimeReason, RuntimeRecord
from runtime_bridge.host.record_store import MemoryRuntimeJournal, RuntimeJournal
from runtime_bridge.host.types import EventBatch, HostConfig

__all__ = ["Bookkeeping", "HostCore", "Live", "PlanOn"]


@dataclass(slots=True, eq=False)
class Live:
    """Runtime-only state of an active command (gone after a restart, by design)."""

    record: RuntimeRecord
    executor: Executor
    start_deadline: float
    lease_deadline: float | None
    started_at: float | None = None
    exec_deadline: float | None = None
    stop_deadline: float | None = None
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Bookkeeping:
    """A step's bookkeeping done: the time it ran at, the merged action, its events."""

    now: float
    action: Mapping[str, Any]
    events: tuple[CommandEvent, ...]


#: runs a step's bookkeeping (handed the give-way it may answer through) and returns its result
PlanOn = Callable[[Callable[[GiveWay], Bookkeeping]], Bookkeeping]


class HostCore:
    """The host's state and records (see the module docstring). Thread-safe through
    ``self._lock`` (the give-way scheduler's :class:`~runtime_bridge.host.giveway.HostLock`)."""

    def __init__(
        self,
        backend: Backend,
        executors: ExecutorFactory,
        *,
        journal: RuntimeJournal | None = None,
        clock: Clock | None = None,
        config: HostConfig | None = None,
    ) -> None:
        self.backend = backend
        self.executors = executors
        self.config = config or HostConfig()
        self.clock: Clock = clock or SystemClock()
        self._journal: RuntimeJournal = journal if journal is not None else MemoryRuntimeJournal()
        self._batch = JournalBatch(self._journal, log_size=self.config.event_log_size)
        #: when the step lets requests in (see :mod:`runtime_bridge.host.giveway`)
        self.scheduler = GiveWayScheduler(journal=self._batch.flush,
                                          check_open=self._check_open)
        self._lock = self.scheduler.lock
        self._step_lock = threading.Lock()
        self._active: dict[str, Live] = {}
        self._cache: OrderedDict[str, RuntimeRecord] = OrderedDict()
        self._holders: dict[str, str] = {}
        self._merger = ActionMerger()
        self._observation: Observation | None = None
        self._last_purge = self.clock.monotonic()
        self._closed = False
        self._epoch = int(self._journal.meta("epoch") or 0)
        boots = int(self._journal.meta("boots") or 0) + 1
        self.boot_id = f"{boots}-{uuid.uuid4().hex[:8]}"
        self._batch.meta["boots"] = str(boots)
        self.restarted: tuple[str, ...] = self._abort_unfinished()

    # ------------------------------------------------------------------ reading

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def cursor(self) -> int:
        """The index of the newest event in the log (start ``events_since`` here for news)."""
        return self._batch.log_index

    @property
    def observation(self) -> Observation | None:
        return self._observation

    def active(self) -> dict[str, RuntimeState]:
        with self._lock:
            return {cid: live.record.state for cid, live in self._active.items()}

    def observe(self, observation: Observation) -> None:
        """Replace the latest observation with one of the same step holding more (frames
        rendered after the step), so the executors' next step sees it."""
        with self._lock:
            self._observation = observation

    def active_executors(self) -> list[Executor]:
        """The executors of the active commands (e.g. to ask whether they read frames)."""
        with self._lock:
            return [live.executor for live in self._active.values()]

    def progress(self) -> dict[str, float | None]:
        """Latest progress of every active command (for telemetry)."""
        with self._lock:
            out: dict[str, float | None] = {}
            for cid, live in self._active.items():
                last = live.record.events[-1] if live.record.events else None
                out[cid] = None if last is None else last.progress
            return out

    def query(self, command_id: str) -> RuntimeStatus:
        """The record of ``command_id`` (NOT_FOUND if never seen or past its retention)."""
        with self._lock:
            rec = self._find(command_id)
            if rec is None:
                return RuntimeStatus(command_id, RuntimeState.NOT_FOUND,
                                     RuntimeReason.UNKNOWN_COMMAND.value)
            self._batch.reveal(command_id)
            return rec.status()

    def events_since(self, cursor: int, *, limit: int = 1000) -> EventBatch:
        with self._lock:
            events, nxt, gap = self._batch.events_since(cursor, limit)
            return EventBatch(self.boot_id, events, nxt, gap=gap)

    def answering(self) -> AbstractContextManager[None]:
        """``with host.answering():`` around the handling of one request, so a step steps
        aside while it is answered (see :mod:`runtime_bridge.host.giveway`)."""
        return self.scheduler.answering()

    # ------------------------------------------------------------------ records

    def _emit(self, rec: RuntimeRecord, kind: EventKind, reason: str,
              progress: float | None = None, data: Mapping[str, Any] | None = None) -> None:
        rec.last_seq += 1
        obs = self._observation
        event = CommandEvent(rec.command_id, rec.last_seq, kind, reason, progress,
                             None if obs is None else obs.timestep, dict(data or {}))
        rec.add_event(event)
        self._batch.stage(rec, event)

    def _end(self, rec: RuntimeRecord, state: RuntimeState, reason: str, kind: EventKind,
             data: Mapping[str, Any] | None = None, progress: float | None = None) -> None:
        rec.state = state
        rec.reason = reason
        rec.finished_wall = self.clock.wall()
        self._emit(rec, kind, reason, progress, data)
        self._remember(rec)

    def _remember(self, rec: RuntimeRecord) -> None:
        """Keep a finished record in the in-memory cache (the journal keeps them all)."""
        self._cache[rec.command_id] = rec
        self._cache.move_to_end(rec.command_id)
        while len(self._cache) > self.config.cache_size:
            self._cache.popitem(last=False)

    def _finish(self, live: Live, state: RuntimeState, reason: str, kind: EventKind,
                data: Mapping[str, Any] | None = None, progress: float | None = None) -> None:
        cid = live.record.command_id
        self._active.pop(cid, None)
        for res, holder in list(self._holders.items()):
            if holder == cid:
                del self._holders[res]
        self._end(live.record, state, reason, kind, data, progress)

    def _request_stop(self, live: Live, reason: str) -> None:
        """Ask an executor to stop (STOPPING); held by force after ``stop_timeout_s``."""
        live.record.state = RuntimeState.STOPPING
        live.record.reason = reason
        live.stop_reason = reason
        live.stop_deadline = self.clock.monotonic() + self.config.stop_timeout_s
        self._batch.dirty[live.record.command_id] = live.record
        try:
            live.executor.request_stop()
        except Exception as exc:
            self._finish(live, RuntimeState.STOPPED, f"{RuntimeReason.STOP_FORCED}: "
                         f"request_stop raised {exc!r}", EventKind.STOPPED, {"held": True})

    def _find(self, command_id: str) -> RuntimeRecord | None:
        live = self._active.get(command_id)
        if live is not None:
            return live.record
        rec = self._cache.get(command_id) or self._journal.get(command_id)
        if rec is not None and rec.finished:
            self._remember(rec)
        return rec

    def _take_over(self, epoch: int) -> None:
        if epoch > self._epoch:
            self._epoch = epoch
            self._batch.meta["epoch"] = str(epoch)

    def _abort_unfinished(self) -> tuple[str, ...]:
        ids = []
        for rec in self._journal.unfinished():
            was = rec.state.value
            self._end(rec, RuntimeState.ABORTED, RuntimeReason.RUNTIME_RESTARTED.value,
                      EventKind.ABORTED, {"was": was})
            ids.append(rec.command_id)
        self._batch.flush()
        return tuple(ids)

    def _purge(self, now: float) -> None:
        self._last_purge = now
        horizon = self.clock.wall() - self.config.retention_s
        self._journal.purge(horizon)
        for cid in [c for c, r in self._cache.items()
                    if r.finished_wall is not None and r.finished_wall < horizon]:
            del self._cache[cid]

    def _check_open(self) -> None:
        if self._closed:
            raise BridgeError("HOST_CLOSED", "the executor host is closed",
                              fix="build a new host on the same journal")

    def close(self) -> None:
        """Close the journal (the backend belongs to whoever built it)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._journal.close()

