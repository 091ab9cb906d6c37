"""The world model: a small scene graph with evidence, freshness and versions
(docs/architecture.md, "The world model").

Objects carry a pose, an extent, a confidence and their provenance (which camera, which
timestep, when it arrived). Relations are ``on``, ``in`` and ``held_by``. The scene graph is an
estimate, not ground truth, so every read can ask how fresh and how confident it is.

Versions move only on changes that matter to a plan: an object appearing or disappearing, moving
or turning beyond a tolerance (measured from the pose at its current version, so slow drift adds
up), changing size, a relation changing, or its confidence crossing the ``min_confidence`` line.
A new frame of the same scene refreshes freshness and moves no version. Each object's version is
the world version at which it last changed, so a command's premises (object id -> version) can be
re-checked object by object (:meth:`WorldModel.premise_check`, the ledger's ``premise_check``).

Perception is injected: a :data:`Perception` turns an observation into :class:`ObjectUpdate`;
:func:`scripted_perception` reads ``Observation.extras["objects"]`` (what the fake runtime and
scripted scenes send).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.ledger import Command
from harness_bt.plugins import Group, Registry
from harness_bt.runtime.observation import Observation

__all__ = [
    "ObjectUpdate",
    "Perception",
    "Pose",
    "Provenance",
    "Relation",
    "WorldChange",
    "WorldModel",
    "WorldObject",
    "WorldSnapshot",
    "WorldView",
    "perception_registry",
    "scripted_perception",
]


class Relation(StrEnum):
    ON = "on"
    IN = "in"
    HELD_BY = "held_by"


@dataclass(frozen=True, slots=True)
class Pose:
    """A pose in the world frame: position (metres) and orientation quaternion (w, x, y, z)."""

    position: tuple[float, float, float]
    quaternion_wxyz: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)

    @classmethod
    def of(cls, value: Any) -> Pose:
        """From a Pose, ``[x, y, z]``, ``[x, y, z, qw, qx, qy, qz]`` or a dict with
        ``position`` / ``quaternion_wxyz``."""
        if isinstance(value, Pose):
            return value
        if isinstance(value, Mapping):
            return cls(
                tuple(float(v) for v in value["position"]),  # type: ignore[arg-type]
                tuple(float(v) for v in value.get("quaternion_wxyz", (1, 0, 0, 0))),  # type: ignore[arg-type]
            )
        seq = [float(v) for v in value]
        if len(seq) == 3:
            return cls((seq[0], seq[1], seq[2]))
        if len(seq) == 7:
            return cls((seq[0], seq[1], seq[2]), (seq[3], seq[4], seq[5], seq[6]))
        raise DefinitionError("INVALID_POSE", f"a pose needs 3 or 7 numbers, got {len(seq)}: "
                              f"{seq!r}", fix="give [x, y, z] or [x, y, z, qw, qx, qy, qz]")

    def distance_to(self, other: Pose) -> float:
        return math.dist(self.position, other.position)

    def angle_to(self, other: Pose) -> float:
        """Rotation angle between the two orientations (radians, 0..pi)."""
        dot = abs(sum(a * b for a, b in zip(self.quaternion_wxyz, other.quaternion_wxyz,
                                            strict=True)))
        return 2.0 * math.acos(min(1.0, dot))

    def to_list(self) -> list[float]:
        return [*self.position, *self.quaternion_wxyz]

    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (*self.position, *self.quaternion_wxyz))


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a belief came from: the camera, the simulator / robot timestep, the harness's
    monotonic arrival time. ``remembered``: restored from a run's checkpoint by ``harness
    resume`` and not seen since (the first sighting replaces it)."""

    camera: str
    timestep: int
    observed_at: float
    remembered: bool = False


@dataclass(frozen=True, slots=True)
class ObjectUpdate:
    """What perception says about one object in one observation.

    ``relations`` maps a relation to its target object id (None: the relation no longer holds);
    relations not named are left as they were. ``removed`` says the object is gone (not merely
    unseen: an unseen object simply grows stale).
    """

    object_id: str
    pose: Pose | None = None
    extent: tuple[float, float, float] | None = None
    confidence: float = 1.0
    camera: str = ""
    label: str = ""
    relations: Mapping[Relation, str | None] = field(default_factory=dict)
    removed: bool = False


@dataclass(frozen=True, slots=True)
class WorldObject:
    """One object as the world model believes it. ``version`` is the world version at which it
    last changed in a way that matters to a plan."""

    object_id: str
    label: str
    pose: Pose
    extent: tuple[float, float, float]
    confidence: float
    provenance: Provenance
    version: int
    relations: Mapping[Relation, str] = field(default_factory=dict)

    def age(self, now: float) -> float:
        return now - self.provenance.observed_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "object_id": self.object_id,
            "label": self.label,
            "pose": self.pose.to_list(),
            "extent": list(self.extent),
            "confidence": self.confidence,
            "camera": self.provenance.camera,
            "timestep": self.provenance.timestep,
            "observed_at": self.provenance.observed_at,
            "remembered": self.provenance.remembered,
            "version": self.version,
            "relations": {str(k): v for k, v in self.relations.items()},
        }


@dataclass(frozen=True, slots=True)
class WorldChange:
    """What one update did: objects whose version moved, why, and the world version after."""

    version: int
    changed: tuple[str, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=dict)
    refreshed: tuple[str, ...] = ()

    @property
    def moved(self) -> bool:
        return bool(self.changed)


@dataclass(frozen=True, slots=True)
class WorldSnapshot:
    """Objects as they were at one world version: what a plan was made from."""

    version: int
    taken_at: float
    objects: Mapping[str, WorldObject]

    def premises(self) -> dict[str, int]:
        return {oid: obj.version for oid, obj in self.objects.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "taken_at": self.taken_at,
                "objects": {oid: obj.to_dict() for oid, obj in self.objects.items()}}


class WorldView:
    """Read-only access to a :class:`WorldModel` at a given time (what contracts and evaluators
    get). ``now`` is the harness's monotonic time; ``observation`` the latest one."""

    def __init__(self, world: WorldModel, now: float, observation: Observation | None = None):
        self._world = world
        self.now = now
        self.observation = observation

    @property
    def version(self) -> int:
        return self._world.version

    def get(self, object_id: str) -> WorldObject | None:
        return self._world.get(object_id)

    def objects(self) -> list[WorldObject]:
        return self._world.objects()

    def age(self, object_id: str) -> float:
        return self._world.age(object_id, self.now)

    def fresh(self, object_id: str, max_age_s: float) -> bool:
        return self._world.fresh(object_id, self.now, max_age_s)

    def related(self, object_id: str, relation: Relation | str) -> str | None:
        return self._world.related(object_id, relation)

    def holds(self, object_id: str, relation: Relation | str, target: str) -> bool:
        return self._world.related(object_id, relation) == target


#: Perception: one observation in, object updates out. Injected into the runner.
Perception = Callable[[Observation], Sequence[ObjectUpdate]]


class WorldModel:
    """The scene graph. Update it with :meth:`update`; read it directly or through a
    :class:`WorldView`.

    ``position_tolerance_m`` / ``angle_tolerance_rad`` / ``extent_tolerance_m``: smaller changes
    are noise, not plan-relevant. ``min_confidence``: below it an object counts as not seen.
    """

    def __init__(
        self,
        *,
        position_tolerance_m: float = 0.01,
        angle_tolerance_rad: float = 0.05,
        extent_tolerance_m: float = 0.01,
        min_confidence: float = 0.5,
    ) -> None:
        for name, value in (("position_tolerance_m", position_tolerance_m),
                            ("angle_tolerance_rad", angle_tolerance_rad),
                            ("extent_tolerance_m", extent_tolerance_m)):
            if not math.isfinite(value) or value < 0:
                raise DefinitionError("INVALID_WORLD", f"{name}={value!r} must be >= 0")
        if not 0.0 <= min_confidence <= 1.0:
            raise DefinitionError(
                "INVALID_WORLD", f"min_confidence={min_confidence!r} must be within [0, 1]"
            )
        self.position_tolerance_m = position_tolerance_m
        self.angle_tolerance_rad = angle_tolerance_rad
        self.extent_tolerance_m = extent_tolerance_m
        self.min_confidence = min_confidence
        self.version = 0
        self.latest_observation: Observation | None = None
        self.latest_observation_at: float | None = None
        self._objects: dict[str, WorldObject] = {}
        self._anchor: dict[str, Pose] = {}  # pose at the object's current version

    # ---------------------------------------------------------------- reading

    def get(self, object_id: str) -> WorldObject | None:
        return self._objects.get(object_id)

    def objects(self) -> list[WorldObject]:
        return list(self._objects.values())

    def __contains__(self, object_id: object) -> bool:
        return object_id in self._objects

    def age(self, object_id: str, now: float) -> float:
        obj = self._objects.get(object_id)
        return math.inf if obj is None else obj.age(now)

    def fresh(self, object_id: str, now: float, max_age_s: float) -> bool:
        return self.age(object_id, now) <= max_age_s

    def related(self, object_id: str, relation: Relation | str) -> str | None:
        obj = self._objects.get(object_id)
        return None if obj is None else obj.relations.get(Relation(str(relation)))

    def anchor(self, object_id: str) -> Pose | None:
        """The pose at the object's current version (drift is measured from it)."""
        return self._anchor.get(object_id)

    def view(self, now: float) -> WorldView:
        return WorldView(self, now, self.latest_observation)

    def snapshot(self, object_ids: Iterable[str] | None = None, *, now: float = 0.0
                 ) -> WorldSnapshot:
        ids = list(self._objects) if object_ids is None else list(object_ids)
        return WorldSnapshot(
            self.version, now, {oid: self._objects[oid] for oid in ids if oid in self._objects}
        )

    def premises(self, object_ids: Iterable[str]) -> dict[str, int]:
        """Object id -> current version, for a command's ``premises`` (missing ids: -1)."""
        return {oid: (self._objects[oid].version if oid in self._objects else -1)
                for oid in object_ids}

    def premise_check(self, command: Command) -> str | None:
        """The ledger's ``premise_check``: None when every premise object still has the version
        the plan relied on, else which objects changed (object by object)."""
        return self.premise_check_versions(command.premises)

    def premise_check_versions(self, premises: Mapping[str, int]) -> str | None:
        """None when every object still has the given version, else what changed."""
        stale = []
        for oid, version in premises.items():
            obj = self._objects.get(oid)
            if obj is None:
                if version != -1:
                    stale.append(f"{oid} is gone (planned on version {version})")
            elif obj.version != version:
                stale.append(f"{oid} changed: version {version} -> {obj.version}")
        return None if not stale else "premises changed since planning: " + "; ".join(stale)

    # ---------------------------------------------------------------- writing

    def recall(self, objects: Iterable[WorldObject], anchors: Mapping[str, Pose],
               version: int) -> None:
        """Put back objects remembered from a checkpoint (``harness resume``), with their own
        versions and anchors; the world version becomes at least ``version``."""
        for obj in objects:
            self._objects[obj.object_id] = obj
            self._anchor[obj.object_id] = anchors.get(obj.object_id, obj.pose)
        self.version = max(self.version, version)

    def observe(self, observation: Observation, updates: Sequence[ObjectUpdate], *,
                now: float) -> WorldChange:
        """Integrate one observation's updates. A ``reset`` observation forgets everything
        first (a new episode: every object counts as changed)."""
        if observation.reset:
            forgotten = tuple(self._objects)
            self._objects.clear()
            self._anchor.clear()
            if forgotten:
                self.version += 1
        else:
            forgotten = ()
        self.latest_observation = observation
        self.latest_observation_at = now
        change = self.update(updates, now=now, timestep=observation.timestep)
        if forgotten:
            changed = tuple(dict.fromkeys((*forgotten, *change.changed)))
            reasons = {oid: "reset" for oid in forgotten} | dict(change.reasons)
            return WorldChange(self.version, changed, reasons, change.refreshed)
        return change

    def update(self, updates: Iterable[ObjectUpdate], *, now: float, timestep: int = -1
               ) -> WorldChange:
        """Apply updates; the world version moves at most once per call."""
        reasons: dict[str, str] = {}
        refreshed: list[str] = []
        staged: dict[str, WorldObject] = {}
        removed: list[str] = []
        next_version = self.version + 1
        for up in updates:
            old = staged.get(up.object_id) or self._objects.get(up.object_id)
            if up.removed:
                if old is not None:
                    removed.append(up.object_id)
                    reasons[up.object_id] = "removed"
                continue
            prov = Provenance(up.camera, timestep, now)
            if old is None:
                if up.pose is None:
                    continue  # a relation about an object never seen: nothing to anchor it to
                obj = WorldObject(
                    up.object_id, up.label or up.object_id, up.pose,
                    up.extent or (0.0, 0.0, 0.0), up.confidence, prov, next_version,
                    {Relation(str(k)): v for k, v in up.relations.items() if v is not None},
                )
                reasons[up.object_id] = "appeared"
                staged[up.object_id] = obj
                continue
            why = self._why_changed(old, up)
            relations = dict(old.relations)
            for rel, target in up.relations.items():
                rel = Relation(str(rel))
                if target is None:
                    relations.pop(rel, None)
                else:
                    relations[rel] = target
            obj = replace(
                old,
                label=up.label or old.label,
                pose=up.pose or old.pose,
                extent=up.extent or old.extent,
                confidence=up.confidence,
                provenance=prov,
                relations=relations,
                version=next_version if why else old.version,
            )
            if why:
                reasons[up.object_id] = why
            else:
                refreshed.append(up.object_id)
            staged[up.object_id] = obj
        if reasons:
            self.version = next_version
        for oid, obj in staged.items():
            self._objects[oid] = obj
            if oid in reasons:
                self._anchor[oid] = obj.pose
        for oid in removed:
            self._objects.pop(oid, None)
            self._anchor.pop(oid, None)
        return WorldChange(self.version, tuple(reasons), reasons, tuple(refreshed))

    def _why_changed(self, old: WorldObject, up: ObjectUpdate) -> str:
        anchor = self._anchor.get(old.object_id, old.pose)
        if up.pose is not None:
            moved = up.pose.distance_to(anchor)
            if moved > self.position_tolerance_m:
                return f"moved {moved:.3f} m"
            turned = up.pose.angle_to(anchor)
            if turned > self.angle_tolerance_rad:
                return f"turned {turned:.3f} rad"
        if up.extent is not None and max(
            abs(a - b) for a, b in zip(up.extent, old.extent, strict=True)
        ) > self.extent_tolerance_m:
            return "extent changed"
        for rel, target in up.relations.items():
            if old.relations.get(Relation(str(rel))) != target:
                return f"{rel} -> {target}"
        was_seen = old.confidence >= self.min_confidence
        if (up.confidence >= self.min_confidence) != was_seen:
            return "lost" if was_seen else "confirmed"
        return ""


def scripted_perception(observation: Observation) -> list[ObjectUpdate]:
    """Read ``observation.extras["objects"]``: a list of dicts with ``id``, ``pose`` (3 or 7
    numbers), and optionally ``extent``, ``confidence``, ``camera``, ``label``, ``relations``
    (``{"held_by": "gripper"}``; ``None`` clears one) and ``removed``."""
    out = []
    for item in observation.extras.get("objects", ()):
        rels = {Relation(str(k)): v for k, v in (item.get("relations") or {}).items()}
        out.append(ObjectUpdate(
            object_id=str(item["id"]),
            pose=None if item.get("pose") is None else Pose.of(item["pose"]),
            extent=None if item.get("extent") is None else tuple(item["extent"]),
            confidence=float(item.get("confidence", 1.0)),
            camera=str(item.get("camera", "")),
            label=str(item.get("label", "")),
            relations=rels,
            removed=bool(item.get("removed", False)),
        ))
    return out


def perception_registry(*, entry_points: bool = False) -> Registry[Callable[[], Perception]]:
    """Perception factories by name;
    with ``entry_points=True`` filled from the ``harness_bt.perception`` entry points."""
    registry: Registry[Callable[[], Perception]] = Registry("perception")
    if entry_points:
        registry.load(Group.PERCEPTION)
    return registry
