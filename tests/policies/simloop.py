"""The built-in simulator driven by a policy of the policy protocol, as an executor would:
requests built from the simulator's observations (docs/policies.md), the first rows of each
action chunk run as ``ee_pose`` steps. For the tests and the misgrasp benchmark."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime_bridge.sim.config import DEFAULT_CAMERAS, SimConfig, parse_camera_spec
from runtime_bridge.sim.env import SimEnv

#: the cameras harness run uses, one rendered per step in turn
CAMERAS = tuple(parse_camera_spec(s) for s in DEFAULT_CAMERAS)
OPEN_FINGER = 0.04


#: steps the scene's success condition must hold before the episode ends as a success: longer
#: than the rest of a lift, so the episode ends (if at all) while the arm holds after ``done``
SUCCESS_HOLD_STEPS = 60


def pick_env(target: str, *, seed: int = 0, num_steps: int = 600) -> SimEnv:
    """One pick_cube episode whose target (and instruction) is ``target``."""
    return SimEnv(SimConfig(scenes=("pick_cube",), params={"target": target}, seed=seed,
                            num_steps=num_steps, cameras=CAMERAS, render="round_robin",
                            success_hold_steps=SUCCESS_HOLD_STEPS))


def request_from(obs: Mapping[str, Any], session: str | None = None) -> dict[str, Any]:
    """The observation map of one simulator observation."""
    out: dict[str, Any] = {}
    for name, cam in obs["camera_data"].items():
        out[f"observation/image/{name}"] = np.asarray(cam["rgb"], dtype=np.uint8)
        out[f"observation/depth/{name}"] = np.asarray(cam["depth"], dtype=np.float32)
        out[f"observation/intrinsics/{name}"] = np.asarray(cam["intrinsics_matrix"],
                                                           dtype=np.float64)
        out[f"observation/camera_pose/{name}"] = np.concatenate(
            [np.asarray(cam["p"], dtype=np.float64), np.asarray(cam["q"], dtype=np.float64)])
    joints = np.asarray(obs["joint_position_state"], dtype=np.float32)
    position, quat = obs["ee_pose_state"]
    out["observation/state"] = np.concatenate(
        [position, quat, [joints[7] + joints[8]]]).astype(np.float32)
    out["observation/joint_position"] = joints
    out["prompt"] = obs["instruction"]
    if session is not None:
        out["session"] = session
    return out


def sim_action(row: np.ndarray) -> dict[str, Any]:
    """One action row (dx, dy, dz, rx, ry, rz, gripper) as a GenManip ``ee_pose`` action."""
    finger = OPEN_FINGER * (1.0 - float(np.clip(row[6], 0.0, 1.0)))
    turn = np.asarray(row[3:6], dtype=float)
    angle = float(np.linalg.norm(turn))
    q = [1.0, 0.0, 0.0, 0.0]
    if angle > 1e-12:
        q = [math.cos(angle / 2), *(float(v) for v in turn / angle * math.sin(angle / 2))]
    return {"control_type": "ee_pose",
            "action": [[float(v) for v in row[:3]], q, [finger, finger]]}


@dataclass
class Outcome:
    done: bool  # the policy said done
    success: bool  # the simulator's own success check (lifted and held, held a few steps)
    requests: int
    steps: int
    stages: list[str]


def run_pick(infer: Callable[[dict[str, Any]], Mapping[str, Any]], env: SimEnv, *,
             session: str | None = None, rows_per_request: int = 5, max_requests: int = 150,
             hold_steps: int = SUCCESS_HOLD_STEPS + 20, first: dict[str, Any] | None = None
             ) -> Outcome:
    """Drive one episode until the policy says done (then hold still, closed, for
    ``hold_steps`` steps: the simulator judges the episode a success once its condition has
    held for SUCCESS_HOLD_STEPS of them), the episode ends, or ``max_requests`` pass."""
    entry = first or env.reset()
    obs = entry["obs"]
    steps = requests = 0
    stages: list[str] = []
    done = ended = False
    while not (done or ended) and requests < max_requests:
        reply = infer(request_from(obs, session))
        requests += 1
        if not stages or stages[-1] != reply.get("stage"):
            stages.append(str(reply.get("stage")))
        actions = np.asarray(reply["actions"])
        assert actions.dtype == np.float32 and actions.ndim == 2 and actions.shape[1] == 7
        assert (np.abs(actions[:, :3]) <= 0.01 + 1e-6).all()
        done = bool(reply.get("done", False))
        rows = actions if done else actions[:rows_per_request]
        if done:
            rows = np.vstack([rows, np.tile([0.0] * 6 + [rows[-1, 6]], (hold_steps, 1))])
        for row in rows:
            entry = env.step(sim_action(row))
            steps += 1
            if entry["obs"] is None or entry["obs"]["reset"]:
                ended = True
                break
            obs = entry["obs"]
    episodes = env.results()["episodes"]
    success = bool(episodes) and episodes[0]["ended"] == "success"
    return Outcome(done, success, requests, steps, stages)
