"""The physical world: a table, the Panda, and the objects of a scene laid out from a seed.

Units are metres, kilograms, seconds; the table top is the plane z = 0 and the robot base
stands on it at the origin, facing +x. Objects are built from a scene document's
:class:`~harness_bt.scene.model.ObjectSpec`: boxes and cylinders (solid, high friction),
trays (``pybullet_data``'s ``tray/traybox.urdf`` scaled to the size), bowls (a floor and a ring
of wall segments), or any ``pybullet_data`` model (``urdf``). :class:`SimWorld` is also the
:class:`~harness_bt.scene.predicates.SceneState` that success conditions are evaluated on.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pybullet_data

from harness_bt.geometry import xyzw_to_wxyz
from harness_bt.scene.model import COLOURS, ObjectSpec
from harness_bt.scene.predicates import Cavity
from runtime_bridge.sim.native import connect_direct, pb
from runtime_bridge.sim.robot import FINGER_FORCE, FINGER_JOINTS, PandaArm

__all__ = ["CUBE_HALF", "ObjectState", "SceneLayout", "SimWorld", "extents_of"]

CUBE_HALF = 0.02
DEFAULT_MASS = 0.08
TRAY_MODEL_SIZE = 0.6  # traybox.urdf's outer width at scale 1
TRAY_WALL = 0.015  # inner margin of the scaled tray's slanted walls
BOWL_WALL = 0.006
BOWL_SEGMENTS = 20
TABLE_HALF = (0.65, 0.75, 0.025)
TABLE_CENTRE = (0.35, 0.0, -0.025)


def extents_of(spec: ObjectSpec) -> tuple[float, float, float]:
    """An object's full extents (x, y, z) from its size (a number is a cube's edge)."""
    if isinstance(spec.size, float):
        return (spec.size, spec.size, spec.size)
    return (float(spec.size[0]), float(spec.size[1]), float(spec.size[2]))


def _rgba(spec: ObjectSpec) -> tuple[float, float, float, float]:
    colour = COLOURS[spec.colour] if isinstance(spec.colour, str) else tuple(spec.colour)
    return (*colour[:3], colour[3] if len(colour) > 3 else 1.0)  # type: ignore[return-value]


def _bowl_mesh(radius: float, height: float, sides: int = 32) -> Path:
    """A Wavefront OBJ of an open cylinder with a floor (the bowl's look; PyBullet's renderer
    draws shape arrays unreliably), written once per size to the user's cache."""
    path = Path(tempfile.gettempdir()) / f"harness_bt_bowl_{radius:.4f}_{height:.4f}.obj"
    if path.exists():
        return path
    inner = radius - BOWL_WALL
    lines = []
    for r_ in (radius, inner):
        for z in (0.0, height):
            for k in range(sides):
                a = 2.0 * math.pi * k / sides
                lines.append(f"v {r_ * math.cos(a):.5f} {r_ * math.sin(a):.5f} {z:.5f}")
    lines.append(f"v 0 0 {BOWL_WALL:.5f}")

    def v(ring: int, k: int) -> int:  # rings: 0 outer bottom, 1 outer top, 2 inner bottom,
        return ring * sides + k % sides + 1  # 3 inner top (1-based OBJ indices)

    centre = 4 * sides + 1
    faces: list[tuple[int, ...]] = []
    for k in range(sides):
        faces.append((v(0, k), v(0, k + 1), v(1, k + 1), v(1, k)))  # outer wall
        faces.append((v(2, k), v(3, k), v(3, k + 1), v(2, k + 1)))  # inner wall
        faces.append((v(1, k), v(1, k + 1), v(3, k + 1), v(3, k)))  # rim
        faces.append((centre, v(2, k), v(2, k + 1)))  # floor
    lines += ["f " + " ".join(map(str, f)) for f in faces]
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


@dataclass(frozen=True, slots=True)
class ObjectState:
    """Ground truth of one object: pose, velocity, and which robot part holds it."""

    name: str
    position: tuple[float, float, float]
    quaternion_wxyz: tuple[float, float, float, float]
    linear_velocity: tuple[float, float, float]
    held: bool

    def to_dict(self) -> dict[str, object]:
        return {"position": list(self.position), "quaternion_wxyz": list(self.quaternion_wxyz),
                "linear_velocity": list(self.linear_velocity),
                "held_by": "panda_hand" if self.held else None}


@dataclass(frozen=True, slots=True)
class SceneLayout:
    """Where each object starts: name -> (x, y, yaw)."""

    poses: dict[str, tuple[float, float, float]]


class SimWorld:
    """One PyBullet DIRECT world with the Panda, a table and the objects of a layout."""

    def __init__(self, *, substeps: int = 8, control_dt: float = 1.0 / 30.0,
                 arm_meshes: str = "simple") -> None:
        self.client = connect_direct()
        self.client.setAdditionalSearchPath(pybullet_data.getDataPath())
        self.substeps = substeps
        self.control_dt = control_dt
        self.client.setPhysicsEngineParameter(fixedTimeStep=control_dt / substeps,
                                              numSolverIterations=80, numSubSteps=0,
                                              deterministicOverlappingPairs=1)
        self.client.setGravity(0, 0, -9.81)
        self._build_static()
        self.arm = PandaArm(self.client, arm_meshes)
        self.objects: dict[str, int] = {}
        self.specs: dict[str, ObjectSpec] = {}
        self.start: dict[str, np.ndarray] = {}
        self.sim_time = 0.0

    # -- building ------------------------------------------------------------------------
    def _build_static(self) -> None:
        c = self.client
        self.floor: int | None = None
        self._lay_floor()
        col = c.createCollisionShape(pb.GEOM_BOX, halfExtents=TABLE_HALF)
        vis = c.createVisualShape(pb.GEOM_BOX, halfExtents=TABLE_HALF,
                                  rgbaColor=(0.62, 0.5, 0.38, 1.0))
        self.table = c.createMultiBody(0, col, vis, basePosition=TABLE_CENTRE)
        c.changeDynamics(self.table, -1, lateralFriction=0.8)

    def _lay_floor(self) -> None:
        """(Re)load the floor after everything else. The software renderer draws bodies in the
        order they were created (body ids are reused, so they do not tell) and skips pixels
        already nearer, so a floor drawn after the table and the objects only pays for the
        little of it that shows: about a third of a frame's rendering time."""
        if self.floor is not None:
            self.client.removeBody(self.floor)
        self.floor = self.client.loadURDF("plane.urdf", [0, 0, -0.7])

    def _solid(self, spec: ObjectSpec, x: float, y: float, yaw: float) -> int:
        c = self.client
        ex, ey, ez = extents_of(spec)
        if spec.shape == "cylinder":
            col = c.createCollisionShape(pb.GEOM_CYLINDER, radius=ex / 2.0, height=ez)
            vis = c.createVisualShape(pb.GEOM_CYLINDER, radius=ex / 2.0, length=ez,
                                      rgbaColor=_rgba(spec))
        else:
            half = [ex / 2.0, ey / 2.0, ez / 2.0]
            col = c.createCollisionShape(pb.GEOM_BOX, halfExtents=half)
            vis = c.createVisualShape(pb.GEOM_BOX, halfExtents=half, rgbaColor=_rgba(spec))
        mass = DEFAULT_MASS if spec.mass is None else spec.mass
        body = c.createMultiBody(mass, col, vis, basePosition=[x, y, ez / 2.0 + 1e-4],
                                 baseOrientation=c.getQuaternionFromEuler([0, 0, yaw]))
        c.changeDynamics(body, -1, lateralFriction=spec.friction, spinningFriction=0.01,
                         rollingFriction=0.0005, frictionAnchor=True)
        return body

    def _bowl(self, spec: ObjectSpec, x: float, y: float, yaw: float) -> int:
        """A round container from boxes: an octagonal floor (two squares 45 degrees apart)
        and a ring of wall segments (PyBullet's shape arrays are reliable with boxes only)."""
        c = self.client
        ex, _, ez = extents_of(spec)
        r = ex / 2.0
        seg = 2.0 * math.pi * r / BOWL_SEGMENTS * 1.1
        side = (r - BOWL_WALL / 2.0) * math.sqrt(2.0) / 2.0
        halves = [[side, side, BOWL_WALL / 2.0]] * 2
        places = [[0.0, 0.0, BOWL_WALL / 2.0]] * 2
        turns = [[0.0, 0.0, 0.0, 1.0], list(c.getQuaternionFromEuler([0, 0, math.pi / 4]))]
        for k in range(BOWL_SEGMENTS):
            a = 2.0 * math.pi * k / BOWL_SEGMENTS
            halves.append([BOWL_WALL / 2.0, seg / 2.0, ez / 2.0])
            places.append([(r - BOWL_WALL / 2) * math.cos(a), (r - BOWL_WALL / 2) * math.sin(a),
                           ez / 2.0])
            turns.append(list(c.getQuaternionFromEuler([0, 0, a])))
        n = len(halves)
        col = c.createCollisionShapeArray(shapeTypes=[pb.GEOM_BOX] * n, halfExtents=halves,
                                          collisionFramePositions=places,
                                          collisionFrameOrientations=turns)
        vis = c.createVisualShape(pb.GEOM_MESH, fileName=str(_bowl_mesh(r, ez)),
                                  rgbaColor=_rgba(spec))
        return c.createMultiBody(spec.mass or 0.0, col, vis, basePosition=[x, y, 0.0],
                                 baseOrientation=c.getQuaternionFromEuler([0, 0, yaw]))

    def _build(self, spec: ObjectSpec, x: float, y: float, yaw: float) -> int:
        turn = self.client.getQuaternionFromEuler([0, 0, yaw])
        if spec.shape in ("cube", "box", "cylinder"):
            return self._solid(spec, x, y, yaw)
        if spec.shape == "bowl":
            return self._bowl(spec, x, y, yaw)
        if spec.shape == "tray":
            return self.client.loadURDF("tray/traybox.urdf", [x, y, 0.0], turn,
                                        useFixedBase=not spec.mass,
                                        globalScaling=extents_of(spec)[0] / TRAY_MODEL_SIZE)
        assert spec.file is not None
        return self.client.loadURDF(spec.file, [x, y, extents_of(spec)[2] / 2.0 + 1e-3], turn,
                                    globalScaling=spec.scale)

    def load(self, layout: SceneLayout, objects: Mapping[str, ObjectSpec]) -> None:
        """Remove the previous objects, home the arm, build the layout's objects (described by
        ``objects``), settle."""
        for body in self.objects.values():
            self.client.removeBody(body)
        self.objects = {}
        self.specs = {name: objects[name] for name in layout.poses}
        self.arm.reset_home()
        for name, (x, y, yaw) in layout.poses.items():
            self.objects[name] = self._build(objects[name], x, y, yaw)
        self._lay_floor()
        for _ in range(10):  # let contacts settle before the first observation
            self.client.stepSimulation()
        self.start = {n: self.position(n) for n in self.objects}
        self.sim_time = 0.0

    # -- stepping ------------------------------------------------------------------------
    def step(self) -> None:
        """Advance one control period (``substeps`` physics steps)."""
        for _ in range(self.substeps):
            self.client.stepSimulation()
        self.sim_time += self.control_dt

    # -- ground truth (a SceneState) -------------------------------------------------------
    def position(self, name: str) -> np.ndarray:
        return np.array(self.client.getBasePositionAndOrientation(self.objects[name])[0])

    def start_position(self, name: str) -> np.ndarray:
        return self.start[name]

    def velocity(self, name: str) -> np.ndarray:
        return np.array(self.client.getBaseVelocity(self.objects[name])[0])

    def yaw(self, name: str) -> float:
        orn = self.client.getBasePositionAndOrientation(self.objects[name])[1]
        return float(self.client.getEulerFromQuaternion(orn)[2])

    def extents(self, name: str) -> tuple[float, float, float]:
        return extents_of(self.specs[name])

    def pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        pos, orn = self.client.getBasePositionAndOrientation(self.objects[name])
        return np.array(pos), xyzw_to_wxyz(orn)

    def movable(self, name: str) -> bool:
        spec = self.specs[name]
        return spec.shape not in ("tray", "bowl") or bool(spec.mass)

    def finger_contacts(self, name: str) -> tuple[bool, bool]:
        body = self.objects[name]
        return tuple(  # type: ignore[return-value]
            bool(self.client.getContactPoints(self.arm.body, body, linkIndexA=link))
            for link in FINGER_JOINTS)

    def on_table(self, name: str) -> bool:
        return bool(self.client.getContactPoints(self.objects[name], self.table))

    def held(self, name: str) -> bool:
        """Both fingers touch the object and the object does not touch the table."""
        left, right = self.finger_contacts(name)
        return left and right and not self.on_table(name)

    def touching(self, a: str, b: str) -> bool:
        return bool(self.client.getContactPoints(self.objects[a], self.objects[b]))

    def cavity(self, name: str) -> Cavity | None:
        spec = self.specs[name]
        if spec.shape not in ("tray", "bowl"):
            return None
        ex, ey, ez = extents_of(spec)
        p = self.position(name)
        if spec.shape == "tray":
            floor = 0.015 * ex / TRAY_MODEL_SIZE  # the floor box's top at this scale
            return Cavity((float(p[0]), float(p[1])), self.yaw(name), ex / 2 - TRAY_WALL,
                          ey / 2 - TRAY_WALL, float(p[2]) + floor, float(p[2]) + ez)
        inner = ex / 2 - BOWL_WALL
        return Cavity((float(p[0]), float(p[1])), self.yaw(name), inner, inner,
                      float(p[2]) + BOWL_WALL, float(p[2]) + ez, round=True)

    def object_state(self, name: str) -> ObjectState:
        pos, quat = self.pose(name)
        vel = self.client.getBaseVelocity(self.objects[name])[0]
        held = all(self.finger_contacts(name)) if self.movable(name) else False
        return ObjectState(name, tuple(map(float, pos)), tuple(map(float, quat)),  # type: ignore[arg-type]
                           tuple(map(float, vel)), held)  # type: ignore[arg-type]

    def set_object_xy(self, name: str, x: float, y: float) -> None:
        pos, orn = self.client.getBasePositionAndOrientation(self.objects[name])
        self.client.resetBasePositionAndOrientation(self.objects[name], [x, y, pos[2]], orn)
        self.client.resetBaseVelocity(self.objects[name], [0, 0, 0], [0, 0, 0])

    def hide(self, name: str, hidden: bool = True) -> None:
        """Make an object invisible to every camera (``hidden``) or visible again: it stays
        where it is and acts as before (the software renderer skips a visual whose alpha is
        0), as if something stood between it and each camera. A new layout shows it again."""
        body = self.objects[name]
        for shape in self.client.getVisualShapeData(body):
            self.client.changeVisualShape(body, shape[1],
                                          rgbaColor=[*shape[7][:3], 0.0 if hidden else 1.0])

    def set_slippery(self, name: str, slippery: bool) -> None:
        """A grasp slip: the fingers go limp and the object loses its friction (or both are
        restored)."""
        self.client.changeDynamics(self.objects[name], -1,
                                   lateralFriction=0.0 if slippery else self.specs[name].friction)
        self.arm.finger_force = 0.0 if slippery else FINGER_FORCE
        self.arm.apply_targets()

    def close(self) -> None:
        if self.client is not None:
            self.arm.close()
            self.client.disconnect()
            self.client = None
