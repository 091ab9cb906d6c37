"""Camera frames recorded beside a run's trace (``harness run --record-frames``).

:class:`FrameRecorder` wraps the run's perception: every observation still goes to the
perception unchanged, and at most ``rate_hz`` times per second of the run's clock (per
camera) the camera's RGB image is compressed (JPEG through Pillow) into a tar file beside
the trace (``run.jsonl`` -> ``run.frames.tar``, one member per image:
``<camera>/<timestep>.jpg``). Each recorded observation adds one ``frame`` event to the
trace: the file and members, image sizes, each camera's pose and intrinsics, the end
effector's pose and the objects the perception reported (id, pose, extent, confidence, and
their box in each image), so a replay or an export finds the images from the trace alone.
Poses are ``[x, y, z, qw, qx, qy, qz]`` in the world frame.

A tar file is written member by member and flushed after each, so a run that dies keeps
every complete image; :class:`FrameStore` reads it back, and a missing or damaged file reads
as no images (with the reason in ``FrameStore.problem``), never as a failed replay.
"""

from __future__ import annotations

import io
import math
import os
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness_bt.events import Event, FrameEvent, TraceKind, parse_event
from harness_bt.runtime.observation import CameraFrame, Observation
from harness_bt.trace import Trace
from harness_bt.world import ObjectUpdate, Perception

__all__ = ["FrameRecorder", "FrameStore", "camera_image", "encode_jpeg", "frame_data",
           "frames_path", "project_box"]


def frames_path(trace: str | os.PathLike[str]) -> Path:
    """Where the frames of the trace ``run.jsonl`` go: ``run.frames.tar`` beside it."""
    path = Path(trace)
    return path.with_name(f"{path.stem}.frames.tar")


def _rotation(q: Sequence[float]) -> np.ndarray:
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z) or 1.0
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def project_box(update: ObjectUpdate, camera: CameraFrame) -> list[float] | None:
    """The pixel box ``[u0, v0, u1, v1]`` of an object's box (pose and extent) in a camera
    image (OpenCV convention: x right, y down, z along the optical axis), clipped to the
    image; None when it is behind the camera or outside the image."""
    if update.pose is None or camera.shape is None:
        return None
    height, width = camera.shape
    half = np.asarray(update.extent or (0.04, 0.04, 0.04), dtype=float) / 2.0
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    world = (corners * half) @ _rotation(update.pose.quaternion_wxyz).T + np.asarray(
        update.pose.position, dtype=float)
    cam = (world - np.asarray(camera.position, dtype=float)) @ _rotation(
        [float(v) for v in camera.quaternion_wxyz])
    if np.any(cam[:, 2] <= 1e-6):
        return None
    k = np.asarray(camera.intrinsics, dtype=float)
    u = k[0, 0] * cam[:, 0] / cam[:, 2] + k[0, 2]
    v = k[1, 1] * cam[:, 1] / cam[:, 2] + k[1, 2]
    box = [max(0.0, float(u.min())), max(0.0, float(v.min())),
           min(float(width), float(u.max())), min(float(height), float(v.max()))]
    if box[2] <= box[0] or box[3] <= box[1]:
        return None
    return [round(b, 1) for b in box]


def encode_jpeg(rgb: np.ndarray, quality: int) -> bytes:
    """An RGB(A) image as JPEG bytes."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb[..., :3], dtype=np.uint8)).save(
        out, format="JPEG", quality=quality)
    return out.getvalue()


def camera_image(name: str, cam: CameraFrame, member: str,
                 updates: Sequence[ObjectUpdate]) -> dict[str, Any]:
    """A ``frame`` event's entry for one camera's image (stored as ``member``): its size, the
    perceived objects' boxes in it, the camera's pose and intrinsics."""
    height, width = cam.rgb.shape[:2] if cam.rgb is not None else (cam.shape or (0, 0))
    boxes = {u.object_id: box for u in updates if not u.removed and u.camera in ("", name)
             and (box := project_box(u, cam)) is not None}
    return {"member": member, "width": int(width), "height": int(height), "boxes": boxes,
            "pose": [*map(float, cam.position), *map(float, cam.quaternion_wxyz)],
            "k": [float(v) for v in np.asarray(cam.intrinsics).ravel()]}


def frame_data(obs: Observation, updates: Sequence[ObjectUpdate],
               images: Mapping[str, Any]) -> dict[str, Any]:
    """A ``frame`` event's data beside its ``images`` (camera -> :func:`camera_image`): the
    end effector's poses and the objects the perception reported."""
    ee = [[*map(float, p.position), *map(float, p.quaternion_wxyz)] for p in obs.ee_poses]
    objects = {u.object_id: {"pose": [*u.pose.position, *u.pose.quaternion_wxyz],
                             "extent": list(u.extent) if u.extent else None,
                             "confidence": u.confidence}
               for u in updates if u.pose is not None and not u.removed}
    return {"timestep": obs.timestep, "images": dict(images), "ee_poses": ee,
            "objects": objects}


class FrameRecorder:
    """Records camera frames of one run into ``path`` (a tar file) and ``frame`` events into
    ``trace``. Use :meth:`wrap` on the run's perception; :meth:`close` when the run ends."""

    def __init__(self, path: str | os.PathLike[str], trace: Trace, *, rate_hz: float = 5.0,
                 quality: int = 80) -> None:
        self.path = Path(path)
        self.trace = trace
        self.period = 0.0 if rate_hz <= 0 else 1.0 / rate_hz
        self.quality = quality
        self.count = 0
        self._last: dict[str, float] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("wb")
        self._tar: tarfile.TarFile | None = tarfile.open(  # noqa: SIM115 (closed in close())
            fileobj=self._fh, mode="w", format=tarfile.PAX_FORMAT)

    def wrap(self, perception: Perception) -> Perception:
        """``perception``, recording what it is given and what it says."""
        def perceive(obs: Observation) -> Sequence[ObjectUpdate]:
            updates = perception(obs)
            self.record(obs, updates)
            return updates

        return perceive

    def _due(self, camera: str, now: float) -> bool:
        last = self._last.get(camera)
        return last is None or now - last >= self.period - 1e-9

    def record(self, obs: Observation, updates: Sequence[ObjectUpdate]) -> None:
        """Store the images of ``obs`` that are due and emit their ``frame`` event."""
        if self._tar is None:
            return
        now = obs.received_at if obs.received_at is not None else self.trace.clock.monotonic()
        images: dict[str, Any] = {}
        for name, cam in obs.cameras.items():
            if cam.rgb is None or not self._due(name, now):
                continue
            member = f"{name}/{obs.timestep:06d}.jpg"
            data = encode_jpeg(cam.rgb, self.quality)
            info = tarfile.TarInfo(member)
            info.size = len(data)
            self._tar.addfile(info, io.BytesIO(data))
            self._fh.flush()
            self._last[name] = now
            images[name] = camera_image(name, cam, member, updates)
        if not images:
            return
        self.count += len(images)
        self.trace.emit(TraceKind.FRAME, file=self.path.name, **frame_data(obs, updates, images))

    def close(self) -> None:
        if self._tar is not None:
            self._tar.close()
            self._tar = None
            self._fh.close()


class FrameStore:
    """The images of a frames file, by member name. A missing or unreadable file gives no
    images; ``problem`` then says why (for the page and the export to show)."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self.problem: str | None = None
        self._members: dict[str, bytes] = {}
        if self.path is None:
            return
        if not self.path.is_file():
            self.problem = f"the frames file {self.path} is missing"
            return
        try:
            with tarfile.open(self.path, mode="r:") as tar:
                for info in tar:
                    if not info.isfile():
                        continue
                    fh = tar.extractfile(info)
                    if fh is not None:
                        self._members[info.name] = fh.read()
        except (tarfile.TarError, OSError, EOFError) as exc:
            self.problem = f"the frames file {self.path} is damaged ({exc}); " \
                           f"{len(self._members)} image(s) read before the damage"

    @classmethod
    def beside(cls, trace_path: str | os.PathLike[str] | None,
               events: Sequence[Event | Mapping[str, Any]]) -> FrameStore:
        """The frames file a trace's ``frame`` events name, beside the trace file (an empty
        store when the trace recorded no frames)."""
        name = next((e.file for e in map(parse_event, events) if isinstance(e, FrameEvent)),
                    None)
        if name is None:
            return cls(None)
        base = Path(trace_path).parent if trace_path is not None else Path(".")
        return cls(base / str(name))

    def __contains__(self, member: object) -> bool:
        return member in self._members

    def __len__(self) -> int:
        return len(self._members)

    def get(self, member: str) -> bytes | None:
        return self._members.get(member)
