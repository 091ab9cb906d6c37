"""The Franka Panda of ``pybullet_data``: control with GenManip semantics, and kinematics.

Targets accumulate on the **last commanded** target, never on the measured state. ``ee_pose``
deltas are composed in the world frame (translation added, rotation pre-multiplied:
``q_new = dq * q_last``) onto the last commanded pose of the tool centre point (the point
between the fingertips, link ``panda_grasptarget``), then solved by inverse kinematics on a
kinematic twin of the robot in its own PyBullet client; when IK fails the arm holds.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from dataclasses import dataclass

import numpy as np
import pybullet_data

from harness_bt.geometry import qangle, qmul, wxyz_to_xyzw, xyzw_to_wxyz
from runtime_bridge.sim.native import BulletClient, connect_direct, pb

__all__ = ["ARM_JOINTS", "FINGER_FORCE", "FINGER_FRICTION", "FINGER_JOINTS", "HOME", "TCP_LINK",
           "IkResult", "PandaArm"]

ARM_JOINTS = (0, 1, 2, 3, 4, 5, 6)
FINGER_JOINTS = (9, 10)
TCP_LINK = 11
HAND_LINK = 8
HOME = (0.0, -0.55, 0.0, -2.45, 0.0, 1.90, 0.785)
FINGER_OPEN = 0.04
ARM_FORCE = (200.0, 200.0, 200.0, 200.0, 60.0, 60.0, 60.0)
FINGER_FORCE = 140.0
FINGER_FRICTION = 2.0
#: Torsional friction of the finger pads (Bullet multiplies it by the object's): a pinched
#: object does not swing about the line between the fingertips as the hand accelerates.
FINGER_SPIN = 1.0
#: Largest force (N) of the gearing that keeps the two fingers symmetric.
FINGER_GEAR_FORCE = 100.0
IK_POS_TOL = 0.004
IK_ANG_TOL = 0.03


@dataclass(frozen=True, slots=True)
class IkResult:
    """Joint targets for a TCP pose, and whether they reach it (within a few mm / degrees)."""

    joints: np.ndarray
    ok: bool
    position_error: float
    angle_error: float


@functools.cache
def _simple_urdf() -> str:
    """The Panda's URDF with every visual mesh replaced by that link's collision mesh, mesh
    paths made absolute (so the text can live anywhere). Read once per process: every arm and
    its kinematic twin load it."""
    root = os.path.join(pybullet_data.getDataPath(), "franka_panda")
    with open(os.path.join(root, "panda.urdf"), encoding="utf-8") as f:
        text = f.read()
    collision = os.path.join(root, "meshes", "collision") + os.sep
    return re.sub(r"package://meshes/(?:visual|collision)/", lambda _: collision, text)


def _load_panda(client: BulletClient, meshes: str = "simple") -> int:
    """The Panda, drawn (``meshes``, see :data:`~runtime_bridge.sim.config.ARM_MESHES`) with
    its collision meshes or with the visual meshes of ``pybullet_data``."""
    client.setAdditionalSearchPath(pybullet_data.getDataPath())
    flags = pb.URDF_USE_INERTIA_FROM_FILE
    if meshes == "detailed":
        return client.loadURDF("franka_panda/panda.urdf", [0, 0, 0], useFixedBase=True,
                               flags=flags)
    with tempfile.TemporaryDirectory(prefix="hbt-panda-") as tmp:
        path = os.path.join(tmp, "panda.urdf")
        with open(path, "w", encoding="utf-8") as f:
            f.write(_simple_urdf())
        return client.loadURDF(path, [0, 0, 0], useFixedBase=True, flags=flags)


class _Kinematics:
    """A kinematic twin of the Panda (never stepped) for FK and IK from any joint vector."""

    def __init__(self) -> None:
        self.client = connect_direct()
        self.body = _load_panda(self.client)
        info = [self.client.getJointInfo(self.body, j) for j in ARM_JOINTS]
        self.lower = np.array([i[8] for i in info])
        self.upper = np.array([i[9] for i in info])

    def _set(self, joints: np.ndarray) -> None:
        for j, q in zip(ARM_JOINTS, joints, strict=True):
            self.client.resetJointState(self.body, j, float(q))

    def fk(self, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._set(joints)
        state = self.client.getLinkState(self.body, TCP_LINK, computeForwardKinematics=True)
        return np.array(state[4]), xyzw_to_wxyz(state[5])

    def ik(self, position: np.ndarray, quat_wxyz: np.ndarray, seed: np.ndarray) -> IkResult:
        joints = np.array(seed, dtype=np.float64)
        pos_err = ang_err = float("inf")
        for _ in range(6):
            self._set(joints)
            sol = self.client.calculateInverseKinematics(
                self.body, TCP_LINK, [float(v) for v in position], wxyz_to_xyzw(quat_wxyz),
                lowerLimits=[*self.lower, 0.0, 0.0], upperLimits=[*self.upper, 0.04, 0.04],
                jointRanges=[*(self.upper - self.lower), 0.04, 0.04],
                restPoses=[*joints, 0.04, 0.04], maxNumIterations=100, residualThreshold=1e-6)
            joints = np.clip(np.array(sol[:7]), self.lower, self.upper)
            p, q = self.fk(joints)
            pos_err = float(np.linalg.norm(p - position))
            ang_err = qangle(q, quat_wxyz)
            if pos_err < IK_POS_TOL / 4 and ang_err < IK_ANG_TOL / 4:
                break
        ok = pos_err < IK_POS_TOL and ang_err < IK_ANG_TOL
        return IkResult(joints, ok, pos_err, ang_err)

    def close(self) -> None:
        if self.client is not None:
            self.client.disconnect()
            self.client = None


class PandaArm:
    """The simulated Panda in a physics client, driven by GenManip actions.

    ``commanded_joints`` / ``commanded_fingers`` are the targets the motors track;
    ``commanded_tcp`` the TCP pose those joints put the hand at (FK of the target).
    """

    def __init__(self, client: BulletClient, meshes: str = "simple") -> None:
        self.client = client
        self.body = _load_panda(client, meshes)
        self.kin = _Kinematics()
        for link in (*FINGER_JOINTS,):
            client.changeDynamics(self.body, link, lateralFriction=FINGER_FRICTION,
                                  spinningFriction=FINGER_SPIN, rollingFriction=0.0,
                                  frictionAnchor=True)
        # The real hand's fingers are geared together: they open and close as one, so a held
        # object stays centred between them (two independent motors, both at their force
        # limit, let it slide sideways with every acceleration of the hand).
        gear = client.createConstraint(self.body, FINGER_JOINTS[0], self.body, FINGER_JOINTS[1],
                                       jointType=pb.JOINT_GEAR, jointAxis=[1, 0, 0],
                                       parentFramePosition=[0, 0, 0],
                                       childFramePosition=[0, 0, 0])
        client.changeConstraint(gear, gearRatio=-1, erp=0.1, maxForce=FINGER_GEAR_FORCE)
        self.commanded_joints = np.array(HOME)
        self.commanded_fingers = np.array([FINGER_OPEN, FINGER_OPEN])
        self.commanded_tcp = self.kin.fk(self.commanded_joints)
        self.ik_failures = 0
        self.finger_force = FINGER_FORCE
        self.reset_home()

    # -- state ---------------------------------------------------------------------------
    def reset_home(self) -> None:
        self.commanded_joints = np.array(HOME)
        self.commanded_fingers = np.array([FINGER_OPEN, FINGER_OPEN])
        for j, q in zip(ARM_JOINTS, HOME, strict=True):
            self.client.resetJointState(self.body, j, q)
        for j in FINGER_JOINTS:
            self.client.resetJointState(self.body, j, FINGER_OPEN)
        self.commanded_tcp = self.kin.fk(self.commanded_joints)
        self.ik_failures = 0
        self.apply_targets()

    def joint_state(self) -> np.ndarray:
        """The 9 measured joint positions (7 arm + 2 fingers)."""
        states = self.client.getJointStates(self.body, [*ARM_JOINTS, *FINGER_JOINTS])
        return np.array([s[0] for s in states], dtype=np.float64)

    def tcp_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The measured tool centre point pose: position (3,), quaternion (w, x, y, z)."""
        state = self.client.getLinkState(self.body, TCP_LINK, computeForwardKinematics=True)
        return np.array(state[4]), xyzw_to_wxyz(state[5])

    def link_pose(self, link: int) -> tuple[np.ndarray, np.ndarray]:
        state = self.client.getLinkState(self.body, link, computeForwardKinematics=True)
        return np.array(state[4]), xyzw_to_wxyz(state[5])

    # -- commands ------------------------------------------------------------------------
    def command_joint_deltas(self, deltas: np.ndarray, fingers: np.ndarray) -> None:
        """Add ``deltas`` to the commanded arm target (clipped to the joint limits)."""
        self.commanded_joints = np.clip(self.commanded_joints + deltas, self.kin.lower,
                                        self.kin.upper)
        self.commanded_fingers = np.clip(fingers, 0.0, FINGER_OPEN)
        self.commanded_tcp = self.kin.fk(self.commanded_joints)
        self.apply_targets()

    def command_ee_delta(self, translation: np.ndarray, rotation_wxyz: np.ndarray,
                         fingers: np.ndarray) -> IkResult:
        """Compose the delta onto the commanded TCP pose and solve IK; hold when it fails."""
        if not np.any(translation) and rotation_wxyz[0] == 1.0 and not np.any(rotation_wxyz[1:]):
            # a hold (zero delta, identity rotation): the commanded joints already reach the
            # commanded pose, so IK would only return them again (to within its tolerance)
            self.commanded_fingers = np.clip(fingers, 0.0, FINGER_OPEN)
            self.apply_targets()
            return IkResult(self.commanded_joints, True, 0.0, 0.0)
        position = self.commanded_tcp[0] + translation
        quat = qmul(rotation_wxyz, self.commanded_tcp[1])
        quat /= np.linalg.norm(quat)
        result = self.kin.ik(position, quat, self.commanded_joints)
        if result.ok:
            self.commanded_joints = result.joints
            self.commanded_tcp = (position, quat)
        else:
            self.ik_failures += 1
        self.commanded_fingers = np.clip(fingers, 0.0, FINGER_OPEN)
        self.apply_targets()
        return result

    def apply_targets(self) -> None:
        self.client.setJointMotorControlArray(
            self.body, list(ARM_JOINTS), pb.POSITION_CONTROL,
            targetPositions=[float(q) for q in self.commanded_joints],
            forces=list(ARM_FORCE), positionGains=[0.06] * 7)
        self.client.setJointMotorControlArray(
            self.body, list(FINGER_JOINTS), pb.POSITION_CONTROL,
            targetPositions=[float(q) for q in self.commanded_fingers],
            forces=[self.finger_force] * 2, positionGains=[0.05] * 2)

    def close(self) -> None:
        self.kin.close()
