"""One executor per skill: the segments each skill chains, planned from the first observation
and the command's params. Progress is the distance left (metres of hand and finger travel;
``home``: radians of the largest joint)."""

from __future__ import annotations

import math

import numpy as np

from harness_bt.runtime.observation import Observation
from skills import params as skill_params
from skills.executors.base import SegmentExecutor
from skills.executors.segments import CartesianMove, Dwell, Fingers, JointMove, Segment
from skills.params import grasp_goal, move_goal, place_goal, pregrasp_goal

__all__ = [
    "ApproachExecutor",
    "GraspExecutor",
    "HomeExecutor",
    "LiftExecutor",
    "MoveEeToExecutor",
    "PlaceExecutor",
    "ReleaseExecutor",
]

OPEN_WIDTH = 0.08
GUARDED_M = 0.05  # the last part of a placing descent goes slowly
TURN_RATE = math.radians(90.0)  # hand rotation, radians per second


def _position(obs: Observation) -> np.ndarray:
    return np.asarray(obs.ee_pose.position, dtype=float)


def _width(obs: Observation) -> float:
    width = obs.gripper_width
    return OPEN_WIDTH if width is None else width


class MoveEeToExecutor(SegmentExecutor):
    """``move_ee_to``: one Cartesian move (the fingers keep their target)."""

    skill = "move_ee_to"
    params_model = skill_params.MoveEeToParams
    params: skill_params.MoveEeToParams

    def plan(self, obs: Observation) -> list[Segment]:
        goal, goal_q = move_goal(self.params)
        return [CartesianMove("move", np.array(goal), None if goal_q is None else np.array(goal_q),
                              step_m=self.per_step(self.params.speed_mps),
                              step_rad=self.per_step(TURN_RATE),
                              tolerance_m=self.params.tolerance_m, planned_from=_position(obs))]


class ApproachExecutor(SegmentExecutor):
    """``approach``: open the hand while moving to the pre-grasp pose; when the hand starts
    below that height, rise first (never sweep low across the table)."""

    skill = "approach"
    params_model = skill_params.ApproachParams
    params: skill_params.ApproachParams

    def plan(self, obs: Observation) -> list[Segment]:
        goal, goal_q = (np.array(v) for v in pregrasp_goal(self.params))
        here = _position(obs)
        step = self.per_step(self.params.speed_mps)
        out: list[Segment] = []
        if here[2] < goal[2] - 0.02:
            up = np.array([here[0], here[1], goal[2]])
            out.append(CartesianMove("rise", up, None, step_m=step, tolerance_m=0.02,
                                     gripper=OPEN_WIDTH, planned_from=here))
            here = up
        out.append(CartesianMove("pre-grasp", goal, goal_q, step_m=step,
                                 step_rad=self.per_step(TURN_RATE),
                                 tolerance_m=self.params.tolerance_m, gripper=OPEN_WIDTH,
                                 planned_from=here))
        return out


class GraspExecutor(SegmentExecutor):
    """``grasp``: open if needed, centre over the object (at least 6 cm above it), descend to
    the grasp point, close until the fingers stop, let the grip settle."""

    skill = "grasp"
    params_model = skill_params.GraspParams
    params: skill_params.GraspParams

    def plan(self, obs: Observation) -> list[Segment]:
        p = self.params
        goal, goal_q = (np.array(v) for v in grasp_goal(p))
        here = _position(obs)
        out: list[Segment] = []
        if _width(obs) < p.object_width_m + 0.025:
            out.append(Fingers("open", OPEN_WIDTH, planned_from=_width(obs)))
        above = np.array([goal[0], goal[1], max(here[2], goal[2] + 0.06)])
        out.append(CartesianMove("centre", above, goal_q, step_m=self.per_step(0.15),
                                 step_rad=self.per_step(TURN_RATE), tolerance_m=0.004,
                                 planned_from=here))
        out.append(CartesianMove("descend", goal, goal_q, step_m=self.per_step(p.speed_mps),
                                 tolerance_m=0.005, planned_from=above))
        out.append(Fingers("close", 0.0, planned_from=OPEN_WIDTH))
        out.append(Dwell("settle", 4))
        return out


class LiftExecutor(SegmentExecutor):
    """``lift``: raise the hand by ``height_m`` (the fingers keep squeezing), then hold still."""

    skill = "lift"
    params_model = skill_params.LiftParams
    params: skill_params.LiftParams

    def plan(self, obs: Observation) -> list[Segment]:
        here = _position(obs)
        goal = here + np.array([0.0, 0.0, self.params.height_m])
        return [CartesianMove("lift", goal, None, step_m=self.per_step(self.params.speed_mps),
                              tolerance_m=0.01, planned_from=here),
                Dwell("settle", round(self.params.settle_s / self.dt))]


class ReleaseExecutor(SegmentExecutor):
    """``release``: open the fingers to ``width_m`` until they stop."""

    skill = "release"
    params_model = skill_params.ReleaseParams
    params: skill_params.ReleaseParams

    def plan(self, obs: Observation) -> list[Segment]:
        return [Fingers("open", self.params.width_m, planned_from=_width(obs)), Dwell("settle", 2)]


class PlaceExecutor(SegmentExecutor):
    """``place``: over the target at the carrying height, down to ``GUARDED_M`` above the
    release point, lower slowly the rest of the way (both stop early on contact), open, let go,
    back off upwards."""

    skill = "place"
    params_model = skill_params.PlaceParams
    params: skill_params.PlaceParams

    def plan(self, obs: Observation) -> list[Segment]:
        p = self.params
        low = np.array(place_goal(p))
        here = _position(obs)
        carry = max(here[2], low[2] + 0.08)
        over = np.array([low[0], low[1], carry])
        step = self.per_step(p.speed_mps)
        out: list[Segment] = []
        if here[2] < carry - 0.01:
            up = np.array([here[0], here[1], carry])
            out.append(CartesianMove("rise", up, None, step_m=step, tolerance_m=0.015,
                                     planned_from=here))
            here = up
        near = low + np.array([0.0, 0.0, GUARDED_M])
        out += [
            CartesianMove("over", over, None, step_m=step, tolerance_m=0.008, planned_from=here),
            CartesianMove("down", near, None, step_m=step, tolerance_m=0.01, guard=True,
                          planned_from=over),
            CartesianMove("lower", low, None, step_m=self.per_step(p.lower_speed_mps),
                          tolerance_m=0.006, guard=True, planned_from=near),
            Fingers("open", OPEN_WIDTH, planned_from=0.04),
            Dwell("let go", 3),
            CartesianMove("back off", low + np.array([0.0, 0.0, p.retreat_m]), None,
                          step_m=step, tolerance_m=0.015, planned_from=low),
        ]
        return out


class HomeExecutor(SegmentExecutor):
    """``home``: the arm to its home joints, in joint space (needs no inverse kinematics)."""

    skill = "home"
    params_model = skill_params.HomeParams
    params: skill_params.HomeParams

    def plan(self, obs: Observation) -> list[Segment]:
        return [JointMove("home", np.array(self.params.joints),
                          step_rad=self.per_step(self.params.speed_rad_s),
                          tolerance_rad=self.params.tolerance_rad,
                          planned_from=np.asarray(obs.joint_positions, dtype=float))]
