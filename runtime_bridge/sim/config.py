"""Configuration of the built-in simulator: cameras, fault rates, episodes.

Camera specs are text so the command line can carry them::

    front:640x480                                  a named preset at another resolution
    top:128x96:eye=0.5,0,1.2:target=0.5,0,0:fov=60 any pose, looking from eye to target
    hand:320x240:mount=wrist                       rides on the hand, looking along the fingers
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = ["ARM_MESHES", "CAMERA_PRESETS", "DEFAULT_CAMERAS", "DEFAULT_HOLD_STEPS", "RENDER_MODES",
           "CameraSpec", "FaultRates", "SimConfig", "parse_camera_spec"]


@dataclass(frozen=True, slots=True)
class CameraSpec:
    """One camera: name, resolution, pose (``eye`` looking at ``target``, or ``mount='wrist'``),
    vertical field of view in degrees and clipping planes in metres."""

    name: str
    width: int = 640
    height: int = 480
    eye: tuple[float, float, float] = (1.25, 0.0, 0.55)
    target: tuple[float, float, float] = (0.45, 0.0, 0.05)
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)
    fov_deg: float = 50.0
    near: float = 0.05
    far: float = 3.0
    mount: str = "world"

    def __post_init__(self) -> None:
        where = f"camera {self.name!r}"
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise DefinitionError("BAD_CAMERA", f"{where}: the name must be letters, digits, "
                                  "'_' or '-'", fix="name it like 'front' or 'wrist_left'")
        if not (8 <= self.width <= 4096 and 8 <= self.height <= 4096):
            raise DefinitionError("BAD_CAMERA", f"{where}: resolution {self.width}x"
                                  f"{self.height} is outside 8..4096", where=where,
                                  fix="use a resolution like 640x480")
        if not 1.0 <= self.fov_deg <= 170.0:
            raise DefinitionError("BAD_CAMERA", f"{where}: fov {self.fov_deg} is outside 1..170 "
                                  "degrees", where=where, fix="use fov=50 or so")
        if not 0 < self.near < self.far:
            raise DefinitionError("BAD_CAMERA", f"{where}: clipping planes near={self.near} "
                                  f"far={self.far} need 0 < near < far", where=where,
                                  fix="use near=0.05,far=3")
        if self.mount not in ("world", "wrist"):
            raise DefinitionError("BAD_CAMERA", f"{where}: mount {self.mount!r} is unknown",
                                  where=where, fix="use mount=world or mount=wrist")
        if self.mount == "world" and math.dist(self.eye, self.target) < 1e-6:
            raise DefinitionError("BAD_CAMERA", f"{where}: eye and target coincide",
                                  where=where, fix="put the target somewhere the camera looks at")


CAMERA_PRESETS: dict[str, CameraSpec] = {
    "front": CameraSpec("front"),
    "side": CameraSpec("side", eye=(0.45, -0.85, 0.6), target=(0.45, 0.0, 0.03)),
    "top": CameraSpec("top", eye=(0.5, 0.0, 1.15), target=(0.5, 0.0, 0.0), up=(1.0, 0.0, 0.0),
                      fov_deg=55.0),
    "wrist": CameraSpec("wrist", mount="wrist", fov_deg=70.0, near=0.02, far=2.0),
}


def _floats(text: str, n: int, key: str, spec: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise DefinitionError("BAD_CAMERA", f"camera spec {spec!r}: {key}={text!r} must be {n} "
                              "comma-separated numbers", fix=f"write e.g. {key}=0.5,0,1.2")
    return values


def parse_camera_spec(spec: str) -> CameraSpec:
    """``name[:WxH][:key=value...]`` with keys eye, target, up, fov, near, far, mount."""
    parts = [p.strip() for p in spec.split(":") if p.strip()]
    if not parts:
        raise DefinitionError("BAD_CAMERA", "empty camera spec", fix="write e.g. front:640x480")
    name = parts[0]
    base = CAMERA_PRESETS.get(name, CameraSpec(name))
    changes: dict[str, object] = {}
    for part in parts[1:]:
        if "=" not in part:
            size = part.lower().split("x")
            if len(size) != 2 or not all(s.isdigit() for s in size):
                raise DefinitionError("BAD_CAMERA", f"camera spec {spec!r}: {part!r} is neither "
                                      "WxH nor key=value", fix="write e.g. front:640x480:fov=60")
            changes["width"], changes["height"] = int(size[0]), int(size[1])
            continue
        key, value = (s.strip() for s in part.split("=", 1))
        if key in ("eye", "target", "up"):
            changes[key] = _floats(value, 3, key, spec)
        elif key in ("fov", "near", "far"):
            changes["fov_deg" if key == "fov" else key] = _floats(value, 1, key, spec)[0]
        elif key == "mount":
            changes["mount"] = value
        else:
            raise DefinitionError("BAD_CAMERA", f"camera spec {spec!r}: unknown key {key!r}",
                                  fix="known keys: eye, target, up, fov, near, far, mount")
    return replace(base, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class FaultRates:
    """Seeded fault injection, all off by default.

    ``nudge`` and ``slip`` are per-episode probabilities (decided the first time the arm is
    approaching the target, or carrying it); ``occlude`` is a per-step probability of starting
    an occlusion of one camera for ``occlude_steps`` steps; ``drop`` and ``delay`` are
    per-``/step`` probabilities that the server withholds or delays its answer.
    """

    nudge: float = 0.0
    slip: float = 0.0
    occlude: float = 0.0
    drop: float = 0.0
    delay: float = 0.0
    occlude_steps: int = 15
    delay_s: float = 0.5
    drop_hold_s: float = 30.0

    def __post_init__(self) -> None:
        for key in ("nudge", "slip", "occlude", "drop", "delay"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise DefinitionError("BAD_FAULT_RATE", f"fault rate {key}={value!r} is not a "
                                      "probability", fix="use a number between 0 and 1")
        if self.occlude_steps < 1 or self.delay_s < 0 or self.drop_hold_s < 0:
            raise DefinitionError("BAD_FAULT_RATE", "occlude_steps must be >= 1 and the delays "
                                  ">= 0", fix="use positive durations")

    @property
    def any(self) -> bool:
        return any((self.nudge, self.slip, self.occlude, self.drop, self.delay))


#: The cameras harness-bt runs with, in-process and served (``harness sim serve``): two
#: viewpoints at a modest resolution, rendered one per step in turn (``render="round_robin"``:
#: software rendering is the simulator's bottleneck); an occluded or self-occluded view is
#: answered a step later by the other camera.
DEFAULT_CAMERAS = ("front:256x192:fov=40",
                   "left:256x192:eye=0.85,-0.6,0.55:target=0.5,0,0.05:fov=45")
#: How long success must hold before harness-bt's simulator ends an episode (150 steps, 5 s),
#: in-process and served: GenManip ends an episode inside ``/step`` as soon as it succeeds, so
#: a controller that judges the result itself needs that time before the episode rolls over.
DEFAULT_HOLD_STEPS = 150


#: How the Panda is drawn: ``simple`` with each link's collision mesh (about 3,400 triangles in
#: all), ``detailed`` with the visual meshes of ``pybullet_data`` (about 100,000). Software
#: rendering pays per triangle, so ``simple`` renders a camera about twice as fast; the physics
#: is the same either way (collisions always use the collision meshes).
ARM_MESHES = ("simple", "detailed")

#: What an observation renders: every camera, one camera per step in turn, or only the frames
#: asked for (:mod:`runtime_bridge.sim.frames`).
RENDER_MODES = ("all", "round_robin", "on_demand")


@dataclass(frozen=True, slots=True)
class SimConfig:
    """What one simulator worker runs: scenes x seeds episodes of ``num_steps`` steps each.

    ``scenes``: scene names (the ``harness_bt.scenes`` entry points) or scene file paths;
    ``params``: values for the scenes' parameters (``target=green_cube``; a scene takes the
    ones it declares).

    ``success_hold_steps``: when set, an episode counts as a success (and ends) only once the
    scene's success condition has held for that many consecutive steps (instead of the scene's
    own few). A controller that judges its result itself needs that time before the episode
    rolls over. When the episode's ``num_steps`` run out before that hold, the scene's own
    hold judges it (a success that began late is still one).

    ``render``: ``all`` renders every camera in every observation (upstream); ``round_robin``
    renders one camera per step in turn (every camera on an episode's first observation), so
    ``camera_data`` holds a subset of the cameras: several viewpoints for the rendering cost
    of one (software rendering is the simulator's bottleneck).

    ``on_demand`` renders only the frames asked for (:mod:`runtime_bridge.sim.frames`), so
    steps nobody looks at cost physics alone.

    ``arm_meshes``: ``simple`` draws the Panda with its collision meshes, ``detailed`` with its
    visual meshes (30 times the triangles, twice the rendering time; the physics is the same).

    ``keep_world``: take the PyBullet world from the process's kept worlds and hand it back on
    close (:mod:`runtime_bridge.sim.worlds`): an evaluation worker then builds one world for
    all its episodes instead of one per episode; the episodes' outcomes are the same.
    """

    scenes: tuple[str, ...] = ("pick_cube",)
    params: Mapping[str, Any] = field(default_factory=dict)
    episodes: int = 1
    num_steps: int = 600
    seed: int = 0
    cameras: tuple[CameraSpec, ...] = field(default_factory=lambda: (CAMERA_PRESETS["front"],))
    faults: FaultRates = field(default_factory=FaultRates)
    substeps: int = 8
    control_dt: float = 1.0 / 30.0
    success_hold_steps: int | None = None
    render: str = "all"
    arm_meshes: str = "simple"
    keep_world: bool = False

    def __post_init__(self) -> None:
        if self.arm_meshes not in ARM_MESHES:
            raise DefinitionError("BAD_SIM_CONFIG", f"arm_meshes={self.arm_meshes!r} must be "
                                  + " or ".join(map(repr, ARM_MESHES)),
                                  fix="use arm_meshes='detailed' for the Panda's visual meshes")
        if self.render not in RENDER_MODES:
            raise DefinitionError("BAD_SIM_CONFIG", f"render={self.render!r} must be one of "
                                  + ", ".join(map(repr, RENDER_MODES)),
                                  fix="use render='round_robin' to render one camera per step, "
                                  "'on_demand' to render only the frames asked for")
        if self.success_hold_steps is not None and self.success_hold_steps < 1:
            raise DefinitionError("BAD_SIM_CONFIG", f"success_hold_steps="
                                  f"{self.success_hold_steps} must be >= 1 (or None for the "
                                  "scene's own)", fix="use e.g. 90 (3 s)")
        if not self.scenes:
            raise DefinitionError("BAD_SIM_CONFIG", "no scene given",
                                  fix="pass --scene pick_cube (harness scenes lists them)")
        if self.episodes < 1 or self.num_steps < 1 or self.substeps < 1:
            raise DefinitionError("BAD_SIM_CONFIG", f"episodes={self.episodes}, num_steps="
                                  f"{self.num_steps}, substeps={self.substeps} must all be >= 1",
                                  fix="use positive counts")
        names = [c.name for c in self.cameras]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DefinitionError("BAD_SIM_CONFIG", f"camera names repeat: {', '.join(dupes)}",
                                  fix="give every camera its own name")
