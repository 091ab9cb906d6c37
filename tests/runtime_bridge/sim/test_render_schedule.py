"""``SimConfig.render="round_robin"``: one camera per step in turn, all of them on an
episode's first observation; ``success_hold_steps`` and the /harness/sim route."""

from __future__ import annotations

import httpx
import pytest

from harness_bt.errors import DefinitionError
from runtime_bridge.genmanip import ServerThread
from runtime_bridge.sim import SimConfig, SimEnv, create_sim_app, parse_camera_spec

HOLD = {"control_type": "ee_pose", "action": ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0],
                                              [0.04, 0.04])}
CAMS = (parse_camera_spec("front:32x24"), parse_camera_spec("top:32x24"))


def test_round_robin_renders_one_camera_per_step_and_all_on_reset() -> None:
    with SimEnv(SimConfig(cameras=CAMS, render="round_robin")) as env:
        first = env.reset()["obs"]
        assert sorted(first["camera_data"]) == ["front", "top"]
        seen = [sorted(env.step(HOLD)["obs"]["camera_data"]) for _ in range(4)]
        assert seen == [["top"], ["front"], ["top"], ["front"]]


def test_all_renders_every_camera_every_step() -> None:
    with SimEnv(SimConfig(cameras=CAMS)) as env:
        env.reset()
        assert sorted(env.step(HOLD)["obs"]["camera_data"]) == ["front", "top"]


def test_bad_render_and_hold_settings_are_refused() -> None:
    with pytest.raises(DefinitionError, match="render='sometimes' must be one of 'all', "
                       "'round_robin', 'on_demand'"):
        SimConfig(render="sometimes")
    with pytest.raises(DefinitionError, match="success_hold_steps=0 must be >= 1"):
        SimConfig(success_hold_steps=0)


def test_the_server_tells_its_configuration() -> None:
    config = SimConfig(cameras=CAMS, num_steps=77, success_hold_steps=9, render="round_robin")
    with ServerThread(create_sim_app(config)) as server:
        info = httpx.get(server.url + "/harness/sim").json()
    assert (info["num_steps"], info["success_hold_steps"], info["render"]) == (77, 9,
                                                                               "round_robin")
    assert info["cameras"] == ["front:32x24", "top:32x24"]
