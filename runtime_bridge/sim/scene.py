"""The physical world: a table, the Panda, and objects placed from a seed.

Units are metres, kilograms, seconds; the table top is the plane z = 0 and the robot base
stands on it at the origin, facing +x. Objects: 4 cm cubes (red, green, blue: fit the Panda
hand, high friction), a tray (``pybullet_data`` ``tray/traybox.urdf`` scaled down), and a
LEGO brick from ``pybullet_data`` as a distractor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pybullet as pb
import pybullet_data
from pybullet_utils.bullet_client import BulletClient

from harness_bt.errors import DefinitionError
from runtime_bridge.sim.robot import FINGER_FORCE, FINGER_JOINTS, PandaArm
from runtime_bridge.sim.transforms import xyzw_to_wxyz

__all__ = ["CUBE_HALF", "TRAY_HALF", "ObjectState", "Scene", "SceneLayout"]

CUBE_HALF = 0.02
CUBE_MASS = 0.08
CUBE_FRICTION = 1.5
TRAY_SCALE = 0.35
TRAY_HALF = 0.3 * TRAY_SCALE  # outer half extent of the scaled tray
TRAY_FLOOR_Z = 0.015 * TRAY_SCALE
TABLE_HALF = (0.65, 0.75, 0.025)
TABLE_CENTRE = (0.35, 0.0, -0.025)
COLOURS = {
    "red_cube": (0.85, 0.1, 0.1, 1.0),
    "green_cube": (0.1, 0.7, 0.2, 1.0),
    "blue_cube": (0.15, 0.25, 0.9, 1.0),
}


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


class Scene:
    """One PyBullet DIRECT world with the Panda, a table and the objects of a layout."""

    def __init__(self, *, substeps: int = 8, control_dt: float = 1.0 / 30.0,
                 arm_meshes: str = "simple") -> None:
        self.client = BulletClient(connection_mode=pb.DIRECT)
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

    def _cube(self, name: str, x: float, y: float, yaw: float) -> int:
        c = self.client
        col = c.createCollisionShape(pb.GEOM_BOX, halfExtents=[CUBE_HALF] * 3)
        vis = c.createVisualShape(pb.GEOM_BOX, halfExtents=[CUBE_HALF] * 3,
                                  rgbaColor=COLOURS[name])
        body = c.createMultiBody(CUBE_MASS, col, vis, basePosition=[x, y, CUBE_HALF + 1e-4],
                                 baseOrientation=c.getQuaternionFromEuler([0, 0, yaw]))
        c.changeDynamics(body, -1, lateralFriction=CUBE_FRICTION, spinningFriction=0.01,
                         rollingFriction=0.0005, frictionAnchor=True)
        return body

    def load(self, layout: SceneLayout) -> None:
        """Remove the previous objects, home the arm, place the layout's objects, settle."""
        for body in self.objects.values():
            self.client.removeBody(body)
        self.objects = {}
        self.arm.reset_home()
        for name, (x, y, yaw) in layout.poses.items():
            if name.endswith("_cube"):
                body = self._cube(name, x, y, yaw)
            elif name == "tray":
                body = self.client.loadURDF("tray/traybox.urdf", [x, y, 0.0],
                                            self.client.getQuaternionFromEuler([0, 0, yaw]),
                                            useFixedBase=True, globalScaling=TRAY_SCALE)
            elif name == "lego":
                body = self.client.loadURDF("lego/lego.urdf", [x, y, 0.012],
                                            self.client.getQuaternionFromEuler([0, 0, yaw]),
                                            globalScaling=1.0)
            else:
                raise DefinitionError("UNKNOWN_OBJECT", f"unknown object {name!r}; the built-in "
                                      "simulator builds red_cube, green_cube, blue_cube, tray "
                                      "and lego", fix="lay out one of them")
            self.objects[name] = body
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

    # -- ground truth --------------------------------------------------------------------
    def position(self, name: str) -> np.ndarray:
        return np.array(self.client.getBasePositionAndOrientation(self.objects[name])[0])

    def pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        pos, orn = self.client.getBasePositionAndOrientation(self.objects[name])
        return np.array(pos), xyzw_to_wxyz(orn)

    def finger_contacts(self, name: str) -> tuple[bool, bool]:
        body = self.objects[name]
        return tuple(  # type: ignore[return-value]
            bool(self.client.getContactPoints(self.arm.body, body, linkIndexA=link))
            for link in FINGER_JOINTS)

    def held(self, name: str) -> bool:
        """Both fingers touch the object and the object does not touch the table."""
        left, right = self.finger_contacts(name)
        return left and right and not self.client.getContactPoints(self.objects[name], self.table)

    def touching(self, a: str, b_body: int) -> bool:
        return bool(self.client.getContactPoints(self.objects[a], b_body))

    def object_state(self, name: str) -> ObjectState:
        pos, quat = self.pose(name)
        vel = self.client.getBaseVelocity(self.objects[name])[0]
        held = all(self.finger_contacts(name)) if name.endswith("_cube") else False
        return ObjectState(name, tuple(map(float, pos)), tuple(map(float, quat)),  # type: ignore[arg-type]
                           tuple(map(float, vel)), held)  # type: ignore[arg-type]

    def set_object_xy(self, name: str, x: float, y: float) -> None:
        pos, orn = self.client.getBasePositionAndOrientation(self.objects[name])
        self.client.resetBasePositionAndOrientation(self.objects[name], [x, y, pos[2]], orn)
        self.client.resetBaseVelocity(self.objects[name], [0, 0, 0], [0, 0, 0])

    def set_slippery(self, name: str, slippery: bool) -> None:
        """A grasp slip: the fingers go limp and the object loses its friction (or both are
        restored)."""
        self.client.changeDynamics(self.objects[name], -1,
                                   lateralFriction=0.0 if slippery else CUBE_FRICTION)
        self.arm.finger_force = 0.0 if slippery else FINGER_FORCE
        self.arm.apply_targets()

    def close(self) -> None:
        if self.client is not None:
            self.arm.close()
            self.client.disconnect()
            self.client = None
