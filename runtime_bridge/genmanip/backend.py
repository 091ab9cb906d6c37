"""Any GenManip server as an executor-host :class:`~harness_bt.runtime.backend.Backend`, through
:class:`~runtime_bridge.genmanip.GenManipClient` (one worker).

``reset`` creates the worker on first use, then asks for the next episode; ``step`` sends one
action and returns the next observation (an episode that ended inside the step answers with the
next episode's first observation, ``reset`` True). When the server has no episode left,
``step`` / ``reset`` raise :class:`~harness_bt.errors.BridgeError` ``EPISODES_DONE`` (``done``
True, ``metric`` the final metric). A step whose answer was lost raises the client's
``StepOutcomeUnknown``; the client settles it from the next observation's timestep. The
client's notices (rollover, final metric, unknown and settled steps) pass through
``notices()``, the faults a harness-bt server injected through ``faults()``. ``num_steps``
and ``judged`` (False when the server's scenes have no success condition: its episodes end
only by timeout, which is then no verdict) come from a harness-bt server's
``GET /harness/sim`` (None and True from other servers).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

from harness_bt.errors import BridgeError
from harness_bt.runtime.bridge import BridgeNotice
from harness_bt.runtime.faults import FaultFired
from harness_bt.runtime.observation import Observation
from runtime_bridge.genmanip.client import ClientOptions, GenManipClient, Timeouts, WorkerResult

__all__ = ["GenManipBackend", "make_backend"]


class GenManipBackend:
    """See the module docstring."""

    def __init__(self, url: str, dt: float = 1.0 / 30.0, *, worker_id: str = "0",
                 timeouts: Timeouts | None = None, token: str | None = None,
                 client: GenManipClient | None = None, kill_on_close: bool = True) -> None:
        self.url = url
        self.worker_id = str(worker_id)
        self.control_period_s = float(dt)
        self.client = client or GenManipClient(
            url,
            [self.worker_id],
            options=ClientOptions(timeouts=timeouts, token=token),
        )
        self.kill_on_close = kill_on_close
        self.done = False
        self.metric: dict[str, float] | None = None
        self.num_steps: int | None = None
        self.sim_info: dict[str, Any] | None = None
        self.judged = True
        self._created = False
        self._faults: list[FaultFired] = []
        self._ended: str | None = None

    def reset(self) -> Observation:
        if not self._created:
            self.client.create_workers()
            self._created = True
            self.sim_info = self.client.sim_info()
            steps = (self.sim_info or {}).get("num_steps")
            self.num_steps = int(steps) if isinstance(steps, int) else None
            scenes = (self.sim_info or {}).get("scenes")
            if isinstance(scenes, Mapping) and scenes:
                self.judged = all(not isinstance(s, Mapping) or s.get("judged") is not False
                                  for s in scenes.values())
        return self._read(self.client.reset()[self.worker_id])

    def step(self, action: Mapping[str, Any]) -> Observation:
        if self.done:
            raise self._finished()
        return self._read(self.client.step({self.worker_id: dict(action)})[self.worker_id])

    def notices(self) -> list[BridgeNotice]:
        return self.client.notices()

    def faults(self) -> list[FaultFired]:
        """The injected faults the server reported since the last call, oldest first."""
        out, self._faults = self._faults, []
        return out

    def last_ended(self) -> str | None:
        """How the episode that ended last ended, when the server says (a harness-bt server's
        ``episode_ended``; GenManip's own says nothing: None)."""
        return self._ended

    def close(self) -> None:
        if self.kill_on_close and self._created:
            with contextlib.suppress(BridgeError):
                self.client.kill()
        self.client.close()

    def _read(self, result: WorkerResult) -> Observation:
        self._faults.extend(dataclasses.replace(
            f, sim_time_s=round(f.timestep * self.control_period_s, 4)) for f in result.faults)
        if result.ended is not None:
            self._ended = result.ended
        if result.obs is None:
            self.done = True
            self.metric = dict(result.metric or {})
            raise self._finished()
        return result.obs

    def _finished(self) -> BridgeError:
        return BridgeError("EPISODES_DONE", f"GenManip worker {self.worker_id} at {self.url} has "
                           f"no episode left (final metric {self.metric})", where=self.url,
                           fix="start the server with more episodes",
                           details={"metric": self.metric})


def make_backend(dt: float = 1.0 / 30.0, *, url: str) -> GenManipBackend:
    """The ``genmanip`` backend (``harness_bt.backends`` entry point): the GenManip server at
    ``url``, stepped ``dt`` seconds per control step (``--backend URL``)."""
    return GenManipBackend(url, dt)
