"""openpi's own client against ``harness policy serve``: ``openpi_client``'s
``WebsocketClientPolicy`` (openpi-client 0.1.2 in ``.venv-openpi``, made by ``make setup``)
reads the metadata and runs an ``infer`` loop on an observation rendered by the built-in
simulator, its state moved by the answered actions, until the pick policy says done; and it
gets a policy error as openpi reports one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import Processes
from tests.policies.simloop import pick_env, request_from

pytestmark = pytest.mark.slow

#: Runs under .venv-openpi: only openpi_client and its numpy<2. The arm is moved by the
#: actions (the first 5 rows of each chunk; the gripper width follows the gripper column), the
#: images stay those of the first frame: the pick policy locates its target once.
CLIENT = r'''
import json, sys
import numpy as np
from openpi_client import websocket_client_policy

data = np.load(sys.argv[3])
obs = {k: data[k] for k in data.files}
obs["prompt"] = sys.argv[4]
if sys.argv[5]:
    obs["session"] = sys.argv[5]
policy = websocket_client_policy.WebsocketClientPolicy(host=sys.argv[1], port=int(sys.argv[2]))
out = {"metadata": policy.get_server_metadata(), "replies": []}
try:
    for _ in range(80):
        reply = policy.infer(obs)
        actions = reply["actions"]
        out["replies"].append({"keys": sorted(reply), "shape": list(actions.shape),
                               "dtype": str(actions.dtype), "done": bool(reply.get("done")),
                               "stage": reply.get("stage"),
                               "max_step": float(np.abs(actions[:, :3]).max())})
        if reply.get("done"):
            break
        state = obs["observation/state"].copy()
        for row in actions[:5]:
            state[:3] += row[:3]
            angle = float(np.linalg.norm(row[3:6]))
            if angle > 1e-9:  # turn the hand: (cos, axis sin) of the half angle, times q
                axis = row[3:6] / angle
                tw, (tx, ty, tz) = np.cos(angle / 2), axis * np.sin(angle / 2)
                w, x, y, z = state[3:7]
                state[3:7] = [tw * w - tx * x - ty * y - tz * z, tw * x + tx * w + ty * z - tz * y,
                              tw * y - tx * z + ty * w + tz * x, tw * z + tx * y - ty * x + tz * w]
            state[7] = 0.08 if row[6] < 0.5 else max(0.0, state[7] - 0.02)
        obs["observation/state"] = state.astype(np.float32)
except RuntimeError as exc:
    out["error"] = str(exc)
print(json.dumps(out))
'''


@pytest.fixture
def observation(tmp_path: Path) -> Path:
    """A real first frame of the built-in simulator, as an observation map in an .npz."""
    with pick_env("green_cube", seed=4) as env:
        request = request_from(env.reset()["obs"])
    path = tmp_path / "observation.npz"
    np.savez(path, **{k: v for k, v in request.items() if isinstance(v, np.ndarray)})
    return path


def openpi_run(python: Path, url: str, observation: Path, prompt: str,
               session: str = "") -> dict[str, Any]:
    host, port = url.removeprefix("ws://").rsplit(":", 1)
    (observation.parent / "client.py").write_text(CLIENT)
    done = subprocess.run([str(python), str(observation.parent / "client.py"), host, port,
                           str(observation), prompt, session], capture_output=True, text=True,
                          timeout=120, cwd=observation.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture
def served(processes: Processes) -> str:
    _, ready = processes.ready(sys.executable, "-m", "harness_bt.cli", "policy", "serve",
                               "--policy", "pick", "--port", "0", "--pose-noise-m", "0.002",
                               "--seed", "11")
    return str(ready["url"])


@pytest.mark.parametrize("session", ["openpi-episode-1", ""])
def test_openpi_client_runs_the_pick_policy_until_done(openpi_python: Path, served: str,
                                                       observation: Path, session: str) -> None:
    out = openpi_run(openpi_python, served, observation, "pick up the green cube", session)
    meta = out["metadata"]
    assert (meta["policy"], meta["server"]) == ("pick", "harness-bt")
    assert meta["settings"] == {"misgrasp_rate": 0.0, "pose_noise_m": 0.002, "seed": 11}
    assert meta["action_format"]["columns"] == ["dx", "dy", "dz", "rx", "ry", "rz", "gripper"]
    replies = out["replies"]
    assert "error" not in out and 5 < len(replies) < 80
    assert {r["dtype"] for r in replies} == {"float32"}
    assert all(len(r["shape"]) == 2 and r["shape"][1] == 7 and 1 <= r["shape"][0] <= 10
               for r in replies)
    assert all(r["keys"] == ["actions", "done", "server_timing", "stage"] for r in replies)
    assert max(r["max_step"] for r in replies) <= 0.01
    assert [r["done"] for r in replies] == [False] * (len(replies) - 1) + [True]
    stages = [r["stage"] for r in replies]
    assert sorted(set(stages), key=stages.index) == ["above", "descend", "close", "lift",
                                                     "done"]


def test_openpi_client_gets_a_policy_error_as_openpi_reports_it(openpi_python: Path,
                                                                served: str,
                                                                observation: Path) -> None:
    out = openpi_run(openpi_python, served, observation, "pick up the purple banana")
    assert out["replies"] == []
    assert out["error"].startswith("Error in inference server:\nCommandError: "
                                   "POLICY_UNKNOWN_OBJECT: the prompt 'pick up the purple "
                                   "banana' names no object this policy knows")
