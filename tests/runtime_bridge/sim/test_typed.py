"""The simulator's in-process face: typed observations (what a GenManip client decodes from
the wire face, without the dicts), the project's own errors where no HTTP is involved, and
the wire face's HTTP statuses kept."""

from __future__ import annotations

import numpy as np
import pytest

from harness_bt.errors import BridgeError
from harness_bt.runtime.observation import Observation
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.observations import observation_from_wire
from runtime_bridge.sim import SimConfig, SimEnv, parse_camera_spec
from runtime_bridge.sim.backend import SimBackend

HOLD = {"control_type": "ee_pose", "action": ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0],
                                              [0.04, 0.04])}
DOWN = {"control_type": "ee_pose", "action": ([0.0, 0.0, -0.004], [1.0, 0.0, 0.0, 0.0],
                                              [0.04, 0.04])}
CAMS = (parse_camera_spec("front:32x24"), parse_camera_spec("top:32x24"))


def _same(typed: Observation, decoded: Observation) -> None:
    assert (typed.instruction, typed.timestep, typed.reset, typed.worker_id) == (
        decoded.instruction, decoded.timestep, decoded.reset, decoded.worker_id)
    assert np.array_equal(typed.joint_positions, decoded.joint_positions)
    assert typed.joint_positions.dtype == decoded.joint_positions.dtype
    assert len(typed.ee_poses) == len(decoded.ee_poses) == 1
    for field in ("position", "quaternion_wxyz"):
        a, b = getattr(typed.ee_pose, field), getattr(decoded.ee_pose, field)
        assert np.array_equal(a, b) and a.dtype == b.dtype
    assert sorted(typed.cameras) == sorted(decoded.cameras)
    for name, frame in typed.cameras.items():
        other = decoded.cameras[name]
        for field in ("rgb", "depth", "intrinsics", "position", "quaternion_wxyz"):
            a, b = getattr(frame, field), getattr(other, field)
            assert np.array_equal(a, b) and a.dtype == b.dtype, (name, field)
    assert dict(typed.extras) == dict(decoded.extras) == {}


def test_the_typed_face_answers_what_a_client_decodes_from_the_wire_face() -> None:
    config = SimConfig(cameras=CAMS, render="round_robin", seed=4)
    with SimEnv(config) as typed, SimEnv(config) as wire:
        pairs = [(typed.next_episode().observation, wire.reset()["obs"])]
        for action in (DOWN, DOWN, HOLD):
            pairs.append((typed.advance(action).observation, wire.step(action)["obs"]))
        for mine, theirs in pairs:
            assert mine is not None
            _same(mine, observation_from_wire(theirs, worker_id="0"))


def test_frames_now_is_render_now_typed() -> None:
    config = SimConfig(cameras=CAMS, render="on_demand", seed=2)
    with SimEnv(config) as typed, SimEnv(config) as wire:
        typed.next_episode()
        wire.reset()
        assert typed.advance(DOWN).observation.cameras == {}  # type: ignore[union-attr]
        wire.step(DOWN)
        _same(typed.frames_now({"top"}), observation_from_wire(wire.render_now({"top"})))


def test_the_typed_face_ends_with_the_final_metric_and_no_observation() -> None:
    with SimEnv(SimConfig(cameras=(), num_steps=2, render="on_demand")) as env:
        env.next_episode()
        assert env.advance(HOLD).observation is not None
        last = env.advance(HOLD)
        assert last.observation is None and last.metric == {"pick_cube": 0.0}
        assert env.advance(HOLD).metric == {"pick_cube": 0.0}


def test_refusals_in_process_are_bridge_errors_and_over_the_wire_http_errors() -> None:
    with SimEnv(SimConfig(cameras=CAMS, render="on_demand")) as env:
        with pytest.raises(BridgeError, match="NOT_RESET: worker 0: /step before /reset") as e:
            env.advance(HOLD)
        assert not isinstance(e.value, HttpError)
        with pytest.raises(HttpError, match="NOT_RESET") as h:
            env.step(HOLD)
        assert h.value.http_status == 500
        env.next_episode()
        with pytest.raises(BridgeError, match="control_type") as e:
            env.advance({"control_type": "teleport", "action": [0.0]})
        assert not isinstance(e.value, HttpError)
        with pytest.raises(HttpError, match="control_type") as h:
            env.step({"control_type": "teleport", "action": [0.0]})
        assert h.value.http_status == 500
        env.frames.request(None)
        env.advance(HOLD)  # rendered in the step: no frames are pending
        with pytest.raises(BridgeError, match="FRAME_GONE") as e:
            env.frames_now()
        assert not isinstance(e.value, HttpError)
        with pytest.raises(HttpError, match="FRAME_GONE") as h:
            env.render_now()
        assert h.value.http_status == 409


def test_the_backend_reads_typed_answers_and_refuses_a_bad_action_as_a_bridge_error() -> None:
    backend = SimBackend(SimConfig(cameras=CAMS, render="on_demand"))
    try:
        first = backend.reset()
        assert first.reset and sorted(first.cameras) == ["front", "top"]
        assert backend.step(DOWN).timestep == 1
        with pytest.raises(BridgeError) as e:
            backend.step({"control_type": "ee_pose", "action": [1.0]})
        assert not isinstance(e.value, HttpError)
    finally:
        backend.close()
