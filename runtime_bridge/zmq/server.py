"""The ZeroMQ runtime server: an executor host, its control loop, a broker, telemetry.

Threads and what each owns:

- the **I/O thread** (a :class:`Broker` bound at ``bind``, or a :class:`ServiceWorker`
  connected to an external broker at ``connect``) owns the request socket and the telemetry
  PUB socket; it answers the ``manip`` service's requests by calling the host;
- the **control thread** keeps the control period: every period it hands the step's
  bookkeeping (protection, the executors, merging, journaling) to the broker's thread through
  its own ``inproc`` socket (:meth:`Broker.inline`), steps the backend with the action that
  comes back (holding when idle), and hands robot state and progress to the publisher's
  latest-value store. The broker answers the requests that arrive meanwhile between two
  commands of the step, on its own thread, so an answer never waits for the interpreter or a
  lock held by a step. Served as a worker of an external broker, the control thread runs the
  whole step itself (the host's lock and ``answering`` keep answers first there);
- the **journal thread** (with a journal file) folds the journal's append log into SQLite and
  checkpoints SQLite's write-ahead log, so neither an answer nor a control step waits for a
  SQLite transaction or a sync to disk.

The host is thread-safe; its journal
(:class:`~runtime_bridge.host.record_log.LoggedRuntimeJournal`) makes every answer durable
before it leaves, with one append to a file.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import zmq

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import BridgeError
from harness_bt.runtime.backend import Backend
from harness_bt.runtime.executor import ExecutorFactory
from runtime_bridge.host import ExecutorHost, HostConfig, PlanOn, StepResult
from runtime_bridge.host.record_log import LoggedRuntimeJournal
from runtime_bridge.zmq.broker import Broker, BrokerConfig
from runtime_bridge.zmq.observations import observation_to_telemetry
from runtime_bridge.zmq.service import RuntimeService
from runtime_bridge.zmq.telemetry import TelemetryPublisher
from runtime_bridge.zmq.wire import Limits
from runtime_bridge.zmq.worker import ServiceWorker, WorkerConfig

__all__ = ["RuntimeServer", "RuntimeServerConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RuntimeServerConfig:
    """``bind``: where this server's broker listens (loopback by default; ``:*`` for any free
    port). ``connect``: serve as a worker of an external broker instead. ``telemetry``: where
    PUB binds (None: no telemetry). ``journal``: the runtime's SQLite file (None: memory only,
    forgets everything on restart). ``fold_interval_s``: how often the journal thread moves the
    journal's append log into SQLite; ``checkpoint_interval_s``: how often it checkpoints
    SQLite (when something was written; a checkpoint's disk writes slow the work beside it, so
    fewer, larger ones disturb fewer answers)."""

    bind: str = "tcp://127.0.0.1:5555"
    connect: str | None = None
    telemetry: str | None = "tcp://127.0.0.1:5556"
    service: str = "manip"
    journal: str | None = "runtime.db"
    host: HostConfig = field(default_factory=HostConfig)
    heartbeat_interval_s: float = 1.0
    step_when_idle: bool = True
    limits: Limits = field(default_factory=Limits)
    fold_interval_s: float = 0.25
    checkpoint_interval_s: float = 1.0


class RuntimeServer:
    """See the module docstring. ``start()`` returns the endpoints; ``stop()`` joins both
    threads and closes every socket and the journal."""

    def __init__(self, backend: Backend, executors: ExecutorFactory,
                 config: RuntimeServerConfig | None = None, *,
                 context: zmq.Context | None = None, clock: Clock | None = None) -> None:
        self.config = cfg = config or RuntimeServerConfig()
        self.backend = backend
        self.clock: Clock = clock or SystemClock()
        self.context = context or zmq.Context.instance()
        self._journal = (None if cfg.journal is None
                         else LoggedRuntimeJournal(cfg.journal))
        self.host = ExecutorHost(backend, executors, journal=self._journal, clock=self.clock,
                                 config=cfg.host)
        self.publisher = (None if cfg.telemetry is None
                          else TelemetryPublisher(cfg.telemetry, clock=self.clock))
        publisher = self.publisher
        self.service = RuntimeService(self.host, name=cfg.service, info={
            "telemetry": lambda: None if publisher is None else publisher.endpoint,
            # the simulator's final metric, once a backend that has one sent it
            "metric": lambda: getattr(backend, "metric", None)})
        plugins = [] if self.publisher is None else [self.publisher]
        self._io: Broker | ServiceWorker
        if cfg.connect is None:
            # no guard: the step's bookkeeping runs on the broker's own thread (between two
            # messages, or answering them itself), so there is no step to make step aside
            self._io = Broker(BrokerConfig(bind=cfg.bind, limits=cfg.limits,
                                           heartbeat_interval_s=cfg.heartbeat_interval_s),
                              services=[self.service], plugins=plugins, context=self.context,
                              clock=self.clock)
        else:
            self._io = ServiceWorker(self.service, WorkerConfig(
                broker=cfg.connect, limits=cfg.limits,
                heartbeat_interval_s=cfg.heartbeat_interval_s), plugins=plugins,
                context=self.context, clock=self.clock, guard=self.host.answering)
        self._stop = threading.Event()
        self._control: threading.Thread | None = None
        self._journal_thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        self.endpoints: dict[str, Any] = {}

    def start(self) -> dict[str, Any]:
        """Start the I/O and control threads; returns ``{"bind"|"connect", "telemetry",
        "service", "journal", "boot_id"}``."""
        if isinstance(self._io, Broker):
            self.endpoints["bind"] = self._io.start()
        else:
            self._io.start()
            self.endpoints["connect"] = self.config.connect
        self.endpoints["telemetry"] = (None if self.publisher is None
                                       else self.publisher.wait_bound())
        self.endpoints.update(service=self.config.service, journal=self.config.journal,
                              boot_id=self.host.boot_id, restarted=list(self.host.restarted))
        self.host.reset()
        self._control = threading.Thread(target=self._control_loop, name="harness-control",
                                         daemon=True)
        self._control.start()
        if self._journal is not None:
            self._journal_thread = threading.Thread(target=self._journal_loop,
                                                 args=(self._journal,), name="harness-journal",
                                                 daemon=True)
            self._journal_thread.start()
        return dict(self.endpoints)

    def _journal_loop(self, journal: LoggedRuntimeJournal) -> None:
        cfg = self.config
        seen = journal.commits
        next_checkpoint = self.clock.monotonic() + cfg.checkpoint_interval_s
        while not self._stop.wait(cfg.fold_interval_s):
            try:
                journal.fold()
                if self.clock.monotonic() >= next_checkpoint and journal.commits != seen:
                    seen = journal.commits
                    next_checkpoint = self.clock.monotonic() + cfg.checkpoint_interval_s
                    journal.checkpoint()
            except Exception as exc:  # the log keeps every record meanwhile
                log.warning("the journal thread could not fold or checkpoint: %s", exc)

    def _control_loop(self) -> None:
        # With its own broker, the step's bookkeeping runs on the broker's thread, which
        # answers requests between two commands of it; the backend steps here.
        caller = self._io.inline() if isinstance(self._io, Broker) else None
        try:
            self._control_steps(None if caller is None else caller.call)
        finally:
            if caller is not None:
                caller.close()

    def _control_steps(self, plan_on: PlanOn | None) -> None:
        period = self.backend.control_period_s
        next_at = self.clock.monotonic()
        while not self._stop.is_set():
            if self.config.step_when_idle or self.host.active():
                try:
                    self._publish(self.host.step(plan_on=plan_on))
                except BridgeError as exc:
                    if exc.code != "BACKEND_ERROR":
                        self._fail(exc)
                        break
                    log.warning("%s", exc)
                except Exception as exc:  # a bug: stop serving rather than stop stepping
                    self._fail(exc)
                    break
            next_at += period
            now = self.clock.monotonic()
            if next_at < now - period:  # fell behind (a slow step): do not try to catch up
                next_at = now
            self._stop.wait(max(0.0, next_at - now))

    def _fail(self, exc: BaseException) -> None:
        self.failure = exc
        log.error("the control loop stopped: %r; the server stops", exc)
        self._stop.set()

    def _publish(self, result: StepResult) -> None:
        pub = self.publisher
        if pub is None:
            return
        body, arrays = observation_to_telemetry(result.observation, wall=self.clock.wall(),
                                                active=list(self.host.active()))
        pub.put("state", body, arrays)
        for event in result.events:
            done = str(event.kind) != "progress" and str(event.kind) != "started"
            pub.put(f"progress/{event.command_id}",
                    {"command_id": event.command_id, "kind": str(event.kind),
                     "progress": event.progress, "event_seq": event.seq}, last=done)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the server stops (``stop()`` from another thread, or a failure)."""
        return self._stop.wait(timeout_s)

    def stop(self) -> None:
        self._stop.set()
        for thread in (self._control, self._journal_thread):
            if thread is not None:
                thread.join(5.0)
        self._io.stop()
        self.host.close()
