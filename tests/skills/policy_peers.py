"""Test policies for the policy-skill tests, served by :class:`tests.harness_bt.policy.peer.
OpenpiPeer`: a plain pick that locates its target once through the project's perception (from
the images, depth and camera parameters it is sent, rebuilt by
:func:`policies.request.parse_request`) and then walks its end effector through above
/ down / close / up from the state alone."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from policies.request import parse_request
from skills.geometry import grasp_orientation, qconj, qmul, qrotate_towards, yaw_of
from skills.perception import colour_perception

STEP_M = 0.008
STEP_RAD = math.radians(4.0)


def turn(q: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One step of ``q`` towards ``goal``: the axis-angle turn (world axes) and the new q."""
    nxt = qrotate_towards(q, goal, STEP_RAD)
    rel = qmul(nxt, qconj(q))
    if rel[0] < 0:
        rel = -rel
    angle = 2.0 * math.acos(min(1.0, float(rel[0])))
    s = math.sin(angle / 2.0)
    axis = rel[1:] / s if s > 1e-9 else np.zeros(3)
    return axis * angle, nxt


def _get(obs: dict[Any, Any], key: str) -> Any:
    return obs[key] if key in obs else obs[key.encode()]


class PlainPick:
    """Per session: locate the object named in the prompt, then above -> down -> close -> up.
    ``offsets``: a sideways error on the grasp point of each session in turn (a miss, when
    large; the last one repeats)."""

    def __init__(self, *offsets: float) -> None:
        self.offsets = offsets or (0.0,)
        self.sessions: dict[str, dict[str, Any]] = {}

    def __call__(self, obs: dict[Any, Any], n: int) -> dict[str, Any]:
        session = str(_get(obs, "session"))
        state = np.asarray(_get(obs, "observation/state"), dtype=float)
        s = self.sessions.get(session)
        if s is None:
            target = str(_get(obs, "prompt")).rsplit("the ", 1)[-1].replace(" ", "_")
            seen = {u.object_id: u for u in colour_perception()(parse_request(obs).observation)}
            offset = self.offsets[min(len(self.sessions), len(self.offsets) - 1)]
            pose = seen[target].pose
            cube = np.asarray(pose.position) + np.array([0.0, offset, 0.0])
            s = self.sessions[session] = {
                "cube": cube, "phase": "above", "closed": 0,
                "q": grasp_orientation(yaw_of(pose.quaternion_wxyz))}
        ee = state[:3].copy()
        q = np.asarray(state[3:7], dtype=float)
        rows, done = [], False
        for _ in range(8):
            goal = {"above": s["cube"] + [0, 0, 0.10], "down": s["cube"] + [0, 0, 0.0],
                    "close": ee, "up": s["cube"] + [0, 0, 0.15]}[s["phase"]]
            delta = goal - ee
            dist = float(np.linalg.norm(delta))
            if dist > STEP_M:
                delta *= STEP_M / dist
            grip = 1.0 if s["phase"] in ("close", "up") else 0.0
            rv, q = turn(q, s["q"])
            rows.append([*delta, *rv, grip])
            ee = ee + delta
            if s["phase"] == "close":
                s["closed"] += 1
                if s["closed"] >= 20:
                    s["phase"] = "up"
            elif dist < 0.004:
                if s["phase"] == "up":
                    done = True
                    break
                s["phase"] = {"above": "down", "down": "close"}[s["phase"]]
        return {"actions": np.array(rows, dtype=np.float32), "done": done}
