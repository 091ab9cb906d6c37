"""Poses as data: :class:`DerivePose` computes a pose from a sighting and writes it to the
blackboard as a :class:`DerivedPose`, which a skill uses through ``inputs``.

A derived pose carries the premises it really rests on, and only those:

- ``at: current`` (the default): the pose is *relative to where the object is*, e.g. "2 cm
  above the green cube's top". The object's version at the sighting becomes a premise of every
  command that uses the pose: if the object moves (a new version), the ledger refuses the
  command at dispatch (``STALE_PREMISE``) and the tree looks again.
- ``at: sighting``: the pose is *a fixed place in the world* that happened to be computed from
  where the object was, e.g. "10 cm left of where the red cube was". Moving the object
  afterwards (picking it up, which is the point) does not make that place wrong, so the pose
  carries no premise on it.

The ledger re-checks, at dispatch, the versions of exactly the premises a command carries
(its ``objects`` and ``premises`` ports, and the premises of the derived poses it reads).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from py_trees.common import Status

from harness_bt.context import OutcomeKind
from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import HarnessNode, NodeManifest, Port
from harness_bt.world import WorldSnapshot

__all__ = ["DerivePose", "DerivedPose"]

_ANCHORS = ("centre", "top", "bottom")


@dataclass(frozen=True, slots=True)
class DerivedPose:
    """A pose ``[x, y, z, qw, qx, qy, qz]`` (world frame) and the object versions it rests on
    (``premises``: object id -> version), with how it was made (``source``)."""

    pose: tuple[float, ...]
    premises: Mapping[str, int] = field(default_factory=dict)
    source: Mapping[str, Any] = field(default_factory=dict)

    def to_list(self) -> list[float]:
        return list(self.pose)

    def to_dict(self) -> dict[str, Any]:
        return {"pose": list(self.pose), "premises": dict(self.premises),
                "source": dict(self.source)}


class DerivePose(HarnessNode):
    """Derive a pose from an object's sighting and write it to the blackboard (see the module
    docstring).

    The pose is the object's ``anchor`` point (``centre``, the centre of its ``top`` face, or of
    its ``bottom``) plus ``offset`` ``[dx, dy, dz]`` metres, in the ``world`` frame or in the
    object's own (``frame: object``: x along its yaw). The orientation is the object's. With
    ``snapshot`` the sighting is the plan's (a blackboard key an ``observe`` recorded), else the
    world model's latest.

    - **SUCCESS**: the pose is written under ``output``.
    - **FAILURE**: the object was never seen, or the snapshot is missing (outcome ``failed``).
    """

    MANIFEST = NodeManifest(
        "derive_pose", "action", "Compute a pose from an object's sighting; write it.",
        (
            Port("object", "str", True, description="the object whose sighting it starts from"),
            Port("anchor", "str", default="centre", description="centre | top | bottom"),
            Port("offset", "list", description="[dx, dy, dz] in metres (default none)"),
            Port("frame", "str", default="world", description="world | object (its yaw)"),
            Port("at", "str", default="current", description="current: the pose moves with "
                 "the object (its version is a premise); sighting: a fixed place (no premise)"),
            Port("snapshot", "str", description="blackboard key of the plan's world snapshot",
                 blackboard="read"),
            Port("output", "str", True, blackboard="write",
                 description="blackboard key for the pose"),
        ),
        {"SUCCESS": "the pose was written", "FAILURE": "object never seen, or no snapshot",
         "RUNNING": "never"},
    )

    def __init__(self, name: str, object: str, *, output: str, anchor: str = "centre",
                 offset: Sequence[float] | None = None, frame: str = "world",
                 at: str = "current", snapshot: str | None = None) -> None:
        super().__init__(name)
        where = f"derive_pose {name!r}"
        if anchor not in _ANCHORS:
            raise DefinitionError("INVALID_NODE", f"{where}: anchor {anchor!r} is not one of "
                                  f"{', '.join(_ANCHORS)}", node_path=name, fix="use top")
        if frame not in ("world", "object"):
            raise DefinitionError("INVALID_NODE", f"{where}: frame {frame!r} is not world or "
                                  "object", node_path=name, fix="use frame: world")
        if at not in ("current", "sighting"):
            raise DefinitionError("INVALID_NODE", f"{where}: at {at!r} is not current or "
                                  "sighting", node_path=name, fix="use at: sighting for a "
                                  "fixed place, current for a pose that moves with the object")
        values = list(offset) if offset is not None else [0.0, 0.0, 0.0]
        if len(values) == 2:
            values.append(0.0)
        if len(values) != 3 or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                       and math.isfinite(v) for v in values):
            raise DefinitionError("INVALID_NODE", f"{where}: offset {offset!r} must be 2 or 3 "
                                  "finite numbers (metres)", node_path=name,
                                  fix="write offset: [0.0, 0.1, 0.0]")
        self.object_id = object
        self.anchor = anchor
        self.offset = tuple(float(v) for v in values)
        self.frame = frame
        self.at = at
        self.snapshot_key = snapshot
        self.output = output

    def params(self) -> dict[str, Any]:
        return {"object": self.object_id, "anchor": self.anchor, "offset": list(self.offset),
                "frame": self.frame, "at": self.at, "snapshot": self.snapshot_key,
                "output": self.output}

    def update(self) -> Status:
        ctx = self.context
        if self.snapshot_key is not None:
            snap = ctx.blackboard.get(self.snapshot_key)
            if not isinstance(snap, WorldSnapshot):
                return self.fail(OutcomeKind.FAILED, "MISSING_SNAPSHOT", key=self.snapshot_key)
            obj = snap.objects.get(self.object_id)
        else:
            obj = ctx.world.get(self.object_id)
        if obj is None or obj.pose is None:
            return self.fail(OutcomeKind.FAILED, "UNKNOWN_OBJECT", object_id=self.object_id)
        x, y, z = obj.pose.position
        qw, qx, qy, qz = obj.pose.quaternion_wxyz
        half = obj.extent[2] / 2.0 if len(obj.extent) > 2 else 0.0
        z += {"centre": 0.0, "top": half, "bottom": -half}[self.anchor]
        dx, dy, dz = self.offset
        if self.frame == "object":
            yaw = math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
            c, s = math.cos(yaw), math.sin(yaw)
            dx, dy = dx * c - dy * s, dx * s + dy * c
        pose = (x + dx, y + dy, z + dz, qw, qx, qy, qz)
        premises = {self.object_id: obj.version} if self.at == "current" else {}
        derived = DerivedPose(tuple(float(v) for v in pose), premises, {
            "object": self.object_id, "version": obj.version, "anchor": self.anchor,
            "offset": list(self.offset), "frame": self.frame, "at": self.at})
        ctx.blackboard.set(self.output, derived, writer=self.path)
        return Status.SUCCESS
