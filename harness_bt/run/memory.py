"""World memory in a run's checkpoints: what the world model believed (objects, poses, extents,
confidences, relations, versions and when each was seen) and the blackboard values made from
it (a plan's :class:`~harness_bt.world.WorldSnapshot`, a
:class:`~harness_bt.nodes.poses.DerivedPose`), as versioned JSON, and back on ``harness
resume``.

- **Versions** are kept: each object's version, the pose its drift is measured from (its
  anchor) and the world version, so the premises of commands planned before the crash still
  name the versions the world holds, and the first fresh observation re-checks them (an object
  seen where it was keeps its version; one that moved gets a new one, and every premise on it
  fails, as in a run that never stopped).
- **Freshness** is kept as wall-clock time (when each object was last seen), so in the resumed
  process an object is as old as it really is, the time the harness was dead included. A
  restored object is marked ``remembered`` (:class:`~harness_bt.world.Provenance`) until it
  is seen again: ``check`` with ``max_age_s`` fails it as stale until a fresh sighting; an
  ``observe`` accepts it only after an observation that arrived since the leaf started did not
  show it (it is occluded, or out of view), and the snapshot it records says so.
- **Format**: every encoded value carries ``format`` (:data:`MEMORY_FORMAT`). A value of
  another format, or one that does not check out, is refused with ``WORLD_MEMORY_INVALID``
  naming the checkpoint, the value and the fix (``harness resume --forget-world`` resumes
  without the memory); a checkpoint written before world memory existed has none, and the
  resumed run says so (trace ``resume``, ``world.restored`` false) and observes everything
  again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.nodes.poses import DerivedPose
from harness_bt.world import Pose, Provenance, Relation, WorldModel, WorldObject, WorldSnapshot

__all__ = ["MEMORY_FORMAT", "decode_value", "encode_value", "forgotten", "recall", "remember",
           "world_memory"]

MEMORY_FORMAT = 1
_TYPE = "$type"
_FIX = ("the run record is damaged or was written by another harness-bt version; resume with "
        "the version that wrote it, or pass --forget-world to resume without the world memory "
        "(every object is observed again)")


class _Bad(Exception):
    """A value that does not check out: what is wrong, at which path."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: {what}")


def _num(data: Mapping[str, Any], key: str, path: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Bad(f"{path}.{key}", f"{value!r} is not a finite number")
    return float(value)


def _int(data: Mapping[str, Any], key: str, path: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"{path}.{key}", f"{value!r} is not an integer")
    return value


def _str(data: Mapping[str, Any], key: str, path: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise _Bad(f"{path}.{key}", f"{value!r} is not a string")
    return value


def _numbers(data: Mapping[str, Any], key: str, path: str, sizes: tuple[int, ...]
             ) -> list[float]:
    value = data.get(key)
    if not isinstance(value, list) or len(value) not in sizes:
        raise _Bad(f"{path}.{key}", f"{value!r} is not a list of {' or '.join(map(str, sizes))} "
                   "numbers")
    return [_num({"v": v}, "v", f"{path}.{key}[{i}]") for i, v in enumerate(value)]


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Bad(path, f"{value!r} is not a mapping")
    return value


def _format(data: Mapping[str, Any], path: str) -> None:
    fmt = data.get("format")
    if fmt != MEMORY_FORMAT:
        raise _Bad(f"{path}.format", f"{fmt!r}: this harness-bt reads world memory of format "
                   f"{MEMORY_FORMAT}")


# ---------------------------------------------------------------------- objects


def _encode_object(obj: WorldObject, *, now: float, wall: float, anchor: Pose | None
                   ) -> dict[str, Any]:
    out = {"id": obj.object_id, "label": obj.label, "pose": obj.pose.to_list(),
           "extent": list(obj.extent), "confidence": obj.confidence,
           "camera": obj.provenance.camera, "timestep": obj.provenance.timestep,
           "seen_wall": wall - (now - obj.provenance.observed_at), "version": obj.version,
           "relations": {str(k): v for k, v in obj.relations.items()}}
    if anchor is not None and anchor != obj.pose:
        out["anchor"] = anchor.to_list()
    return out


def _decode_object(data: Any, path: str, *, now: float, wall: float
                   ) -> tuple[WorldObject, Pose | None]:
    data = _mapping(data, path)
    oid = _str(data, "id", path)
    relations: dict[Relation, str] = {}
    for rel, target in _mapping(data.get("relations", {}), f"{path}.relations").items():
        if rel not in {r.value for r in Relation} or not isinstance(target, str):
            raise _Bad(f"{path}.relations", f"{rel!r}: {target!r} is not a relation "
                       f"({', '.join(r.value for r in Relation)}) to an object id")
        relations[Relation(rel)] = target
    pose = Pose.of(_numbers(data, "pose", path, (7,)))
    extent = _numbers(data, "extent", path, (3,))
    confidence = _num(data, "confidence", path)
    if not 0.0 <= confidence <= 1.0:
        raise _Bad(f"{path}.confidence", f"{confidence!r} is not within [0, 1]")
    age = max(0.0, wall - _num(data, "seen_wall", path))
    obj = WorldObject(
        oid, _str(data, "label", path), pose, (extent[0], extent[1], extent[2]), confidence,
        Provenance(_str(data, "camera", path), _int(data, "timestep", path), now - age,
                   remembered=True),
        _int(data, "version", path), relations)
    anchor = Pose.of(_numbers(data, "anchor", path, (7,))) if "anchor" in data else None
    return obj, anchor


def _objects(data: Mapping[str, Any], path: str, *, now: float, wall: float
             ) -> list[tuple[WorldObject, Pose | None]]:
    items = data.get("objects")
    if not isinstance(items, list):
        raise _Bad(f"{path}.objects", f"{items!r} is not a list")
    out = [_decode_object(item, f"{path}.objects[{i}]", now=now, wall=wall)
           for i, item in enumerate(items)]
    ids = [obj.object_id for obj, _ in out]
    if len(set(ids)) != len(ids):
        raise _Bad(f"{path}.objects", f"object ids repeat: {sorted(ids)}")
    return out


# ---------------------------------------------------------------------- the world model


def remember(world: WorldModel, *, now: float, wall: float) -> dict[str, Any]:
    """The world model as JSON data (``now``: the run's monotonic time, ``wall``: the wall
    time at the same moment)."""
    return {"format": MEMORY_FORMAT, "version": world.version,
            "objects": [_encode_object(o, now=now, wall=wall, anchor=world.anchor(o.object_id))
                        for o in world.objects()]}


def forgotten(memory: Mapping[str, Any] | None, why: str) -> dict[str, Any]:
    """A memory with no objects that keeps the world version (so every new sighting gets a
    newer one than any premise planned before), and says why it is empty."""
    version = memory.get("version", 0) if isinstance(memory, Mapping) else 0
    return {"format": MEMORY_FORMAT, "version": version if isinstance(version, int) else 0,
            "objects": [], "forgotten": why}


def world_memory(data: Any, *, now: float, wall: float, where: str
                 ) -> tuple[int, list[tuple[WorldObject, Pose | None]]]:
    """Check and decode :func:`remember`'s data: the world version and the objects with their
    anchors (times mapped onto ``now`` / ``wall``); ``WORLD_MEMORY_INVALID`` otherwise."""
    try:
        data = _mapping(data, "world")
        if "unreadable" in data:  # the record's newest world memory is not JSON
            raise _Bad("world", f"cannot be read: {data['unreadable']}")
        _format(data, "world")
        return _int(data, "version", "world"), _objects(data, "world", now=now, wall=wall)
    except (_Bad, DefinitionError) as exc:
        raise _invalid(where, exc) from None


def recall(world: WorldModel, data: Any, *, now: float, wall: float, where: str
           ) -> dict[str, Any]:
    """Restore :func:`remember`'s data into ``world``; what was restored, for the trace."""
    version, objects = world_memory(data, now=now, wall=wall, where=where)
    world.recall([o for o, _ in objects], {o.object_id: a for o, a in objects if a is not None},
                 version)
    out: dict[str, Any] = {"restored": True, "version": version,
                           "objects": {o.object_id: o.version for o, _ in objects}}
    if isinstance(data, Mapping) and data.get("forgotten"):
        out["forgotten"] = str(data["forgotten"])
    return out


# ---------------------------------------------------------------------- blackboard values


def encode_value(value: Any, *, now: float, wall: float) -> dict[str, Any] | None:
    """A blackboard value made from the world, as JSON data; None for any other value."""
    if isinstance(value, WorldSnapshot):
        return {_TYPE: "world_snapshot", "format": MEMORY_FORMAT, "version": value.version,
                "taken_wall": wall - (now - value.taken_at),
                "objects": [_encode_object(o, now=now, wall=wall, anchor=None)
                            for o in value.objects.values()]}
    if isinstance(value, DerivedPose):
        return {_TYPE: "derived_pose", "format": MEMORY_FORMAT, "pose": list(value.pose),
                "premises": dict(value.premises), "source": dict(value.source)}
    return None


def decode_value(data: Any, *, now: float, wall: float, where: str) -> Any:
    """The blackboard value :func:`encode_value` encoded; ``WORLD_MEMORY_INVALID``
    otherwise."""
    try:
        data = _mapping(data, "value")
        _format(data, "value")
        kind = data.get(_TYPE)
        if kind == "world_snapshot":
            objects = _objects(data, "value", now=now, wall=wall)
            taken = now - max(0.0, wall - _num(data, "taken_wall", "value"))
            return WorldSnapshot(_int(data, "version", "value"), taken,
                                 {o.object_id: o for o, _ in objects})
        if kind == "derived_pose":
            premises = _mapping(data.get("premises"), "value.premises")
            if not all(isinstance(v, int) and not isinstance(v, bool)
                       for v in premises.values()):
                raise _Bad("value.premises", f"{dict(premises)!r} must map object ids to "
                           "versions")
            return DerivedPose(tuple(_numbers(data, "pose", "value", (3, 7))), dict(premises),
                               dict(_mapping(data.get("source", {}), "value.source")))
        raise _Bad(f"value.{_TYPE}", f"{kind!r} is not world_snapshot or derived_pose")
    except (_Bad, DefinitionError) as exc:
        raise _invalid(where, exc) from None


def _invalid(where: str, exc: Exception) -> DefinitionError:
    what = exc.message if isinstance(exc, DefinitionError) else str(exc)
    return DefinitionError("WORLD_MEMORY_INVALID", f"{where}: the world memory does not check "
                           f"out: {what}", where=where, fix=_FIX)
