"""The simulator over real HTTP (uvicorn on a loopback port), driven by a tiny client written
from GENMANIP_PROTOCOL.md with plain httpx and pickle, not by our GenManipClient."""

from __future__ import annotations

import base64
import io
import math
import os
import pickle
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest

from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.client import (
    ClientOptions,
    GenManipClient,
    StepOutcomeUnknown,
    Timeouts,
)
from runtime_bridge.sim.config import FaultRates
from runtime_bridge.sim.robot import HOME

IDENTITY = [1.0, 0.0, 0.0, 0.0]


class _BuiltinsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing {module}.{name}")


def _arrays(value: Any) -> Any:
    if isinstance(value, dict) and value.get("type") == "numpy_array":
        raw = base64.b64decode(value["data"])
        return np.frombuffer(raw, dtype=value["dtype"]).reshape(value["shape"])
    if isinstance(value, dict):
        return {k: _arrays(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_arrays(v) for v in value)
    return value


class ProtocolClient:
    """The protocol as documented: JSON for create/kill, pickle 5 for reset/step."""

    def __init__(self, url: str, worker_ids: list[str], headers: dict[str, str] | None = None):
        self.http = httpx.Client(base_url=url, timeout=30, headers=headers)
        self.ids = worker_ids

    def post_json(self, route: str) -> httpx.Response:
        return self.http.post(route, json={"data": {"worker_ids": self.ids}})

    def post_pickle(self, route: str, obj: Any) -> Any:
        r = self.http.post(route, content=pickle.dumps(obj, protocol=5),
                           headers={"content-type": "application/octet-stream"})
        assert r.status_code == 200, r.text
        return _arrays(_BuiltinsOnly(io.BytesIO(r.content)).load())

    def step(self, actions: dict[str, Any]) -> dict[str, Any]:
        return self.post_pickle("/step", actions)

    def close(self) -> None:
        self.http.close()


def joint(deltas: dict[int, float] | None = None) -> dict[str, Any]:
    action = [0.0] * 7 + [0.04, 0.04]
    for i, d in (deltas or {}).items():
        action[i] = d
    return {"action": action, "control_type": "joint_position"}


def test_a_full_episode_loop_over_http(sim_server: Callable[..., str]) -> None:
    url = sim_server(scenes=("pick_cube",), episodes=2, num_steps=25)
    client = ProtocolClient(url, ["0"])
    try:
        assert client.http.get("/docs").status_code == 200
        assert client.post_json("/create_workers").json() == {"data": {"success": True}}
        first = client.post_pickle("/reset", {"worker_ids": ["0"]})["0"]
        assert first["metric"] is None and first["obs"]["reset"] is True
        obs = first["obs"]
        assert set(obs) == {"camera_data", "instruction", "joint_position_state",
                            "ee_pose_state", "timestep", "reset"}
        assert obs["camera_data"]["front"]["rgb"].shape == (48, 64, 3)
        assert obs["camera_data"]["wrist"]["depth"].dtype == np.float32
        # joint_position: +0.02 rad on joint 1 for 5 steps, then hold
        for _ in range(5):
            obs = client.step({"0": joint({1: 0.02})})["0"]["obs"]
        for _ in range(10):
            obs = client.step({"0": joint()})["0"]["obs"]
        assert obs["timestep"] == 15
        assert obs["joint_position_state"][1] == pytest.approx(HOME[1] + 0.1, abs=5e-3)
        # ee_pose: 1 cm up per step for 4 steps, then hold
        z0 = float(obs["ee_pose_state"][0][2])
        up = {"control_type": "ee_pose", "action": ([0.0, 0.0, 0.01], IDENTITY, [0.04, 0.04])}
        still = {"control_type": "ee_pose", "action": ([0.0, 0.0, 0.0], IDENTITY, [0.04, 0.04])}
        for _ in range(4):
            client.step({"0": up})
        for _ in range(5):
            obs = client.step({"0": still})["0"]["obs"]
        assert float(obs["ee_pose_state"][0][2]) - z0 == pytest.approx(0.04, abs=4e-3)
        # the episode times out inside /step: the answer is the next episode's first obs
        entry = client.step({"0": joint()})["0"]
        assert entry["obs"]["timestep"] == 0 and entry["obs"]["reset"] is True
        for _ in range(24):
            entry = client.step({"0": joint()})["0"]
        assert entry["obs"]["timestep"] == 24
        final = client.step({"0": joint()})["0"]
        assert final == {"obs": None, "metric": {"pick_cube": 0.0}, "episode_ended": "timeout"}
        results = client.http.get("/harness/results").json()["workers"]["0"]["results"]
        assert [e["seed"] for e in results["episodes"]] == [0, 1]
        assert client.post_json("/kill").json() == {"data": {"success": True}}
    finally:
        client.close()


def test_two_workers_step_together(sim_server: Callable[..., str]) -> None:
    url = sim_server(scenes=("pick_cube",), episodes=2, num_steps=50, cameras=())
    client = ProtocolClient(url, ["0", "1"])
    try:
        client.post_json("/create_workers")
        reset = client.post_pickle("/reset", {"worker_ids": ["0", "1"]})
        assert sorted(reset) == ["0", "1"]
        out = client.step({"0": joint(), "1": joint({0: 0.1})})
        assert [out[w]["obs"]["timestep"] for w in ("0", "1")] == [1, 1]
        truth = client.http.get("/harness/results").json()["workers"]
        assert {truth[w]["ground_truth"]["seed"] for w in ("0", "1")} == {0, 1}
    finally:
        client.close()


class Hostile:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (exec, ("open('/tmp/harness_pwned', 'w').write('x')",))


@pytest.mark.parametrize("body, status, detail", [
    (pickle.dumps(Hostile(), protocol=5), 400, r"refers to the global builtins\.exec"),
    (b"not a pickle", 400, "is not a readable pickle"),
    (b"\x80\x05" + b"x" * 2_000_000, 413, "over the limit of 1048576 bytes"),
    (pickle.dumps({"0": {"action": [0.0] * 9}}), 500, "the action has no 'control_type'"),
    (pickle.dumps({"0": {"control_type": "joint_position", "action": [0.0] * 7}}), 500,
     r"must have shape \(9,\), got shape \(7,\)"),
    (pickle.dumps({"0": {"control_type": "joint_position", "action": [math.nan] * 9}}), 500,
     r"action\[0\]: .*non-finite value nan"),
    (pickle.dumps({"0": {"control_type": "ee_pose",
                         "action": ([0, 0, 0], [0, 0, 0, 0], [0.04, 0.04])}}), 500,
     r"action\[1\]: quaternion \[0\.0, 0\.0, 0\.0, 0\.0\] has norm 0"),
    (pickle.dumps({"9": {"control_type": "joint_position", "action": [0.0] * 9}}), 500,
     "worker '9' does not exist"),
])
def test_bad_requests_get_upstream_status_codes_and_a_detail(
        sim_server: Callable[..., str], body: bytes, status: int, detail: str) -> None:
    url = sim_server(cameras=())
    with httpx.Client(base_url=url, timeout=30) as http:
        http.post("/create_workers", json={"data": {"worker_ids": ["0"]}})
        http.post("/reset", content=pickle.dumps({"worker_ids": ["0"]}))
        r = http.post("/step", content=body)
        assert r.status_code == status
        payload = r.json()
        assert payload["detail"] and payload["error"]["fix"]
        assert re.search(detail, payload["detail"]), payload["detail"]
        after = http.post("/step", content=pickle.dumps({"0": joint()}))
        assert after.status_code == 200  # the server still works, and nothing moved before
        assert codec.loads(after.content)["0"]["obs"]["timestep"] == 1
    assert not os.path.exists("/tmp/harness_pwned")


def test_the_bearer_token_guards_every_route_but_docs(sim_server: Callable[..., str]) -> None:
    url = sim_server(token="s3cret", cameras=())
    with httpx.Client(base_url=url, timeout=30) as http:
        assert http.get("/docs").status_code == 200
        r = http.post("/create_workers", json={"data": {"worker_ids": ["0"]}})
        assert r.status_code == 401 and "bearer token" in r.json()["detail"]
        r = http.post("/create_workers", json={"data": {"worker_ids": ["0"]}},
                      headers={"authorization": "Bearer s3cret"})
        assert r.status_code == 200


def test_the_fast_path_is_negotiated_and_carries_the_same_observation(
        sim_server: Callable[..., str]) -> None:
    url = sim_server(episodes=1)
    with httpx.Client(base_url=url, timeout=30) as http:
        http.post("/create_workers", json={"data": {"worker_ids": ["0"]}})
        r = http.post("/reset", content=pickle.dumps({"worker_ids": ["0"]}),
                      headers={"accept": codec.FRAMES_MEDIA_TYPE})
        assert r.headers["content-type"] == codec.FRAMES_MEDIA_TYPE
        fast = codec.loads_frames(r.content)["0"]["obs"]
        results = http.get("/harness/results").json()
        assert results["workers"]["0"]["ground_truth"]["timestep"] == 0
    assert fast["camera_data"]["front"]["rgb"].shape == (48, 64, 3)


def test_our_client_drives_the_simulator_and_settles_a_dropped_answer(
        sim_server: Callable[..., str]) -> None:
    url = sim_server(episodes=1, num_steps=100, cameras=(),
                     faults=FaultRates(drop=0.5, drop_hold_s=10.0))
    with GenManipClient(
        url,
        options=ClientOptions(timeouts=Timeouts(step=0.4)),
    ) as client:
        client.create_workers()
        client.reset()
        unknown, result = 0, None
        while unknown == 0 or result is None:  # seeded: the same requests drop every run
            try:
                result = client.step({"0": joint()})["0"]
            except StepOutcomeUnknown:
                unknown, result = unknown + 1, None
        notices = client.notices()
    settled = [n for n in notices if n.kind == "step_settled"]
    assert [n.kind for n in notices].count("step_unknown") == unknown
    # every dropped step had been applied by the server, and the timestep says so
    assert settled[-1].data["applied"] == settled[-1].data["unknown_steps"] >= 1


def test_a_delayed_answer_arrives_late_but_intact(sim_server: Callable[..., str]) -> None:
    url = sim_server(cameras=(), faults=FaultRates(delay=1.0, delay_s=0.3))
    with GenManipClient(url) as client:
        client.create_workers()
        client.reset()
        started = time.monotonic()
        result = client.step({"0": joint()})["0"]
        assert time.monotonic() - started >= 0.3
        assert result.obs.timestep == 1
    fired = httpx.get(f"{url}/harness/results").json()["transport_faults"]
    assert fired == [{"request": 1, "kind": "delay"}]
