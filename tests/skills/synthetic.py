"""A tiny ray caster for perception tests: a table plane and yawed boxes (solid, or open
trays) seen by a pinhole camera, as RGB and metric depth along the optical axis, with the
camera's world pose in the OpenCV convention (x right, y down, z forward)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from skills.geometry import DOWN

TABLE_RGB = (158, 128, 97)
SKY_RGB = (255, 255, 255)
FAR = 3.0


@dataclass(frozen=True)
class Box:
    centre: tuple[float, float, float]
    size: tuple[float, float, float]
    rgb: tuple[int, int, int]
    yaw: float = 0.0


@dataclass
class Camera:
    eye: tuple[float, float, float] = (1.25, 0.0, 0.55)
    target: tuple[float, float, float] = (0.45, 0.0, 0.05)
    width: int = 256
    height: int = 192
    fov_deg: float = 40.0
    rotation: np.ndarray = field(init=False)
    k: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        eye, target = np.array(self.eye), np.array(self.target)
        forward = (target - eye) / np.linalg.norm(target - eye)
        right = np.cross(forward, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        self.rotation = np.column_stack([right, down, forward])
        f = (self.height / 2.0) / math.tan(math.radians(self.fov_deg) / 2.0)
        self.k = np.array([[f, 0, (self.width - 1) / 2.0], [0, f, (self.height - 1) / 2.0],
                           [0, 0, 1.0]])

    def quaternion(self) -> np.ndarray:
        m = self.rotation
        w = math.sqrt(max(1e-12, 1.0 + m[0, 0] + m[1, 1] + m[2, 2])) / 2.0
        q = np.array([w, (m[2, 1] - m[1, 2]) / (4 * w), (m[0, 2] - m[2, 0]) / (4 * w),
                      (m[1, 0] - m[0, 1]) / (4 * w)])
        return q / np.linalg.norm(q)


def _box_hits(origin: np.ndarray, dirs: np.ndarray, box: Box) -> np.ndarray:
    """Ray parameter of the first hit on the box (inf where none), rays ``origin + t dirs``."""
    c, s = math.cos(-box.yaw), math.sin(-box.yaw)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    o = rot @ (origin - np.array(box.centre))
    d = dirs @ rot.T
    half = np.array(box.size) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - o) / d
        t2 = (half - o) / d
    tmin = np.nanmax(np.minimum(t1, t2), axis=1)
    tmax = np.nanmin(np.maximum(t1, t2), axis=1)
    hit = (tmax >= tmin) & (tmax > 0)
    return np.where(hit, np.where(tmin > 0, tmin, np.inf), np.inf)


def render(camera: Camera, boxes: list[Box], *, occluder: tuple[int, int, int, int] | None = None
           ) -> CameraFrame:
    """RGB and depth of the scene; ``occluder`` (x0, y0, x1, y1) paints a box of dark pixels
    a few centimetres from the lens, as the simulator's occlusion fault does."""
    h, w = camera.height, camera.width
    v, u = np.mgrid[0:h, 0:w]
    k = camera.k
    cam_dirs = np.stack([(u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1], np.ones_like(u,
                                                                                     float)],
                        axis=-1).reshape(-1, 3)
    dirs = cam_dirs @ camera.rotation.T  # world direction per unit of depth
    origin = np.array(camera.eye)
    depth = np.full(h * w, FAR)
    rgb = np.tile(np.array(SKY_RGB, dtype=np.uint8), (h * w, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_table = np.where(dirs[:, 2] < 0, -origin[2] / dirs[:, 2], np.inf)
    best = np.where(np.isfinite(t_table) & (t_table < FAR), t_table, np.inf)
    rgb[np.isfinite(best)] = TABLE_RGB
    for box in boxes:
        t = _box_hits(origin, dirs, box)
        closer = t < best
        best = np.where(closer, t, best)
        rgb[closer] = box.rgb
    depth = np.where(np.isfinite(best), best, FAR).astype(np.float32).reshape(h, w)
    image = rgb.reshape(h, w, 3).copy()
    if occluder is not None:
        x0, y0, x1, y1 = occluder
        image[y0:y1, x0:x1] = 40
        depth[y0:y1, x0:x1] = 0.08
    return CameraFrame(image, depth, camera.k.astype(np.float32),
                       np.array(camera.eye, dtype=np.float32),
                       camera.quaternion().astype(np.float32))


def tray_boxes(centre: tuple[float, float], yaw: float = 0.0, *, size: float = 0.21,
               height: float = 0.043, wall: float = 0.008,
               rgb: tuple[int, int, int] = (60, 60, 62)) -> list[Box]:
    """An open tray: a floor and four walls."""
    x, y = centre
    c, s = math.cos(yaw), math.sin(yaw)
    half = size / 2.0 - wall / 2.0
    out = [Box((x, y, 0.003), (size, size, 0.006), rgb, yaw)]
    for dx, dy, sx, sy in ((half, 0, wall, size), (-half, 0, wall, size),
                           (0, half, size, wall), (0, -half, size, wall)):
        out.append(Box((x + c * dx - s * dy, y + s * dx + c * dy, height / 2.0),
                       (sx, sy, height), rgb, yaw))
    return out


def observation(frames: dict[str, CameraFrame], *,
                tcp: tuple[float, float, float] = (0.3, 0.0, 0.4), finger_gap: float = 0.08,
                timestep: int = 1, reset: bool = False) -> Observation:
    joints = np.array([0.0, -0.55, 0.0, -2.45, 0.0, 1.9, 0.785, finger_gap / 2, finger_gap / 2])
    return Observation(frames, joints, (EePose(np.array(tcp, dtype=float), DOWN.copy()),), "",
                       timestep, reset)
