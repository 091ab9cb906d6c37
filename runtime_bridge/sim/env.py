"""The simulator as a GenManip worker, usable in-process (no HTTP) or behind the server.

Two faces over one world:

- in-process (what :class:`~runtime_bridge.sim.backend.SimBackend` drives):
  :meth:`SimEnv.next_episode`, :meth:`SimEnv.advance` and :meth:`SimEnv.frames_now` answer
  with a :class:`SimAnswer` holding a typed :class:`~harness_bt.runtime.observation.Observation`
  (nothing encoded, nothing decoded again), and refuse with the project's own
  :class:`~harness_bt.errors.BridgeError` (``NOT_RESET``, ``FRAME_GONE``, an action's code);
- the GenManip worker (what the HTTP server serves, and what tests read):
  :meth:`SimEnv.reset`, :meth:`SimEnv.step` and :meth:`SimEnv.render_now` return exactly what
  one worker's entry in a GenManip ``/reset`` / ``/step`` response holds, in the wire form
  (``{"obs": OBS, "metric": None}`` during the episodes, ``{"obs": None, "metric": {scene:
  mean_success}}`` once every episode is done; a step in which injected faults fired carries
  them too: ``"faults": [{"kind", "step", ...}]``; a step that ended an episode says how:
  ``"episode_ended": "success"`` / ``"timeout"`` / ``"not_judged"``), and refuse with
  :class:`~runtime_bridge.genmanip.errors.HttpError` carrying the status the server answers.

An episode ends inside a step when the scene's success reaches 1 or after ``num_steps``
steps (then a success holding its scene's own ``hold_steps`` counts, whatever longer hold
``success_hold_steps`` asked for); that same answer then carries the next episode's first
observation (``reset`` True, ``timestep`` 0). Both faces read the same rendered arrays: the
typed one holds the numbers as a GenManip client decodes them (float64 poses and
intrinsics), the wire one as upstream sends them (float32 intrinsics and camera poses).

Ground truth (object poses, what the hand holds) is for tests and benchmarks only:
:meth:`SimEnv.ground_truth` and :meth:`SimEnv.results`, never inside an observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness_bt.errors import BridgeError
from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from runtime_bridge.genmanip.actions import (
    ControlType,
    GenManipEmbodiment,
    ValidatedAction,
    validate_action,
)
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.sim import worlds
from runtime_bridge.sim.cameras import CameraRig
from runtime_bridge.sim.config import SimConfig
from runtime_bridge.sim.episodes import EpisodeBook, QueuedEpisode
from runtime_bridge.sim.faults import FaultInjector
from runtime_bridge.sim.frames import FrameDemand
from runtime_bridge.sim.scene import SimWorld
from runtime_bridge.sim.scenes import Progress, SimScene, load_sim_scenes

__all__ = ["SimAnswer", "SimEnv"]


@dataclass(frozen=True, slots=True)
class SimAnswer:
    """One in-process answer: the next observation, or (``observation`` None, every episode
    done) the final ``{scene: mean success}`` in ``metric``; ``faults``: the injected faults
    that fired in the step (their wire records: kind, step, details)."""

    observation: Observation | None
    metric: dict[str, float] | None = None
    faults: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class _Raw:
    """One observation as the simulator produced it (arrays as rendered)."""

    frames: dict[str, Any]
    joints: np.ndarray
    tcp: tuple[np.ndarray, np.ndarray]
    instruction: str
    timestep: int
    reset: bool

    def wire(self, frames: dict[str, Any] | None = None) -> dict[str, Any]:
        """The GenManip observation dict (``frames`` instead of the rendered ones)."""
        return {"camera_data": self.frames if frames is None else frames,
                "instruction": self.instruction, "joint_position_state": self.joints,
                "ee_pose_state": [self.tcp[0], self.tcp[1]], "timestep": self.timestep,
                "reset": self.reset}

    def typed(self, worker_id: str, frames: dict[str, Any] | None = None) -> Observation:
        """The observation as the harness reads it (what a GenManip client decodes)."""
        f64 = np.float64
        cameras = {name: CameraFrame(rgb=c["rgb"], depth=c["depth"],
                                     intrinsics=np.asarray(c["intrinsics_matrix"], dtype=f64),
                                     position=np.asarray(c["p"], dtype=f64),
                                     quaternion_wxyz=np.asarray(c["q"], dtype=f64))
                   for name, c in (self.frames if frames is None else frames).items()}
        return Observation(
            cameras=cameras, joint_positions=np.asarray(self.joints, dtype=f64),
            ee_poses=(EePose(np.asarray(self.tcp[0], dtype=f64),
                             np.asarray(self.tcp[1], dtype=f64)),),
            instruction=self.instruction, timestep=self.timestep, reset=self.reset,
            worker_id=worker_id)


def _http(exc: BridgeError, status: int) -> HttpError:
    """``exc`` as the server answers it (``status``)."""
    return HttpError(exc.code, exc.message, http_status=status, where=exc.where, fix=exc.fix)


def _plain(exc: HttpError) -> BridgeError:
    """A protocol error raised in-process, as the project's own error (no HTTP involved)."""
    return BridgeError(exc.code, exc.message, where=exc.where, fix=exc.fix,
                       details=exc.details)


class SimEnv:
    """One simulator worker: a PyBullet world stepping through the episodes of ``book``.

    Several workers may share one :class:`EpisodeBook` (each then runs the next episode in the
    queue). ``scenes`` (reference -> :class:`SimScene`) defaults to the config's scenes, loaded
    and checked with its parameters. With ``config.keep_world`` the PyBullet world comes from
    (and on :meth:`close` goes back to) the process's kept worlds
    (:mod:`runtime_bridge.sim.worlds`).
    """

    embodiment = GenManipEmbodiment.FRANKA_PANDA

    def __init__(self, config: SimConfig | None = None, *, worker_id: str = "0",
                 book: EpisodeBook | None = None,
                 scenes: Mapping[str, SimScene] | None = None) -> None:
        self.config = config or SimConfig()
        self.worker_id = worker_id
        self.scenes = dict(scenes) if scenes is not None else load_sim_scenes(
            self.config.scenes, self.config.params)
        self.book = book or EpisodeBook(self.config.scenes, self.config.episodes,
                                        self.config.seed)
        self.scene = worlds.take(substeps=self.config.substeps,
                                 control_dt=self.config.control_dt,
                                 arm_meshes=self.config.arm_meshes) if self.config.keep_world \
            else SimWorld(substeps=self.config.substeps, control_dt=self.config.control_dt,
                          arm_meshes=self.config.arm_meshes)
        self.cameras = CameraRig(self.scene, self.config.cameras)
        #: frame requests for the next observation (used when ``render="on_demand"``)
        self.frames = FrameDemand(self.config.cameras)
        self._moves = 0  # physics steps and episode starts: a frame is of one world state
        self._unrendered: tuple[int, dict[str, Any], _Raw] | None = None
        self.episode: QueuedEpisode | None = None
        self.task: SimScene | None = None
        self.timestep = 0
        self.progress = Progress()
        self.faults: FaultInjector | None = None
        self._faults_sent = 0  # faults of the episode already reported in an answer
        self.done = False
        self._started = False
        self.last_ik_ok = True
        self._to_hide: list[tuple[str, bool]] = []
        self._fired: list[dict[str, Any]] = []  # faults of the last step, for its answer
        self._ended: str | None = None  # how an episode that ended in the last step ended

    # -- in-process (typed) ------------------------------------------------------------------
    def next_episode(self) -> SimAnswer:
        """Start the next episode (abandoning an unfinished one, which gets no result)."""
        return self._answer(self._reset())

    def advance(self, message: Mapping[str, Any] | ValidatedAction) -> SimAnswer:
        """Apply one action and advance 1/30 s: the next observation (or the next episode's
        first one, or the final metric). Refuses with :class:`BridgeError` (``NOT_RESET``, or
        the action's code naming the field)."""
        if not self._started:
            raise self._not_reset()
        if self.done:
            return self._answer(None)
        if not isinstance(message, ValidatedAction):
            try:
                message = validate_action(message, self.embodiment,
                                          where=f"worker {self.worker_id}")
            except HttpError as exc:
                raise _plain(exc) from None
        return self._answer(self._step(message))

    def frames_now(self, cameras: set[str] | None = None) -> Observation:
        """The latest observation again, with frames of ``cameras`` (None: every camera)
        rendered now (``render="on_demand"``), as they would have been in that step: the world
        must not have moved since (:class:`BridgeError` ``FRAME_GONE`` otherwise)."""
        raw, frames = self._render_latest(cameras)
        return raw.typed(self.worker_id, frames)

    # -- GenManip worker interface (the wire form the server sends) --------------------------
    def reset(self) -> dict[str, Any]:
        """Start the next episode (abandoning an unfinished one, which gets no result)."""
        return self._entry(self._reset())

    def step(self, message: Mapping[str, Any] | ValidatedAction) -> dict[str, Any]:
        """Apply one action, advance 1/30 s, and answer with the next observation (or the
        next episode's first one, or the final metric)."""
        if not self._started:
            raise _http(self._not_reset(), 500)
        if self.done:
            return self._final()
        action = message if isinstance(message, ValidatedAction) else validate_action(
            message, self.embodiment, where=f"worker {self.worker_id}")
        return self._entry(self._step(action))

    def hide(self, name: str, hidden: bool = True) -> None:
        """For tests and demonstrations: from the next step on, no camera sees object ``name``
        of the running episode (``hidden``; False: they see it again). It stays where it is
        (:meth:`SimWorld.hide <runtime_bridge.sim.scene.SimWorld.hide>`). Safe to call from
        another thread than the one stepping: the step applies it."""
        if name not in self.scene.objects:
            raise BridgeError("UNKNOWN_OBJECT", f"worker {self.worker_id}: no object {name!r} "
                              f"in this episode; its objects: "
                              f"{', '.join(sorted(self.scene.objects))}",
                              where=f"worker {self.worker_id}",
                              fix="name one of the episode's objects")
        self._to_hide.append((name, hidden))

    def end_episode(self) -> SimAnswer | None:
        """End the running episode now, judged on the state it is in (the harness's task has
        ended and nothing will move it): None while the scene's success condition holds (its
        hold may still complete: keep stepping) or when no episode runs; else the episode is
        recorded as failed (``ended``: ``task_ended``) and the answer is what a step ending
        it gives (in-process): the next episode's first observation, or the final metric."""
        if not self._started or self.done or self.task is None or self.progress.streak > 0:
            return None
        self._record(self.task.success(self.scene, self.progress), ended="task_ended")
        self._fired = self._new_faults()
        return self._answer(self._start_next())

    def render_now(self, cameras: set[str] | None = None) -> dict[str, Any]:
        """:meth:`frames_now` in the wire form (:class:`HttpError` 409 ``FRAME_GONE``)."""
        try:
            raw, frames = self._render_latest(cameras)
        except BridgeError as exc:
            raise _http(exc, 409) from None
        return raw.wire(frames)

    def results(self) -> dict[str, Any]:
        """Per-episode results so far (JSON-ready), with the final metric."""
        return {"episodes": self.book.results(), "skipped": self.book.skipped(),
                "total": self.book.total, "final_metric": self.book.final_metric(),
                "done": self.done}

    def ground_truth(self) -> dict[str, Any]:
        """For tests and benchmarks only: object poses, what the hand holds, commanded targets."""
        if self.episode is None or self.task is None:
            return {"episode": None}
        tcp_p, tcp_q = self.scene.arm.tcp_pose()
        objects = {n: self.scene.object_state(n).to_dict() for n in self.scene.objects}
        return {
            "episode": self.episode.index, "scene": self.task.name, "seed": self.episode.seed,
            "target": self.task.target, "judged": self.task.judged, "timestep": self.timestep,
            "done": self.done,
            "objects": objects,
            "held": [n for n, o in objects.items() if o["held_by"]],
            "start_positions": {n: p.tolist() for n, p in self.scene.start.items()},
            "tcp": {"position": tcp_p.tolist(), "quaternion_wxyz": tcp_q.tolist()},
            "commanded_tcp": {"position": self.scene.arm.commanded_tcp[0].tolist(),
                              "quaternion_wxyz": self.scene.arm.commanded_tcp[1].tolist()},
            "commanded_joints": self.scene.arm.commanded_joints.tolist(),
            "ik_failures": self.scene.arm.ik_failures, "last_ik_ok": self.last_ik_ok,
            "faults": list(self.faults.fired) if self.faults else [],
            "progress": dict(self.progress.info),
        }

    def close(self) -> None:
        """Close the world, or (``config.keep_world``) hand it back for the process's next
        simulator, its faults undone."""
        if self.config.keep_world and self.scene.client is not None:
            if self.faults is not None:
                self.faults.end(self.scene)
                self.faults = None
            worlds.give(self.scene, arm_meshes=self.config.arm_meshes)
            return
        self.scene.close()

    def __enter__(self) -> SimEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------
    def _reset(self) -> _Raw | None:
        self._fired = []
        if self.episode is not None and not self.done:
            self.book.skip(self.episode, self.worker_id, self.timestep)
        self._started = True
        return self._start_next()

    def _not_reset(self) -> BridgeError:
        return BridgeError("NOT_RESET", f"worker {self.worker_id}: /step before /reset",
                           where=f"worker {self.worker_id}",
                           fix="call /reset once after /create_workers, then /step")

    def _step(self, action: ValidatedAction) -> _Raw | None:
        """One step of a started episode (the caller checked ``_started`` and ``done``)."""
        self._apply(action)
        assert self.faults is not None and self.task is not None and self.episode is not None
        self.faults.before_physics(self.scene, self.timestep)
        self.scene.step()
        while self._to_hide:
            self.scene.hide(*self._to_hide.pop(0))
        self._moves += 1
        self.timestep += 1
        success = self.task.success(self.scene, self.progress)
        out_of_steps = self.timestep >= self.config.num_steps
        if out_of_steps and success == 0.0 and self.task.held_own(self.progress):
            success = 1.0  # the scene's own hold met; the longer one only keeps it running
            self.progress.info["ended"] = (f"success held {self.progress.streak} step(s) when "
                                           "the episode's steps ran out")
        if (success is not None and success >= 1.0) or out_of_steps:
            self._fired = self._new_faults()  # of the episode that ends here
            self._record(success)
            self._ended = "success" if success is not None and success >= 1.0 else \
                "not_judged" if success is None else "timeout"
            return self._start_next()
        raw = self._observe(reset=False)
        self._fired = self._new_faults()  # this step's, its observation's occlusions included
        return raw

    def _answer(self, raw: _Raw | None) -> SimAnswer:
        fired, self._fired, self._ended = tuple(self._fired), [], None
        if raw is None:
            return SimAnswer(None, self.book.final_metric(), fired)
        return SimAnswer(raw.typed(self.worker_id), faults=fired)

    def _entry(self, raw: _Raw | None) -> dict[str, Any]:
        fired, self._fired = self._fired, []
        entry = self._with_faults(self._final() if raw is None else
                                  {"obs": raw.wire(), "metric": None}, fired)
        ended, self._ended = self._ended, None
        if ended is not None:  # an extra key, like faults: how the step's episode ended
            entry["episode_ended"] = ended
        return entry

    def _render_latest(self, cameras: set[str] | None) -> tuple[_Raw, dict[str, Any]]:
        if self._unrendered is None or self._unrendered[0] != self._moves:
            raise BridgeError("FRAME_GONE", f"worker {self.worker_id}: the world has moved "
                              "since the observation whose frames were asked for",
                              where=f"worker {self.worker_id}",
                              fix="request frames before the step (SimEnv.frames.request)")
        _, occluded, raw = self._unrendered
        frames = self.cameras.render(occluded, cameras)
        self.frames.rendered += len(frames)
        return raw, frames

    def _start_next(self) -> _Raw | None:
        if self.faults is not None:
            self.faults.end(self.scene)
        spec = self.book.next()
        if spec is None:
            self.done = True
            return None
        self.episode = spec
        self.task = self.scenes[spec.task]
        rng = np.random.default_rng(spec.seed)  # the episode's seed alone: it reproduces it
        self.scene.load(self.task.layout(rng), self.task.objects)
        self._moves += 1
        self.timestep = 0
        self.progress = Progress(hold_steps=self.config.success_hold_steps)
        self.faults = FaultInjector(self.config.faults,
                                    np.random.default_rng([spec.seed, 0xFA17]),
                                    self.task.target)
        self._faults_sent = 0
        self.last_ik_ok = True
        return self._observe(reset=True)

    def _new_faults(self) -> list[dict[str, Any]]:
        """The faults fired since the last answer said so (an episode's faults go out with
        the answers of its steps; one in its first observation, with its first step's)."""
        assert self.faults is not None
        new = self.faults.fired[self._faults_sent:]
        self._faults_sent = len(self.faults.fired)
        return [dict(f) for f in new]

    @staticmethod
    def _with_faults(entry: dict[str, Any], fired: list[dict[str, Any]]) -> dict[str, Any]:
        """A worker's answer with ``faults`` (the faults fired in the step) when any fired: an
        extra key beside ``obs`` and ``metric``, which GenManip clients that do not know it
        leave alone; without faults the answer is exactly GenManip's."""
        if fired:
            entry["faults"] = fired
        return entry

    def _final(self) -> dict[str, Any]:
        return {"obs": None, "metric": self.book.final_metric()}

    def _record(self, success: float | None, *, ended: str = "timeout") -> None:
        assert self.episode is not None and self.task is not None and self.faults is not None
        self.book.record({
            "index": self.episode.index, "task": self.episode.task, "scene": self.task.name,
            "seed": self.episode.seed, "worker_id": self.worker_id,
            "success": None if success is None else float(success), "steps": self.timestep,
            "ended": "not_judged" if success is None else
                     "success" if success >= 1.0 else ended,
            "evidence": dict(self.progress.info),
            "faults": list(self.faults.fired), "ik_failures": self.scene.arm.ik_failures,
            "final_ground_truth": self.ground_truth()["objects"],
        })

    def _apply(self, action: ValidatedAction) -> None:
        arm = action.arms[0]
        if action.control_type is ControlType.JOINT_POSITION:
            assert arm.joint_deltas is not None
            self.scene.arm.command_joint_deltas(arm.joint_deltas, arm.gripper)
            self.last_ik_ok = True
        else:
            assert arm.translation is not None and arm.rotation_wxyz is not None
            self.last_ik_ok = self.scene.arm.command_ee_delta(arm.translation, arm.rotation_wxyz,
                                                              arm.gripper).ok

    def _rendered(self, reset: bool) -> set[str] | None:
        """Which cameras this observation renders: all, or (``render="round_robin"``) one per
        step in turn, or (``render="on_demand"``) the ones requested
        (:mod:`runtime_bridge.sim.frames`); all of them on an episode's first observation."""
        cams = self.config.cameras
        if self.config.render == "on_demand":
            return self.frames.take(reset, self.timestep)
        if self.config.render == "all" or reset or not cams:
            return None
        return {cams[self.timestep % len(cams)].name}

    def _observe(self, *, reset: bool) -> _Raw:
        assert self.task is not None and self.faults is not None
        occluded = self.faults.occlusions(self.config.cameras, self.timestep)
        tcp_p, tcp_q = self.scene.arm.tcp_pose()
        only = self._rendered(reset)
        frames = {} if only == set() else self.cameras.render(occluded, only)
        raw = _Raw(frames, self.scene.arm.joint_state(), (tcp_p, tcp_q), self.task.instruction,
                   self.timestep, reset)
        self._unrendered = (self._moves, occluded, raw) if only == set() else None
        self.frames.rendered += len(frames)
        return raw
