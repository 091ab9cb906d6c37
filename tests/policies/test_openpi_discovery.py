"""An openpi client that reads the metadata learns what to send: ``openpi_client``'s
``WebsocketClientPolicy`` (in ``.venv-openpi``), against ``harness policy serve`` started
without ``--policy``, builds its observation from the metadata's ``observation_spec`` alone
(:mod:`tests.policies.spec_client`) and gets an action chunk in the metadata's action format;
a DROID-style observation is refused with an error that points at the spec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Processes
from tests.policies.spec_client import BUILD

pytestmark = pytest.mark.slow

#: Runs under .venv-openpi: openpi_client, numpy, and BUILD (above it, in the same file).
CLIENT = r'''
import json, sys
import numpy as np
from openpi_client import websocket_client_policy

policy = websocket_client_policy.WebsocketClientPolicy(host=sys.argv[1], port=int(sys.argv[2]))
meta = policy.get_server_metadata()
out = {"metadata": meta}
observation = build(meta["observation_spec"])
out["sent"] = {k: [str(v.dtype), list(v.shape)] if hasattr(v, "dtype") else v
               for k, v in observation.items()}
reply = policy.infer(observation)
out["reply"] = {"keys": sorted(reply), "shape": list(reply["actions"].shape),
                "dtype": str(reply["actions"].dtype), "stage": reply.get("stage"),
                "done": bool(reply.get("done"))}
droid = {"observation/exterior_image_1_left": np.zeros((224, 224, 3), np.uint8),
         "observation/wrist_image_left": np.zeros((224, 224, 3), np.uint8),
         "observation/joint_position": np.zeros(7, np.float32),
         "observation/gripper_position": np.zeros(1, np.float32), "prompt": "pick up the cube"}
fresh = websocket_client_policy.WebsocketClientPolicy(host=sys.argv[1], port=int(sys.argv[2]))
try:
    fresh.infer(droid)
except RuntimeError as exc:
    out["droid_error"] = str(exc)
print(json.dumps(out))
'''


def test_an_openpi_client_driven_by_the_metadata_alone_gets_an_action_chunk(
        openpi_python: Path, processes: Processes, tmp_path: Path) -> None:
    _, ready = processes.ready(sys.executable, "-m", "harness_bt.cli", "policy", "serve",
                               "--port", "0")  # no --policy: the default
    assert ready["policy"] == "pick"
    host, port = str(ready["url"]).removeprefix("ws://").rsplit(":", 1)
    script = tmp_path / "client.py"
    script.write_text(BUILD + CLIENT)
    done = subprocess.run([str(openpi_python), str(script), host, port], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    meta = out["metadata"]
    assert meta["policy"] == "pick"
    assert out["sent"] == {
        "observation/image/front": ["uint8", [192, 256, 3]],
        "observation/depth/front": ["float32", [192, 256]],
        "observation/intrinsics/front": ["float64", [3, 3]],
        "observation/camera_pose/front": ["float64", [7]],
        "observation/state": ["float32", [8]],
        "prompt": f"pick up the {meta['observation_spec']['prompt']['objects'][0]}"}
    reply = out["reply"]
    columns = meta["action_format"]["columns"]
    assert reply["dtype"] == "float32" and reply["shape"][1] == len(columns) == 7
    assert 1 <= reply["shape"][0] <= 10
    assert reply["keys"] == ["actions", "done", "server_timing", "stage"]
    assert (reply["stage"], reply["done"]) == ("locate", False)  # blank images: still looking
    assert out["droid_error"].startswith("Error in inference server:\nCommandError: "
                                         "POLICY_BAD_OBSERVATION: the observation is refused: "
                                         "no observation/state")
    assert "the server's metadata lists them as observation_spec" in out["droid_error"]
