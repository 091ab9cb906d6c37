"""Scripted policies: controllers that act only from what they are sent, with tunable flaws.

:class:`PickPolicy` (served as ``pick``) reads the object to pick from the prompt ("pick up
the green cube" -> ``green_cube``), finds it in the camera images with the project's
perception (the ``harness_bt.perception`` plug-in ``colour`` by default, fed an
:class:`~harness_bt.runtime.observation.Observation` rebuilt from the request), and answers
action chunks that open the gripper if it is closed, move above the object while turning the
hand to the object's yaw (the fingers across two faces), descend, close, lift about 10 cm and
then say ``done``. Rows have 7 numbers, as :data:`~harness_bt.policy.embodiment.PANDA_EE_DELTA`
reads them: ``dx, dy, dz``, an axis-angle turn ``rx, ry, rz`` and the gripper. It never reads
the simulator's ground truth; each request is planned afresh from the end-effector state it
carries.

Its imperfections stand in for a learned policy's (see :class:`~policies.registry.
PolicySettings`): with probability ``misgrasp_rate`` per session it aims its grasp beside the
object (far enough that the fingers close on nothing) and, like a frozen policy that cannot
see its own failure, lifts and says ``done`` all the same; ``pose_noise_m`` adds a Gaussian
error to the horizontal position it perceives, drawn once per session. A session's draws come
from the seed, the session id (less a run's random prefix) and what its first request shows
(:func:`draw_key`), so an episode repeats exactly from run to run; without a ``session``
field each connection is one session, numbered in the order they arrive.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from harness_bt.errors import CommandError, DefinitionError
from harness_bt.geometry import qmul, qrelative, yaw_of, yaw_quat
from harness_bt.plugins import closest
from harness_bt.world import Perception, perception_registry
from policies.registry import PolicyKind, PolicySettings
from policies.request import PolicyRequest, parse_request
from policies.spec import observation_spec

__all__ = ["PICK", "PickConfig", "PickPolicy", "Stage", "draw_key", "session_rng", "target_of"]


class Stage(StrEnum):
    """Where a pick session is."""

    OPEN = "open"  # the gripper was closed at the start: open it first
    LOCATE = "locate"  # look for the target
    ABOVE = "above"  # move above the grasp point
    DESCEND = "descend"
    CLOSE = "close"  # close until the fingers stop moving
    LIFT = "lift"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class PickConfig:
    """How :class:`PickPolicy` moves (metres, control steps)."""

    approach_height_m: float = 0.10  # above the grasp point before descending
    lift_height_m: float = 0.10
    speed_m: float = 0.008  # per control step, at most (the format allows 0.01)
    descend_speed_m: float = 0.005
    min_step_m: float = 0.0015  # the last steps before a waypoint shrink down to this
    gain: float = 0.35  # near a waypoint each step covers this fraction of what is left
    tolerance_m: float = 0.004  # a waypoint is reached within this distance
    horizon: int = 10  # rows per chunk, at most
    close_rows: int = 4  # rows per chunk while closing
    grasp_above_centre_m: float = 0.002  # the TCP this far above the object's centre
    misgrasp_offset_m: float = 0.05  # a misgrasp aims this far beside the object
    open_width_m: float = 0.07  # the gripper counts as open from this width
    settled_m: float = 0.0005  # the fingers stopped: width changed less between requests
    max_unseen: int = 30  # requests without seeing the target before giving up
    max_sessions: int = 64  # sessions remembered per connection (oldest forgotten first)
    perception: str = "colour"  # the harness_bt.perception plug-in that finds the target
    turn_rad: float = math.radians(3.0)  # the hand turns at most this much per step
    aligned_rad: float = math.radians(2.0)  # turned far enough to descend


def session_rng(seed: int, key: str) -> np.random.Generator:
    """The randomness of one session: from the seed and the session key alone (a stable
    hash, unlike Python's ``hash`` of a str, which changes between processes)."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return np.random.default_rng([seed, int.from_bytes(digest, "little")])


def target_of(prompt: str, objects: Mapping[str, str]) -> str:
    """The object a prompt names: ``objects`` maps object id -> label ("green_cube" ->
    "green cube"); an object is named by its label or its id with spaces. Refuses a prompt
    that names none of them, or several."""
    text = " ".join(re.findall(r"[a-z0-9]+", prompt.lower()))
    named: dict[str, int] = {}
    for oid, label in objects.items():
        for name in {label.lower(), oid.replace("_", " ").lower()} - {""}:
            hit = re.search(rf"\b{re.escape(name)}\b", text)
            if hit is not None:
                named[oid] = min(named.get(oid, hit.start()), hit.start())
    known = ", ".join(sorted(objects.values()))
    if not named:
        wanted = re.sub(r"^(please )?(pick( up)?|grasp|grab|lift|take)( up)? (the |a |an )?",
                        "", text)
        near = closest(wanted, objects.values()) if wanted else None
        raise CommandError(
            "POLICY_UNKNOWN_OBJECT", f"the prompt {prompt!r} names no object this policy "
            f"knows; known: {known}" + (f"; did you mean {near!r}?" if near else ""),
            fix="name one object of the scene, e.g. 'pick up the red cube'",
            details={"prompt": prompt, "known": sorted(objects)})
    if len(named) > 1:
        both = ", ".join(objects[o] for o in sorted(named, key=named.__getitem__))
        raise CommandError(
            "POLICY_AMBIGUOUS_PROMPT", f"the prompt {prompt!r} names several objects "
            f"({both}); the pick policy picks one", fix="name one object to pick",
            details={"prompt": prompt, "named": sorted(named)})
    return next(iter(named))


def draw_key(session: str, request: PolicyRequest) -> str:
    """What a session's draws are keyed by: the session id without its first path segment
    when it has several (the harness's command ids start with the run's random id:
    ``<run>/<phase>/<node>#<attempt>``), and a digest of what the first request shows (its
    images and state): so the same episode of the same task draws the same on every run, and
    another episode, node or attempt draws afresh."""
    stable = session.split("/", 1)[1] if "/" in session else session
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(request.observation.cameras):
        rgb = request.observation.cameras[name].rgb
        if rgb is not None:
            digest.update(name.encode() + np.ascontiguousarray(rgb).tobytes())
    digest.update(np.round(np.asarray(request.state, dtype=np.float64), 4).tobytes())
    return f"{stable}|{digest.hexdigest()}"


@dataclass
class _Session:
    key: str
    target: str
    misgrasp: bool
    noise_xy: np.ndarray
    side: float
    perception: Perception
    stage: Stage = Stage.LOCATE
    requests: int = 0
    unseen: int = 0
    seen_at: np.ndarray | None = None  # the position perceived (with the noise)
    grasp: np.ndarray | None = None
    grasp_q: np.ndarray | None = None  # the hand's orientation for the grasp (w, x, y, z)
    lift_goal: np.ndarray | None = None
    widths: list[float] = field(default_factory=list)


class PickPolicy:
    """One connection's pick policy (see the module docstring). ``objects``: object id ->
    label of what the perception can find and the prompt may name; ``connection``: this
    connection's number, naming its session when requests carry none."""

    def __init__(self, settings: PolicySettings, config: PickConfig,
                 perception: Callable[[], Perception], objects: Mapping[str, str], *,
                 connection: int = 0) -> None:
        self.settings = settings
        self.config = config
        self.make_perception = perception
        self.objects = dict(objects)
        self.connection = connection
        self.sessions: OrderedDict[str, _Session] = OrderedDict()

    # ------------------------------------------------------------------ one request

    def infer(self, observation: dict[str, Any]) -> dict[str, Any]:
        key = str(observation.get("session") or f"connection-{self.connection}")
        session = self.sessions.get(key)
        request = parse_request(observation, timestep=0 if session is None
                                else session.requests, reset=session is None)
        if session is None:
            session = self._open(key, request)
        else:
            self.sessions.move_to_end(key)
        session.requests += 1
        rows, done = self._plan(session, request)
        return {"actions": rows.astype(np.float32), "done": done,
                "stage": str(session.stage)}

    def _open(self, key: str, request: PolicyRequest) -> _Session:
        target = target_of(request.prompt, self.objects)
        rng = session_rng(self.settings.seed, draw_key(key, request))
        # drawn in a fixed order whatever the rates: a session that misgrasps at rate 0.3
        # misgrasps at 0.5 too, and its noise is the same at every rate
        u = float(rng.random())
        noise = rng.normal(0.0, 1.0, 2) * float(self.settings.pose_noise_m)
        side = 1.0 if rng.random() < 0.5 else -1.0
        session = _Session(key, target, u < self.settings.misgrasp_rate, noise, side,
                           self.make_perception())
        if request.gripper_width < self.config.open_width_m:
            session.stage = Stage.OPEN
        self.sessions[key] = session
        while len(self.sessions) > self.config.max_sessions:
            self.sessions.popitem(last=False)
        return session

    def _plan(self, s: _Session, r: PolicyRequest) -> tuple[np.ndarray, bool]:
        c = self.config
        tcp = r.tcp
        while True:
            if s.stage is Stage.OPEN:
                if r.gripper_width >= c.open_width_m:
                    s.stage = Stage.LOCATE
                    continue
                return _hold(c.close_rows, 0.0), False
            if s.stage is Stage.LOCATE:
                found = self._locate(s, r)
                if found is None:
                    return _hold(1, 0.0), False
                seen, yaw = found
                s.seen_at = seen
                s.grasp_q = _facing(r.quaternion_wxyz, yaw)
                s.grasp = self._grasp_point(s, seen, s.grasp_q)
                s.stage = Stage.ABOVE
                continue
            assert s.grasp is not None
            if s.stage is Stage.ABOVE:
                goal = s.grasp + np.array([0.0, 0.0, c.approach_height_m])
                if _dist(tcp, goal) <= c.tolerance_m and \
                        _angle(r.quaternion_wxyz, s.grasp_q) <= c.aligned_rad:
                    s.stage = Stage.DESCEND
                    continue
                return self._move(tcp, goal, c.speed_m, 0.0, r.quaternion_wxyz,
                                  s.grasp_q)[0], False
            if s.stage is Stage.DESCEND:
                if _dist(tcp, s.grasp) <= c.tolerance_m:
                    s.stage = Stage.CLOSE
                    s.widths = []
                    continue
                return self._move(tcp, s.grasp, c.descend_speed_m, 0.0, r.quaternion_wxyz,
                                  s.grasp_q)[0], False
            if s.stage is Stage.CLOSE:
                s.widths.append(r.gripper_width)
                w = s.widths
                if len(w) >= 2 and abs(w[-1] - w[-2]) < c.settled_m and w[-1] < c.open_width_m:
                    s.stage = Stage.LIFT
                    s.lift_goal = tcp + np.array([0.0, 0.0, c.lift_height_m])
                    continue
                return _hold(c.close_rows, 1.0), False
            if s.stage is Stage.LIFT:
                assert s.lift_goal is not None
                if _dist(tcp, s.lift_goal) <= c.tolerance_m:
                    s.stage = Stage.DONE
                    continue
                rows, reached = self._move(tcp, s.lift_goal, c.speed_m, 1.0)
                if reached:
                    s.stage = Stage.DONE
                return rows, reached
            return _hold(1, 1.0), True  # DONE: hold what is held

    def _locate(self, s: _Session, r: PolicyRequest) -> tuple[np.ndarray, float] | None:
        """The target's position and yaw, when seen."""
        for update in s.perception(r.observation):
            if update.object_id == s.target and update.pose is not None:
                return (np.asarray(update.pose.position, dtype=np.float64),
                        yaw_of(np.asarray(update.pose.quaternion_wxyz, dtype=np.float64)))
        s.unseen += 1
        if s.unseen > self.config.max_unseen:
            raise CommandError(
                "POLICY_TARGET_NOT_SEEN", f"the {self.objects[s.target]} was not seen in "
                f"{s.unseen} requests (cameras: {', '.join(r.observation.cameras) or 'none'})",
                fix="send RGB and depth of a camera that sees the object, with its "
                    "intrinsics and pose")
        return None

    def _grasp_point(self, s: _Session, seen: np.ndarray, hand_q: np.ndarray) -> np.ndarray:
        grasp = seen.copy()
        grasp[2] += self.config.grasp_above_centre_m
        grasp[:2] += s.noise_xy
        if s.misgrasp:  # beside the object, across the line the fingers close along
            across = _across_fingers(hand_q)
            grasp[:2] += s.side * self.config.misgrasp_offset_m * across
        return grasp

    def _move(self, start: np.ndarray, goal: np.ndarray, speed: float, grip: float,
              q: np.ndarray | None = None, goal_q: np.ndarray | None = None
              ) -> tuple[np.ndarray, bool]:
        """Rows from ``start`` toward ``goal`` (and the hand from ``q`` toward ``goal_q``):
        at most ``speed`` per step, slowing down near the goal; whether the rows reach the
        position."""
        c = self.config
        rows = []
        at = start.astype(np.float64).copy()
        reached = False
        for _ in range(c.horizon):
            turn = np.zeros(3)
            if q is not None and goal_q is not None:
                turn, q = _turn(q, goal_q, c.turn_rad)
            delta = goal - at
            dist = float(np.linalg.norm(delta))
            step = min(speed, max(c.min_step_m, c.gain * dist))
            if dist <= step:
                rows.append([*delta, *turn, grip])
                reached = True
                break
            move = delta / dist * step
            at += move
            rows.append([*move, *turn, grip])
        return np.asarray(rows, dtype=np.float64), reached


def _hold(n: int, grip: float) -> np.ndarray:
    return np.tile(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, grip]), (n, 1))


def _angle(q: np.ndarray, goal: np.ndarray | None) -> float:
    return 0.0 if goal is None else qrelative(q, goal)[1]


def _turn(q: np.ndarray, goal: np.ndarray, max_rad: float) -> tuple[np.ndarray, np.ndarray]:
    """One step's turn toward ``goal`` (axis-angle, world axes) and the orientation after it."""
    axis, angle = qrelative(q, goal)
    step = min(angle, max_rad)
    half = step / 2.0
    turned = qmul(np.array([math.cos(half), *(axis * math.sin(half))]), q)
    return axis * step, turned / float(np.linalg.norm(turned))


def _facing(hand_q: np.ndarray, object_yaw: float) -> np.ndarray:
    """The hand turned about world z, by the least angle, so its axes line up with the faces
    of a box of yaw ``object_yaw`` (a box looks the same every 90 degrees)."""
    delta = (object_yaw - yaw_of(hand_q) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    out = qmul(yaw_quat(delta), np.asarray(hand_q, dtype=np.float64))
    return out / float(np.linalg.norm(out))


def _dist(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))


def _across_fingers(quaternion_wxyz: np.ndarray) -> np.ndarray:
    """The horizontal unit vector across the line the Panda's fingers close along (the hand's
    y axis), from the end-effector orientation."""
    w, x, y, z = (float(v) for v in quaternion_wxyz)
    finger = np.array([2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)])
    across = np.array([finger[1], -finger[0]])
    norm = float(np.linalg.norm(across))
    return across / norm if norm > 1e-6 else np.array([1.0, 0.0])


# ---------------------------------------------------------------------- the plug-in


class PickFactory:
    """Makes one :class:`PickPolicy` per connection (numbered in order)."""

    def __init__(self, settings: PolicySettings, config: PickConfig | None = None) -> None:
        self.settings = settings
        self.config = config or PickConfig()
        factory = perception_registry(entry_points=True).get(self.config.perception,
                                            where="the pick policy's perception")
        self.perception = factory
        catalogue = getattr(factory(), "catalogue", None)
        if not catalogue:
            raise DefinitionError(
                "INVALID_POLICY", f"perception {self.config.perception!r} has no catalogue "
                "of objects: the pick policy cannot tell which object a prompt names",
                fix="use a perception with a catalogue (the built-in 'colour')")
        self.objects = {str(spec.object_id): str(getattr(spec, "label", "") or spec.object_id)
                        for spec in catalogue if getattr(spec, "kind", "movable") == "movable"}
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self) -> PickPolicy:
        with self._lock:
            self._count += 1
            n = self._count
        return PickPolicy(self.settings, self.config, self.perception, self.objects,
                          connection=n)


def _build_pick(settings: PolicySettings) -> PickFactory:
    return PickFactory(settings)


def _pick_spec(factory: Any) -> dict[str, Any]:
    """What pick reads: depth too (it locates the object in RGB-D), and a prompt naming one
    of the objects its perception knows."""
    objects = getattr(factory, "objects", None) or {}
    return observation_spec(depth_required=True, objects=objects.values())


#: The ``pick`` entry point of ``harness_bt.policies``.
PICK = PolicyKind(
    description="scripted pick from the cameras: the object named in the prompt, up 10 cm, "
                "then done; misgrasps and perception noise as set",
    build=_build_pick, observation_spec=_pick_spec)
