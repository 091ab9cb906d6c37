"""Colour perception: RGB-D frames in, world-model updates out.

For every camera frame with RGB and depth, each catalogue object is segmented by colour, its
pixels back-projected to world points with the intrinsics and the camera pose, and a yawed box
fitted to them: position (box centre, from the top seen and the nominal height), yaw, extent.

Confidence says how much of the object this view shows: the pixels found against the area the
box would show from this viewpoint (:func:`~skills.perception.vision.projected_box_area`),
lowered when something nearer to the camera borders the object (an occluder hides part of it).
A view below ``min_confidence`` updates no pose: the object is reported with its low
confidence only, so evaluators see it as not visible rather than misplaced.

Relations: ``held_by gripper`` when the object sits between the fingertips and the fingers are
closed to about its width (vision and the finger joints together); ``in`` / ``on`` a container
when it rests inside its footprint; ``on table`` when its bottom is at table height.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness_bt.errors import DefinitionError
from harness_bt.runtime.observation import CameraFrame, Observation
from harness_bt.world import ObjectUpdate, Pose, Relation
from skills.geometry import TABLE_Z, rotation_matrix, yaw_quat
from skills.perception.catalogue import BUILTIN_OBJECTS, KnownObject, catalogue_for
from skills.perception.instances import InstanceTracker, components
from skills.perception.vision import (
    ColourRange,
    back_project,
    colour_table,
    dilate,
    erode_min,
    fit_box,
    projected_box_area,
)

__all__ = ["ColourPerception", "Detection", "colour_perception"]

GRIPPER = "gripper"
TABLE = "table"
#: a finger gap (Panda) below this is a closed hand, carrying whatever is between the fingers
CLOSED_BELOW_M = 0.07
HAND_RADIUS_M = 0.07  # the Panda hand and fingers, around the TCP axis (hand pointing down)


@dataclass(frozen=True, slots=True)
class Detection:
    """One object in one camera frame."""

    object_id: str
    camera: str
    position: tuple[float, float, float]
    yaw: float
    size: tuple[float, float, float]
    confidence: float
    pixels: int
    expected_pixels: float
    occluded: float  # fraction of the object's outline bordered by something nearer


class ColourPerception:
    """A :data:`harness_bt.world.Perception` over coloured objects (stateful across frames of
    one episode: containers keep their last clear estimate; a reset observation forgets)."""

    def __init__(self, catalogue: Sequence[KnownObject] = BUILTIN_OBJECTS, *,
                 min_confidence: float = 0.5, min_depth_m: float = 0.15,
                 max_depth_m: float = 2.5, hand_clearance_m: float = 0.09) -> None:
        ids = [s.object_id for s in catalogue]
        if len(set(ids)) != len(ids):
            raise DefinitionError("INVALID_CATALOGUE", f"catalogue names an object twice: {ids}",
                                  fix="give each object once")
        self.catalogue = tuple(catalogue)
        self.min_confidence = min_confidence
        self.min_depth_m = min_depth_m
        self.max_depth_m = max_depth_m
        self.hand_clearance_m = hand_clearance_m
        self._containers: dict[str, Detection] = {}
        self.last_detections: dict[str, Detection] = {}
        groups: dict[ColourRange, list[str]] = {}
        for spec in self.catalogue:
            groups.setdefault(spec.colour, []).append(spec.object_id)
        #: colour groups of several objects: tracked blob by blob (skills.perception.instances)
        self._trackers = {ids[0]: InstanceTracker(ids) for ids in groups.values() if len(ids) > 1}
        self._group_of = {oid: ids[0] for ids in groups.values() if len(ids) > 1 for oid in ids}
        #: every colour looked for, one bit each (skills.perception.vision.ColourTable)
        self._colours = colour_table(tuple(groups))

    def reset(self) -> None:
        self._containers.clear()
        self.last_detections = {}
        for tracker in self._trackers.values():
            tracker.reset()

    # ------------------------------------------------------------------ one observation

    def __call__(self, observation: Observation) -> list[ObjectUpdate]:
        if observation.reset:
            self.reset()
        best: dict[str, Detection] = {}
        grouped: dict[str, list[Detection]] = {g: [] for g in self._trackers}
        for name, frame in observation.cameras.items():
            if frame.rgb is None or frame.depth is None:
                continue
            for det in self.detect(name, frame, observation):
                if det.object_id in grouped:
                    grouped[det.object_id].append(det)
                    continue
                old = best.get(det.object_id)
                if old is None or det.confidence > old.confidence:
                    best[det.object_id] = det
        if grouped:
            width = observation.gripper_width
            tcp = observation.ee_pose.position
            closed = width is not None and width < CLOSED_BELOW_M
            for group, dets in grouped.items():
                best.update(self._trackers[group].assign(dets, tcp, closed))
        self.last_detections = best
        specs = {s.object_id: s for s in self.catalogue}
        for oid, det in best.items():
            if specs[oid].kind == "container" and det.confidence >= self.min_confidence:
                self._containers[oid] = det
        updates = []
        for oid, det in best.items():
            if det.confidence < self.min_confidence:
                updates.append(ObjectUpdate(oid, None, confidence=round(det.confidence, 3),
                                            camera=det.camera, label=specs[oid].label))
                continue
            updates.append(ObjectUpdate(
                oid, Pose(det.position, tuple(float(v) for v in yaw_quat(det.yaw))),  # type: ignore[arg-type]
                extent=det.size, confidence=round(det.confidence, 3), camera=det.camera,
                label=specs[oid].label, relations=self._relations(specs[oid], det, observation)))
        return updates

    def detect(self, camera: str, frame: CameraFrame, observation: Observation
               ) -> list[Detection]:
        """Every catalogue object found in one frame (confidence may be low). Objects that share
        a colour give one detection per blob, each under the group's first id (the caller
        names them)."""
        assert frame.rgb is not None and frame.depth is not None
        depth = np.asarray(frame.depth, dtype=np.float64)
        bits = self._colours.classify(np.asarray(frame.rgb))
        valid = np.isfinite(depth) & (depth > self.min_depth_m) & (depth < self.max_depth_m)
        tcp = np.asarray(observation.ee_pose.position, dtype=np.float64)
        out = []
        for spec in self.catalogue:
            group = self._group_of.get(spec.object_id)
            mask = self._colours.mask(bits, spec.colour) & valid
            if group is None:
                det = self._detect_one(spec, camera, frame, depth, mask, tcp)
                if det is not None:
                    out.append(det)
            elif group == spec.object_id:
                for blob in components(mask, spec.min_pixels):
                    det = self._detect_one(spec, camera, frame, depth, blob, tcp)
                    if det is not None:
                        out.append(det)
        return out

    # ------------------------------------------------------------------ internals

    def _detect_one(self, spec: KnownObject, camera: str, frame: CameraFrame, depth: np.ndarray,
                    mask: np.ndarray, tcp: np.ndarray) -> Detection | None:
        rows, cols = np.nonzero(mask)
        if rows.size < spec.min_pixels:
            return None
        pts = back_project(rows, cols, depth[rows, cols], frame.intrinsics, frame.position,
                           frame.quaternion_wxyz)
        keep = (pts[:, 2] > TABLE_Z - 0.02) & (pts[:, 2] < 1.0)
        if spec.max_z is not None:
            keep &= pts[:, 2] <= spec.max_z
        if spec.kind == "container":
            keep &= np.linalg.norm(pts - tcp, axis=1) > self.hand_clearance_m
        radius = 0.9 * math.hypot(*spec.size)
        for _ in range(3):  # trim to the main cluster
            if keep.sum() < spec.min_pixels:
                return None
            centre = np.median(pts[keep], axis=0)
            keep &= np.linalg.norm(pts - centre, axis=1) <= radius
        n = int(keep.sum())
        if n < spec.min_pixels:
            return None
        rows, cols, pts = rows[keep], cols[keep], pts[keep]
        fit = fit_box(pts, period=spec.yaw_period)
        position = (fit.centre_xy[0], fit.centre_xy[1], fit.top_z - spec.size[2] / 2.0)
        cam_p = np.asarray(frame.position, dtype=np.float64)
        offset = np.asarray(position) - cam_p
        dist = float(np.linalg.norm(offset))
        k = np.asarray(frame.intrinsics, dtype=np.float64)
        forward = _optical_axis(frame.quaternion_wxyz)
        along = max(float(offset @ forward), 1e-3)
        expected = projected_box_area(spec.size, fit.yaw, offset / max(dist, 1e-9)) * \
            k[0, 0] * k[1, 1] / (along * along)
        occluded = _occluded_outline(rows, cols, depth, frame, tcp)
        visible = min(1.0, n / max(expected * spec.full_view, 1.0))
        confidence = visible * max(0.0, 1.0 - 2.0 * occluded)
        return Detection(spec.object_id, camera, (float(position[0]), float(position[1]),
                                                  float(position[2])),
                         fit.yaw, spec.size, float(confidence), n, float(expected),
                         float(occluded))

    def _relations(self, spec: KnownObject, det: Detection, observation: Observation
                   ) -> dict[Relation, str | None]:
        if spec.kind == "container":
            return {Relation.ON: TABLE, Relation.IN: None, Relation.HELD_BY: None}
        x, y, z = det.position
        bottom = z - spec.size[2] / 2.0
        held = _between_fingers(det, spec, observation)
        rel: dict[Relation, str | None] = {Relation.HELD_BY: GRIPPER if held else None,
                                           Relation.IN: None, Relation.ON: None}
        for cid, box in self._containers.items():
            cx, cy, cz = box.position
            c, s = math.cos(box.yaw), math.sin(box.yaw)
            u = (x - cx) * c + (y - cy) * s
            w = -(x - cx) * s + (y - cy) * c
            inner_x = box.size[0] / 2.0 - 0.01
            inner_y = box.size[1] / 2.0 - 0.01
            floor = cz - box.size[2] / 2.0
            if abs(u) <= inner_x and abs(w) <= inner_y and bottom <= floor + 0.03:
                rel[Relation.IN] = cid
                rel[Relation.ON] = cid
                return rel
        if bottom <= TABLE_Z + 0.012:
            rel[Relation.ON] = TABLE
        return rel


def _optical_axis(quaternion_wxyz: np.ndarray) -> np.ndarray:
    return rotation_matrix(quaternion_wxyz)[:, 2]


def _occluded_outline(rows: np.ndarray, cols: np.ndarray, depth: np.ndarray,
                      frame: CameraFrame, tcp: np.ndarray, *, margin_m: float = 0.03) -> float:
    """Fraction of the pixels just outside the object's silhouette that are nearer to the
    camera than the object pixels next to them by more than ``margin_m``, or have no valid
    depth (something right at the lens). The robot's own hand (around the TCP, from the
    observation's end-effector pose) does not count: the pixel count already says how much of
    the object it hides."""
    r0, r1 = max(int(rows.min()) - 3, 0), min(int(rows.max()) + 4, depth.shape[0])
    c0, c1 = max(int(cols.min()) - 3, 0), min(int(cols.max()) + 4, depth.shape[1])
    local = np.zeros((r1 - r0, c1 - c0), dtype=bool)
    local[rows - r0, cols - c0] = True
    ring = dilate(local, 2) & ~local
    if not ring.any():
        return 0.0
    own = np.full(local.shape, np.inf)
    own[rows - r0, cols - c0] = depth[rows, cols]
    nearest_own = erode_min(own, 2)
    rr, cc = np.nonzero(ring)
    d = depth[r0:r1, c0:c1][ring]
    nearer = ~np.isfinite(d) | (d < nearest_own[ring] - margin_m)
    if nearer.any():
        finite = np.isfinite(d) & nearer
        pts = back_project(rr[finite] + r0, cc[finite] + c0, d[finite], frame.intrinsics,
                           frame.position, frame.quaternion_wxyz)
        hand = (np.hypot(pts[:, 0] - tcp[0], pts[:, 1] - tcp[1]) <= HAND_RADIUS_M) & \
            (pts[:, 2] >= tcp[2] - 0.015)
        idx = np.flatnonzero(finite)
        nearer[idx[hand]] = False
    return float(nearer.mean())


def _between_fingers(det: Detection, spec: KnownObject, observation: Observation) -> bool:
    width = observation.gripper_width
    if width is None:
        return False
    tcp = np.asarray(observation.ee_pose.position, dtype=np.float64)
    pos = np.asarray(det.position)
    narrow = min(spec.size[0], spec.size[1])
    near = float(np.hypot(*(pos[:2] - tcp[:2]))) <= 0.025 and abs(pos[2] - tcp[2]) <= 0.03
    return near and 0.5 * narrow <= width <= narrow + 0.012


def colour_perception(scene: Any = None) -> ColourPerception:
    """The perception for the built-in simulator's objects (the ``harness_bt.perception``
    entry point ``colour``): the objects of ``scene`` (a :class:`harness_bt.scene.Scene`, when
    the run names one), else those of the built-in scenes."""
    if scene is None:
        return ColourPerception(BUILTIN_OBJECTS)
    return ColourPerception(catalogue_for(scene.spec.objects))
