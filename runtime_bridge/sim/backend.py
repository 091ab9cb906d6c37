"""The built-in simulator as an executor-host :class:`~harness_bt.runtime.backend.Backend`, stepped
in-process (no HTTP): what ``harness runtime serve --backend sim`` and ``harness run`` drive.
It reads the simulator's typed answers (:meth:`SimEnv.advance`): no GenManip dict is built or
checked per step, and a refusal is the project's :class:`~harness_bt.errors.BridgeError`.

It speaks GenManip semantics: ``reset`` starts the next episode; an episode ends inside
``step`` (success or ``num_steps``) and that same step returns the next episode's first
observation (``reset`` True). When every episode is done, ``step`` raises
:class:`~harness_bt.errors.BridgeError` ``EPISODES_DONE`` (``done`` turns True and ``metric``
holds the final ``{task: mean success}``). Rollovers and the final metric are also reported as
:class:`~harness_bt.runtime.bridge.BridgeNotice` (``notices()``), as the GenManip client does;
the injected faults that fired, as :class:`~harness_bt.runtime.faults.FaultFired` (``faults()``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness_bt.errors import BridgeError
from harness_bt.runtime.bridge import BridgeNotice
from harness_bt.runtime.faults import FaultFired, faults_from_wire
from harness_bt.runtime.observation import Observation
from runtime_bridge.sim.config import SimConfig
from runtime_bridge.sim.env import SimAnswer, SimEnv
from runtime_bridge.sim.frames import FrameDemand
from runtime_bridge.sim.scenes import SimScene

__all__ = ["SERVED_CAMERAS", "SimBackend", "make_backend"]


class SimBackend:
    """See the module docstring. ``env`` is the :class:`SimEnv` (its ``ground_truth()`` and
    ``results()`` are for tests and benchmarks only); ``scenes``: the config's scenes, loaded
    already (default: loaded here)."""

    def __init__(self, config: SimConfig | None = None, *, worker_id: str = "0",
                 scenes: Mapping[str, SimScene] | None = None) -> None:
        self.config = config or SimConfig()
        self.env = SimEnv(self.config, worker_id=worker_id, scenes=scenes)
        self.worker_id = worker_id
        self.control_period_s = self.config.control_dt
        self.num_steps: int | None = self.config.num_steps
        self.done = False
        self.metric: dict[str, float] | None = None
        #: whether the simulator judges its episodes (every scene has a success condition)
        self.judged = all(s.judged for s in self.env.scenes.values())
        self.episodes = 0
        self._last_timestep: int | None = None
        self._notices: list[BridgeNotice] = []
        self._faults: list[FaultFired] = []

    def reset(self) -> Observation:
        return self._read(self.env.next_episode(), "/reset")

    def step(self, action: Mapping[str, Any]) -> Observation:
        if self.done:
            raise self._finished()
        return self._read(self.env.advance(action), "/step")

    def end_episode(self) -> Observation | None:
        """End the episode now when the simulator judges it failed (:meth:`SimEnv.end_episode
        <runtime_bridge.sim.env.SimEnv.end_episode>`): the next episode's first observation;
        None while its success condition holds. After the last episode, raises
        ``EPISODES_DONE`` as :meth:`step` does."""
        if self.done:
            raise self._finished()
        entry = self.env.end_episode()
        return None if entry is None else self._read(entry, "end_episode")

    def last_ended(self) -> str | None:
        """How the episode that ended last ended, as the simulator recorded it (``success``,
        ``timeout``, ``task_ended``, ``not_judged``), None before any: a success can come in an
        episode's last step, which the step count alone reads as running out of steps."""
        last = self.env.book.last()
        return None if last is None else str(last["ended"])

    @property
    def frames(self) -> FrameDemand | None:
        """Frame requests for the next step, when the simulator renders on demand."""
        return self.env.frames if self.config.render == "on_demand" else None

    def observe_now(self, cameras: set[str] | None = None) -> Observation:
        """The latest observation with its frames rendered now (``render="on_demand"``; see
        :meth:`SimEnv.frames_now`)."""
        return self.env.frames_now(cameras)

    def notices(self) -> list[BridgeNotice]:
        out, self._notices = self._notices, []
        return out

    def faults(self) -> list[FaultFired]:
        """The injected faults that fired since the last call, oldest first."""
        out, self._faults = self._faults, []
        return out

    def close(self) -> None:
        self.env.close()

    def _read(self, answer: SimAnswer, route: str) -> Observation:
        self._faults.extend(faults_from_wire(list(answer.faults) or None,
                                             worker_id=self.worker_id,
                                             step_s=self.control_period_s,
                                             where=f"sim worker {self.worker_id} {route} faults"))
        obs = answer.observation
        if obs is None:
            if not self.done:
                self.done = True
                self.metric = dict(answer.metric or {})
                self._notices.append(BridgeNotice("final_metric", self.worker_id, {
                    "metric": self.metric, "route": route,
                    "previous_timestep": self._last_timestep}))
            raise self._finished()
        if obs.reset:
            self.episodes += 1
            if route == "/step":
                self._notices.append(BridgeNotice("episode_rollover", self.worker_id, {
                    "previous_timestep": self._last_timestep, "episode": self.episodes}))
        self._last_timestep = obs.timestep
        return obs

    def _finished(self) -> BridgeError:
        return BridgeError("EPISODES_DONE", f"sim worker {self.worker_id}: every episode is "
                           f"done (final metric {self.metric})", where="sim backend",
                           fix="start a new simulator for more episodes",
                           details={"metric": self.metric})


#: The cameras of ``--backend sim`` when not told otherwise: one modest front camera.
SERVED_CAMERAS = ("front:256x192:fov=40",)


def make_backend(dt: float = 1.0 / 30.0, *, scene: str = "pick_cube", seed: int = 0,
                 cameras: Sequence[str] = SERVED_CAMERAS, render: str = "all",
                 params: Mapping[str, Any] | None = None,
                 config: SimConfig | None = None) -> SimBackend:
    """The ``sim`` backend (``harness_bt.backends`` entry point, ``--backend sim``): a
    built-in simulator stepping ``dt`` seconds per control step. Without ``config`` it stands
    in for a robot: ``scene`` (a name or a scene file, with ``params``) laid out from ``seed``,
    one episode that does not end on its own, ``cameras`` (camera specs) rendered as ``render``
    says. ``config``, when given, replaces all of that (only its ``control_dt`` is set to
    ``dt``).

    An unknown or faulty scene raises :class:`~harness_bt.errors.DefinitionError`
    (``UNKNOWN_SCENE`` naming the known scenes, or ``INVALID_SCENE`` with every problem),
    before anything is built."""
    from harness_bt.authoring.scenes import load_scene
    from runtime_bridge.sim.config import parse_camera_spec

    if config is None:
        load_scene(scene, params=params)  # refused here, before a world is built
        config = SimConfig(scenes=(scene,), params=dict(params or {}), seed=seed,
                           num_steps=2**31 - 1,
                           success_hold_steps=2**31 - 1, control_dt=dt, render=render,
                           cameras=tuple(parse_camera_spec(c) for c in cameras))
    if abs(config.control_dt - dt) > 1e-12:
        config = replace(config, control_dt=dt)
    return SimBackend(config)
