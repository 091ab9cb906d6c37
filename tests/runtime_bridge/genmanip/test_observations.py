"""GenManip observation dicts become typed Observations, and bad ones are refused by field."""

from __future__ import annotations

import numpy as np
import pytest

from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.observations import observation_from_wire, observation_to_wire


def wire_obs(**overrides: object) -> dict[str, object]:
    obs: dict[str, object] = {
        "camera_data": {"front": {
            "rgb": np.full((48, 64, 3), 7, np.uint8), "depth": np.ones((48, 64), np.float32),
            "intrinsics_matrix": np.eye(3, dtype=np.float32), "p": np.array([1.0, 0, 0.5]),
            "q": np.array([1.0, 0, 0, 0])}},
        "instruction": "pick up the red cube",
        "joint_position_state": np.zeros(9),
        "ee_pose_state": [np.array([0.3, 0.0, 0.4]), np.array([0.0, 1.0, 0.0, 0.0])],
        "timestep": 3,
        "reset": False,
    }
    obs.update(overrides)
    return obs


def test_a_wire_observation_types_every_field() -> None:
    obs = observation_from_wire(codec.loads(codec.dumps(wire_obs())), worker_id="1",
                                received_at=12.5)
    assert obs.worker_id == "1" and obs.received_at == 12.5 and obs.timestep == 3
    assert obs.cameras["front"].shape == (48, 64)
    assert obs.ee_pose.position.tolist() == [0.3, 0.0, 0.4]
    assert obs.gripper_width == 0.0 and obs.instruction == "pick up the red cube"


def test_dual_arm_poses_and_unknown_keys_are_kept() -> None:
    pose = [np.zeros(3), np.array([1.0, 0, 0, 0])]
    obs = observation_from_wire(wire_obs(ee_pose_state=[pose, pose], camera_data={},
                                         deprecated_field=1))
    assert len(obs.ee_poses) == 2 and obs.cameras == {} and obs.extras == {"deprecated_field": 1}


def test_observation_to_wire_round_trips() -> None:
    obs = observation_from_wire(wire_obs())
    again = observation_from_wire(codec.loads(codec.dumps(observation_to_wire(obs))))
    assert again.timestep == obs.timestep
    np.testing.assert_array_equal(again.cameras["front"].rgb, obs.cameras["front"].rgb)


@pytest.mark.parametrize("overrides, match", [
    ({"timestep": -1}, r"timestep: expected a non-negative int, got -1"),
    ({"ee_pose_state": [np.zeros(2), np.zeros(4)]}, r"ee_pose_state\[0\]: expected shape \(3,\)"),
    ({"camera_data": {"front": {"rgb": np.zeros((4, 4), np.uint8)}}},
     r"camera_data\['front'\]\['rgb'\]: expected HxWx3 uint8"),
    ({"instruction": 5}, "instruction: expected text"),
])
def test_bad_observations_name_the_field(overrides: dict[str, object], match: str) -> None:
    with pytest.raises(HttpError, match=match):
        observation_from_wire(wire_obs(**overrides))


def test_missing_keys_are_listed() -> None:
    obs = wire_obs()
    del obs["reset"], obs["timestep"]
    with pytest.raises(HttpError, match="missing timestep, reset"):
        observation_from_wire(obs)
