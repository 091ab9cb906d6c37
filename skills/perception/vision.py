"""Image-level steps of perception: colour segmentation, depth back-projection, box fitting.

Camera model: a pinhole with intrinsics ``K`` (3x3), depth in metres along the optical axis,
camera pose ``p`` (world position) and ``q`` (world orientation, w, x, y, z) in the OpenCV
convention (x right, y down, z forward). A pixel (u = column, v = row) with depth d is the
camera point ``((u - cx) d / fx, (v - cy) d / fy, d)`` and the world point ``R(q) X + p``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import ndimage

from skills.geometry import rotation_matrix

__all__ = [
    "BoxFit",
    "ColourRange",
    "ColourTable",
    "back_project",
    "colour_table",
    "dilate",
    "erode_min",
    "fit_box",
    "hsv",
    "projected_box_area",
]


@dataclass(frozen=True, slots=True)
class ColourRange:
    """A region of HSV space: hue in degrees (``hue_lo > hue_hi`` wraps through 0, e.g. red),
    saturation and value in [0, 1]."""

    hue_lo: float = 0.0
    hue_hi: float = 360.0
    sat_lo: float = 0.0
    sat_hi: float = 1.0
    val_lo: float = 0.0
    val_hi: float = 1.0

    def mask(self, h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
        if self.hue_lo <= self.hue_hi:
            hue = (h >= self.hue_lo) & (h <= self.hue_hi)
        else:
            hue = (h >= self.hue_lo) | (h <= self.hue_hi)
        return hue & (s >= self.sat_lo) & (s <= self.sat_hi) & (v >= self.val_lo) & \
            (v <= self.val_hi)


def hsv(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue (degrees), saturation and value (0..1) of an HxWx3 uint8 image."""
    x = rgb.astype(np.float32) / 255.0
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    mx = x.max(axis=-1)
    mn = x.min(axis=-1)
    d = mx - mn
    safe = np.maximum(d, 1e-9)
    h = np.where(mx == r, np.mod(60.0 * (g - b) / safe, 360.0),
                 np.where(mx == g, 60.0 * ((b - r) / safe + 2.0), 60.0 * ((r - g) / safe + 4.0)))
    h = np.where(d <= 1e-9, 0.0, h)
    s = np.where(mx > 0, d / np.maximum(mx, 1e-9), 0.0)
    return h.astype(np.float32), s.astype(np.float32), mx


class ColourTable:
    """Which of several :class:`ColourRange` each pixel of a uint8 RGB image falls in, as one
    bit per range (bit ``i``: ``ranges[i]``), the same answer as :func:`hsv` and
    :meth:`ColourRange.mask` give pixel by pixel.

    A lookup table over the 2^24 RGB colours, filled colour by colour: a colour's HSV is
    computed (by :func:`hsv`, so the float32 arithmetic is the same) the first time an image
    shows it, and later images only look their colours up. A rendered scene shows a few
    thousand colours, so after its first frames an image costs a gather instead of a float
    HSV conversion and one mask per range. The table is 2^24 entries of 1, 2 or 4 bytes (7, 15
    or 31 ranges at most); the memory is taken from the system page by page as colours are
    seen (``np.zeros``). More than 31 ranges: no table, every image converted in full.
    Threads may share a table: an entry is only ever written with the one value its colour
    has, and a colour read before another thread's write is just classified again.
    """

    MAX_RANGES = 31

    def __init__(self, ranges: Sequence[ColourRange]) -> None:
        self.ranges = tuple(ranges)
        n = len(self.ranges)
        dtype = np.uint8 if n <= 7 else np.uint16 if n <= 15 else np.uint32
        self._known = np.array(1 << n, dtype=dtype).item() if n <= self.MAX_RANGES else 0
        #: bit n set: the colour has been classified; bits 0..n-1: the ranges it falls in
        self._table = np.zeros(1 << 24, dtype=dtype) if n <= self.MAX_RANGES else None
        self.dtype = np.dtype(np.uint32 if self._table is None else dtype)

    def _bits(self, h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = np.zeros(h.shape, dtype=np.uint32)
        for i, colour in enumerate(self.ranges):
            out |= colour.mask(h, s, v).astype(np.uint32) << np.uint32(i)
        return out

    def classify(self, rgb: np.ndarray) -> np.ndarray:
        """HxW bits (``self.dtype``): bit ``i`` set where the pixel falls in ``ranges[i]``;
        ``rgb`` an HxWx3 uint8 image."""
        rgb = np.asarray(rgb)
        if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
            raise ValueError(f"an HxWx3 uint8 image is needed, not {rgb.dtype} {rgb.shape}")
        if self._table is None:
            return self._bits(*hsv(rgb))
        codes = rgb[..., 0].astype(np.uint32) << 16
        codes |= rgb[..., 1].astype(np.uint32) << 8
        codes |= rgb[..., 2]
        bits = self._table[codes]
        unknown = bits == 0
        if unknown.any():
            fresh = np.unique(codes[unknown])
            colours = np.stack([fresh >> 16, (fresh >> 8) & 0xFF, fresh & 0xFF],
                               axis=-1).astype(np.uint8)[None]
            self._table[fresh] = (self._bits(*hsv(colours))[0] | self._known).astype(
                self._table.dtype)
            bits = self._table[codes]
        return bits & ~np.array(self._known, dtype=bits.dtype)

    def mask(self, bits: np.ndarray, colour: ColourRange) -> np.ndarray:
        """The pixels of ``colour`` (one of the ranges) in bits from :meth:`classify`."""
        return (bits & np.array(1 << self.ranges.index(colour), dtype=bits.dtype)) != 0


@lru_cache(maxsize=8)
def colour_table(ranges: tuple[ColourRange, ...]) -> ColourTable:
    """A :class:`ColourTable` shared by the perceptions that look for the same ranges (the
    colours an episode's first frames teach it serve the next episodes too)."""
    return ColourTable(ranges)


def back_project(rows: np.ndarray, cols: np.ndarray, depth: np.ndarray, intrinsics: np.ndarray,
                 position: np.ndarray, quaternion_wxyz: np.ndarray) -> np.ndarray:
    """World points (N x 3) of the pixels ``(rows, cols)`` with the given depths."""
    k = np.asarray(intrinsics, dtype=np.float64)
    fx, fy, cx, cy = k[0, 0], k[1, 1], k[0, 2], k[1, 2]
    d = np.asarray(depth, dtype=np.float64)
    cam = np.stack([(cols - cx) * d / fx, (rows - cy) * d / fy, d], axis=1)
    rot = rotation_matrix(quaternion_wxyz)
    return cam @ rot.T + np.asarray(position, dtype=np.float64)


def dilate(mask: np.ndarray, radius: int = 2) -> np.ndarray:
    """Binary dilation by a square of side ``2 radius + 1`` (no wrap-around at the borders)."""
    return np.asarray(ndimage.maximum_filter(np.asarray(mask, dtype=bool), size=2 * radius + 1,
                                             mode="constant", cval=0))


def erode_min(values: np.ndarray, radius: int = 2) -> np.ndarray:
    """Each pixel's smallest value within a square of side ``2 radius + 1`` (pixels beyond the
    borders count as +inf)."""
    return np.asarray(ndimage.minimum_filter(values, size=2 * radius + 1, mode="constant",
                                             cval=np.inf))


@dataclass(frozen=True, slots=True)
class BoxFit:
    """A yawed box fitted to points: centre (x, y), size along its own axes, yaw (radians),
    the top and bottom heights seen."""

    centre_xy: tuple[float, float]
    size_xy: tuple[float, float]
    yaw: float
    top_z: float
    bottom_z: float


def fit_box(points: np.ndarray, *, period: float = math.pi / 2, max_points: int = 600) -> BoxFit:
    """The smallest-area rectangle around the points' x-y footprint (robust percentiles),
    searched over yaws in ``[-period/2, period/2)``; heights from the z percentiles."""
    if len(points) > max_points:  # a regular subsample keeps the outline
        points = points[:: math.ceil(len(points) / max_points)]
    xy = points[:, :2]
    mid = np.median(xy, axis=0)
    rel = xy - mid

    def extents(yaws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c, s = np.cos(yaws), np.sin(yaws)
        u = rel[:, :1] * c + rel[:, 1:] * s  # along each candidate's first axis (N x A)
        w = -rel[:, :1] * s + rel[:, 1:] * c  # along its second axis
        lo, hi = np.percentile(np.stack([u, w]), [1.0, 99.0], axis=1)  # 2 x A each
        size = hi - lo
        return size[0] * size[1], lo, hi

    half = period / 2.0
    coarse = np.arange(-half, half, math.radians(3.0))
    best = float(coarse[int(np.argmin(extents(coarse)[0]))])
    fine = np.arange(best - math.radians(3.0), best + math.radians(3.0), math.radians(0.5))
    areas, lo, hi = extents(fine)
    i = int(np.argmin(areas))
    yaw = float(fine[i])
    lo_i, hi_i = lo[:, i], hi[:, i]
    centre_local = (lo_i + hi_i) / 2.0
    c, s = math.cos(yaw), math.sin(yaw)
    centre = mid + np.array([[c, -s], [s, c]]) @ centre_local
    yaw = (yaw + half) % period - half
    z = points[:, 2]
    top, bottom = np.percentile(z, [97.0, 3.0])
    return BoxFit((float(centre[0]), float(centre[1])),
                  (float(hi_i[0] - lo_i[0]), float(hi_i[1] - lo_i[1])), yaw, float(top),
                  float(bottom))


def projected_box_area(size: tuple[float, float, float], yaw: float,
                       view_dir: np.ndarray) -> float:
    """Area (m^2) a box of ``size`` turned by ``yaw`` shows to a camera looking along
    ``view_dir`` (unit vector from the camera to the box): the visible faces, projected."""
    sx, sy, sz = size
    c, s = math.cos(yaw), math.sin(yaw)
    nx = np.array([c, s, 0.0])
    ny = np.array([-s, c, 0.0])
    nz = np.array([0.0, 0.0, 1.0])
    v = np.asarray(view_dir, dtype=np.float64)
    return float(sy * sz * abs(v @ nx) + sx * sz * abs(v @ ny) + sx * sy * abs(v @ nz))
