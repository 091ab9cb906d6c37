"""``open_runtime``: the ``harness_bt.bridges`` entry point ``zmq`` (``harness run --runtime
URL``): a :class:`ZmqRuntime`, the episode protocol of :mod:`harness_bt.runtime.episodes` over a
:class:`~runtime_bridge.zmq.ZmqBridge` to a runtime server.

A runtime server owns its control loop and its scene, so the harness runs on wall-clock time
(:attr:`ZmqRuntime.clock` is the system clock, paced to one harness tick per
``control_period_s``) and the episode is what the runtime offers: one run against its current
scene (a robot's cell, or the built-in simulator's endless episode). The simulator's verdict is
reported only when the runtime can tell it (a ``metric`` in its HELLO answer); otherwise it is
None, never inferred.

Opening takes a new control epoch: one more than both the runtime's epoch and
``RunOptions.runtime_settings.min_epoch`` (a resumed run passes the epoch of the harness it
replaces),
announced with a heartbeat before anything else, so commands and cancels of any earlier
harness are refused from then on (fencing). A runtime that refuses this harness's heartbeat
(a newer one took over) sets :attr:`ZmqRuntime.stop_reason` to ``aborted_fenced``: the run
stops instead of commanding on.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import zmq

from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.ledger import Command
from harness_bt.runtime.bridge import Ack, PollResult, RuntimeStatus
from harness_bt.runtime.episodes import EpisodeEnd, EpisodeStart, RunOptions
from harness_bt.runtime.observation import Observation
from runtime_bridge.paced import PacedClock, PacedRuntime
from runtime_bridge.zmq.bridge import ZmqBridge, ZmqBridgeConfig
from runtime_bridge.zmq.wire import WireError

__all__ = ["DEFAULT_TICK_S", "PacedClock", "ZmqRuntime", "open_runtime"]

#: The harness's tick period against a runtime server (the runtime steps at its own rate).
DEFAULT_TICK_S = 0.05
_SERVE_HINT = ("start one with: harness runtime serve --backend sim --bind {url} "
               "(or check the address and that nothing blocks the port)")


class ZmqRuntime(PacedRuntime):
    """See the module docstring. ``connect_timeout_s`` bounds the first HELLO (and the wait
    for the first observation). ``telemetry``: the PUB endpoint to subscribe to (None: the one
    the runtime announces in HELLO; "": none)."""

    def __init__(self, url: str, *, service: str = "manip", min_epoch: int = 0,
                 tick_s: float | None = None, connect_timeout_s: float = 3.0,
                 telemetry: str | None = None, context: zmq.Context | None = None) -> None:
        self.url = url
        self._clock = PacedClock()
        try:
            self.bridge = ZmqBridge(ZmqBridgeConfig(endpoint=url, service=service,
                                                    telemetry=telemetry),
                                    context=context, clock=self._clock)
        except zmq.ZMQError as exc:
            raise DefinitionError("INVALID_RUNTIME_URL", f"--runtime {url!r} is not a ZeroMQ "
                                  f"endpoint ({exc})", where=url,
                                  fix="write it like tcp://127.0.0.1:5555") from exc
        try:
            self.info = self._hello(connect_timeout_s)
            runtime_epoch = int(self.info.get("epoch") or 0)
            self.epoch = max(runtime_epoch, int(min_epoch)) + 1
            self.bridge.epoch = self.epoch
            beat = self.bridge.heartbeat([])  # take the epoch before anything else is sent
            if not beat.accepted:
                raise BridgeError("FENCED", f"the runtime at {url} refused epoch {self.epoch}: "
                                  f"{beat.reason}", where=url,
                                  fix="another harness took over; resume again to take a "
                                  "newer epoch")
        except BaseException:
            self.bridge.close()
            raise
        period = float(self.info.get("control_period_s") or DEFAULT_TICK_S)
        self._tick_s = float(tick_s) if tick_s else max(period, DEFAULT_TICK_S)
        self._connect_timeout_s = connect_timeout_s
        self._pending: list[Observation] = []
        #: Set when the run must end (``aborted_fenced``: a newer epoch took over).
        self.stop_reason: str | None = None
        self._started = False
        self._index = -1
        self._over = False

    def _hello(self, timeout_s: float) -> dict[str, Any]:
        tries = 3
        try:
            return self.bridge.hello(retries=tries, timeout_s=timeout_s / tries)
        except WireError as exc:
            raise BridgeError(
                "RUNTIME_UNREACHABLE", f"no runtime answered at {self.url} within "
                f"{timeout_s:g} s ({tries} tries): {exc.message}", where=self.url,
                fix=_SERVE_HINT.format(url=self.url)) from exc

    def executable_skills(self) -> frozenset[str] | None:
        """The skills the runtime's executors run, as its HELLO answer says (None: it does
        not say)."""
        skills = self.info.get("skills")
        if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
            return None
        return frozenset(skills)

    # ------------------------------------------------------------------ EpisodeRuntime

    def start_episode(self) -> EpisodeStart | None:
        """The one run against the runtime's current scene (None the second time)."""
        if self._started:
            return None
        self._started = True
        self._index = 0
        deadline = time.monotonic() + self._connect_timeout_s
        while not self._pending and time.monotonic() < deadline:
            result = self.bridge.poll()  # nothing is followed yet: telemetry only
            self._pending.extend(result.observations)
            if not self._pending:
                time.sleep(0.02)
        first = self._pending[0] if self._pending else None
        return EpisodeStart(0, "" if first is None else first.instruction,
                            "0" if first is None else first.worker_id,
                            {"runtime": self.url, "boot_id": self.info.get("boot_id"),
                             "epoch": self.epoch,
                             "first_observation": first is not None})

    def finish_episode(self, *, max_hold_steps: int | None = None) -> EpisodeEnd:
        """The runtime holds the robot itself; nothing to wait for."""
        self._over = True
        metric = self.final_metric()
        verdict: bool | None = None
        return EpisodeEnd(max(self._index, 0), "not_judged", verdict, 0, 0, metric,
                          {"runtime": self.url, "epoch": self.epoch,
                           "boot_id": self.info.get("boot_id")})

    def final_metric(self) -> Mapping[str, float] | None:
        try:
            info = self.bridge.hello(retries=1, timeout_s=0.5)
        except WireError:
            return None
        metric = info.get("metric")
        return dict(metric) if isinstance(metric, Mapping) and metric else None

    # ------------------------------------------------------------------ RuntimeBridge

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        return self.bridge.dispatch(command, start_budget_ms=start_budget_ms)

    def cancel(self, command_id: str) -> Ack:
        return self.bridge.cancel(command_id)

    def query(self, command_id: str) -> RuntimeStatus:
        return self.bridge.query(command_id)

    def poll(self) -> PollResult:
        result = self.bridge.poll()
        for notice in result.notices:
            if notice.kind == "fenced" and self.stop_reason is None:
                self.stop_reason = "aborted_fenced"  # a newer harness took over: stop
        if self._pending:
            first, self._pending = self._pending, []
            return PollResult(result.events, tuple(first) + result.observations,
                              result.notices)
        return result

    def close(self) -> None:
        self.bridge.close()


def open_runtime(options: RunOptions) -> ZmqRuntime:
    """The runtime server at ``options.runtime_url``. ``options.runtime_settings`` may hold
    ``service``,
    ``min_epoch``, ``tick_s``, ``connect_timeout_s`` and ``telemetry`` (the PUB endpoint, when
    not the one the runtime announces)."""
    url = options.runtime_url
    if not url:
        raise DefinitionError("NO_RUNTIME_URL", "the zmq bridge needs a runtime address",
                              fix="pass --runtime tcp://127.0.0.1:5555")
    refused = [name for name, bad in (
        ("--sim", bool(options.sim_url)), ("--inject", bool(options.faults)),
        ("--camera", options.cameras is not None), ("--episodes", options.episodes != 1),
        ("--num-steps", options.runtime_settings.num_steps is not None)) if bad]
    if refused:
        raise DefinitionError(
            "UNSUPPORTED_OPTION", f"{', '.join(refused)} configure the built-in simulator or "
            f"episodes; a runtime server at {url} runs its own scene, one run per harness run",
            where=url, fix="drop them, or start the runtime with the settings you want")
    extra = options.runtime_settings.given()
    return ZmqRuntime(url, service=str(extra.get("service", "manip")),
                      min_epoch=int(extra.get("min_epoch", 0)),
                      tick_s=extra.get("tick_s"),
                      connect_timeout_s=float(extra.get("connect_timeout_s", 3.0)),
                      telemetry=None if extra.get("telemetry") is None
                      else str(extra["telemetry"]))
