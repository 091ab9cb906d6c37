"""Objects that share a colour (three red cubes): each is one connected blob of that colour in
a frame, and which blob is which object is kept by tracking.

:func:`components` splits a colour mask into its connected blobs (largest first).
:class:`InstanceTracker` names the blobs of one observation, merged across cameras, after the
objects of a colour group: a blob takes the id of the nearest object seen before (within
``max_jump_m``), and blobs no track claims take the ids not seen yet, in order of position
(x, then y), so the same layout gets the same names; a blob still unnamed after that (an
object seen again far from where it was last seen) takes the nearest id left. A reset
observation forgets the tracks.

The object in the hand moves with the hand: a track within ``carried_m`` of the TCP while the
fingers are closed is carried, and at the next observation it is looked for where the hand
took it (its track moved by the TCP's displacement), seen or not. Frames come seldom while
the arm moves (they are rendered when someone looks), so a carried cube lowered into a tray
may be 12 cm from where it was last seen, nearer to another object's track than to its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import ndimage

__all__ = ["InstanceTracker", "components"]


def components(mask: np.ndarray, min_pixels: int) -> list[np.ndarray]:
    """The connected blobs of ``mask`` with at least ``min_pixels`` pixels, largest first, each
    as a mask of its own."""
    labels, count = ndimage.label(mask)
    if count == 0:
        return []
    sizes = np.bincount(labels.ravel())[1:]
    order = [int(i) + 1 for i in np.argsort(-sizes, kind="stable") if sizes[i] >= min_pixels]
    return [labels == k for k in order]


@dataclass
class InstanceTracker:
    """Names the blobs of one colour group (see the module docstring)."""

    ids: Sequence[str]
    merge_m: float = 0.03
    max_jump_m: float = 0.12
    carried_m: float = 0.04
    tracks: dict[str, np.ndarray] = field(default_factory=dict)
    #: the object carried at the last observation and where the TCP was then
    carried: tuple[str, np.ndarray] | None = None

    def reset(self) -> None:
        self.tracks.clear()
        self.carried = None

    def assign(self, detections: Sequence[Any], tcp: Sequence[float] | np.ndarray | None = None,
               closed: bool = False) -> dict[str, Any]:
        """Object id -> detection (``Detection``-like: ``position``, ``confidence``), one per
        object at most; detections of one object from several cameras are merged first.
        ``tcp``: where the hand is, ``closed``: whether its fingers are closed (the carried
        object moves with it)."""
        hand = None if tcp is None else np.asarray(tcp, dtype=float)
        if self.carried is not None and hand is not None and self.carried[0] in self.tracks:
            oid, then = self.carried
            self.tracks[oid] = self.tracks[oid] + (hand - then)
        merged: list[Any] = []
        for det in sorted(detections, key=lambda d: -d.confidence):
            pos = np.asarray(det.position)
            if all(np.linalg.norm(pos - np.asarray(m.position)) > self.merge_m for m in merged):
                merged.append(det)
        out: dict[str, Any] = {}
        pairs = sorted(
            (float(np.linalg.norm(np.asarray(d.position) - self.tracks[oid])), i, oid)
            for i, d in enumerate(merged) for oid in self.ids if oid in self.tracks)
        used: set[int] = set()
        for dist, i, oid in pairs:
            if dist > self.max_jump_m or i in used or oid in out:
                continue
            out[oid] = merged[i]
            used.add(i)
        fresh = [oid for oid in self.ids if oid not in out and oid not in self.tracks]
        left = sorted((d for i, d in enumerate(merged) if i not in used),
                      key=lambda d: (round(d.position[0], 3), round(d.position[1], 3)))
        for oid, det in zip(fresh, left, strict=False):
            out[oid] = det
        left = left[len(fresh):]
        lost = [oid for oid in self.ids if oid not in out]  # tracked, but far from every blob
        taken: set[int] = set()
        for _, i, oid in sorted(
                (float(np.linalg.norm(np.asarray(d.position) - self.tracks[oid])), i, oid)
                for i, d in enumerate(left) for oid in lost):
            if oid not in out and i not in taken:
                out[oid] = left[i]
                taken.add(i)
        out = {oid: replace(det, object_id=oid) for oid, det in out.items()}
        for oid, det in out.items():
            if det.confidence >= 0.5:
                self.tracks[oid] = np.asarray(det.position, dtype=float)
        self.carried = None
        if closed and hand is not None and self.tracks:
            dist, oid = min((float(np.linalg.norm(p - hand)), oid)
                            for oid, p in self.tracks.items())
            if dist <= self.carried_m:
                self.carried = (oid, hand)
        return out
