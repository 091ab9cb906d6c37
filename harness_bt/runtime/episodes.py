"""The seam between ``harness run`` and an episodic runtime (a step-driven simulator).

An :class:`EpisodeRuntime` is a :class:`~harness_bt.RuntimeBridge` that also runs
episodes: ``start_episode`` queues the episode's first observation for the next ``poll``;
each later ``poll`` advances the simulator one control step (so the runtime's :attr:`clock`,
one ``control_period_s`` per tick, is the simulation's time); ``episode_over`` turns True when
the simulator ends the episode on its own; ``finish_episode`` holds the robot still until the
simulator ends the episode and reports the simulator's verdict.

Runtimes are found by name in the ``harness_bt.bridges`` entry-point group; each entry point is
a :data:`RuntimeFactory` taking :class:`RunOptions`. ``harness_bt`` never imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness_bt.clock import Clock
from harness_bt.plugins import Group, Registry
from harness_bt.runtime.bridge import RuntimeBridge
from harness_bt.runtime.settings import RuntimeSettings
from harness_bt.scene.document import Scene

__all__ = [
    "EpisodeEnd",
    "EpisodeRuntime",
    "EpisodeStart",
    "RunOptions",
    "RuntimeFactory",
    "SkillListing",
    "runtime_registry",
]



@dataclass(frozen=True, slots=True)
class RunOptions:
    """What ``harness run`` asks of a runtime.

    ``task``: the task's name. ``scene``: the simulator scene to run (a registered scene's
    name or a scene file's path; None: the runtime's own, and the built-in simulator refuses
    to guess). ``params``: the task's parameter values
    (name -> value); a scene that declares a parameter of the same name takes its value.
    ``sim_url``: a GenManip server to drive (None: start the built-in simulator in-process).
    ``episodes`` / ``seed``: how many episodes, from which layout seed. ``faults``: fault rates
    for the built-in simulator (``slip``, ``nudge``, ``occlude``, ``drop``, ``delay``).
    ``cameras``: camera specs for the built-in simulator (None: the runtime's default).
    ``runtime_url``: a runtime server to drive (``harness run --runtime URL``).
    ``runtime_settings``: runtime-specific settings (:class:`RuntimeSettings`, typed).
    ``scene_document``: the scene ``scene`` names, read and checked
    (:func:`harness_bt.authoring.scenes.with_scene` loads it); the run's
    perception takes its catalogue of objects from it.

    The harness's side of the run: ``bridge`` (the ``harness_bt.bridges`` entry point that
    opens the runtime), ``perception`` (the ``harness_bt.perception`` entry point; None: the
    only one installed), ``trace`` (the JSONL trace; one file per episode when there are
    several: NAME.epN.jsonl), ``max_ticks`` (an episode still running then ends
    ``max_ticks``), ``record_frames`` (camera frames per second per camera recorded beside
    the trace; None: none).
    """

    task: str
    sim_url: str | None = None
    episodes: int = 1
    seed: int = 0
    faults: Mapping[str, float] = field(default_factory=dict)
    cameras: tuple[str, ...] | None = None
    runtime_settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    runtime_url: str | None = None
    scene: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    scene_document: Scene | None = None
    bridge: str = "inproc"
    perception: str | None = None
    trace: str | None = None
    max_ticks: int = 6000
    record_frames: float | None = None


@dataclass(frozen=True, slots=True)
class EpisodeStart:
    """An episode began: its index (0-based, in this run), the instruction, the worker."""

    index: int
    instruction: str = ""
    worker_id: str = "0"
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EpisodeEnd:
    """How the simulator saw an episode end.

    ``ended_by``: ``success`` / ``timeout`` (the simulator ended it), ``task_ended`` (the
    simulator ended it when asked after the task ended, judging it failed), ``not_ended`` (it
    had not ended after the hold limit; the next episode skips it), ``error``. ``sim_success``: the
    simulator's verdict (True / False), None when it cannot be told. ``steps``: simulator steps
    in the episode. ``metric``: the simulator's final metric, when this was its last episode.
    """

    index: int
    ended_by: str
    sim_success: bool | None
    steps: int
    hold_steps: int = 0
    metric: Mapping[str, float] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "ended_by": self.ended_by, "sim_success": self.sim_success,
                "steps": self.steps, "hold_steps": self.hold_steps,
                "metric": None if self.metric is None else dict(self.metric),
                "details": dict(self.details)}


@runtime_checkable
class EpisodeRuntime(RuntimeBridge, Protocol):
    """A runtime bridge over an episodic, step-driven simulator (see the module docstring)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def control_period_s(self) -> float: ...

    @property
    def episode_over(self) -> bool: ...

    def start_episode(self) -> EpisodeStart | None:
        """Begin the next episode (None when the simulator has none left)."""
        ...

    def finish_episode(self, *, max_hold_steps: int | None = None) -> EpisodeEnd:
        """Hold still until the simulator ends the episode (at most ``max_hold_steps``)."""
        ...

    def final_metric(self) -> Mapping[str, float] | None:
        """The simulator's final metric, once it has sent it."""
        ...


@runtime_checkable
class SkillListing(Protocol):
    """A runtime that can say which skills it can execute, so a task that needs another is
    refused before it starts (``harness run`` checks)."""

    def executable_skills(self) -> frozenset[str] | None:
        """The skills its executors run; None when it cannot tell."""
        ...


#: Builds a runtime for one ``harness run``.
RuntimeFactory = Callable[[RunOptions], EpisodeRuntime]


def runtime_registry(*, entry_points: bool = False) -> Registry[RuntimeFactory]:
    """Runtime factories by name;
    with ``entry_points=True`` filled from the ``harness_bt.bridges`` entry points."""
    registry: Registry[RuntimeFactory] = Registry("bridge")
    if entry_points:
        registry.load(Group.BRIDGES)
    return registry
