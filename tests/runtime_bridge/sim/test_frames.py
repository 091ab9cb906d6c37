"""``SimConfig.render="on_demand"``: physics without rendering unless a frame is requested;
requests by camera or in turn; the latest observation's frames rendered afterwards, identical
to what the step would have rendered, and refused once the world has moved."""

from __future__ import annotations

import numpy as np
import pytest

from harness_bt.errors import DefinitionError
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.sim import SimConfig, SimEnv, parse_camera_spec

HOLD = {"control_type": "ee_pose", "action": ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0],
                                              [0.04, 0.04])}
DOWN = {"control_type": "ee_pose", "action": ([0.0, 0.0, -0.004], [1.0, 0.0, 0.0, 0.0],
                                              [0.04, 0.04])}
CAMS = (parse_camera_spec("front:32x24"), parse_camera_spec("top:32x24"))


def test_on_demand_renders_every_camera_on_reset_and_nothing_unasked() -> None:
    with SimEnv(SimConfig(cameras=CAMS, render="on_demand")) as env:
        assert sorted(env.reset()["obs"]["camera_data"]) == ["front", "top"]
        frames = [env.step(HOLD)["obs"]["camera_data"] for _ in range(3)]
        assert frames == [{}, {}, {}]
        assert (env.frames.rendered, env.frames.skipped) == (2, 3)


def test_a_request_renders_the_next_observation_only_by_name_or_round_robins_camera() -> None:
    with SimEnv(SimConfig(cameras=CAMS, render="on_demand")) as env:
        env.reset()
        seen = []
        for ask in (None, None, ["front", "top"], ["top"]):
            env.frames.request(ask)
            seen.append(sorted(env.step(HOLD)["obs"]["camera_data"]))
            seen.append(sorted(env.step(HOLD)["obs"]["camera_data"]))
        # in turn: the camera round_robin renders at that timestep (1: top, 3: top, ...)
        assert seen == [["top"], [], ["top"], [], ["front", "top"], [], ["top"], []]


def test_a_request_for_an_unknown_camera_is_refused_naming_the_known_ones() -> None:
    with SimEnv(SimConfig(cameras=CAMS, render="on_demand")) as env:
        with pytest.raises(DefinitionError, match=r"camera\(s\) wrist: this simulator has "
                                                  r"front, top"):
            env.frames.request(["front", "wrist"])
        assert not env.frames.pending


def test_frames_rendered_after_the_step_equal_the_frames_the_step_would_have_rendered() -> None:
    config = {"cameras": CAMS, "seed": 3}
    with SimEnv(SimConfig(render="all", **config)) as eager, \
            SimEnv(SimConfig(render="on_demand", **config)) as lazy:
        eager.reset()
        lazy.reset()
        for _ in range(5):
            want = eager.step(DOWN)["obs"]
            got = lazy.step(DOWN)["obs"]
        assert got["camera_data"] == {}
        later = lazy.render_now()
        assert later["timestep"] == want["timestep"]
        for name in ("front", "top"):
            assert np.array_equal(later["camera_data"][name]["rgb"],
                                  want["camera_data"][name]["rgb"])
            assert np.array_equal(later["camera_data"][name]["depth"],
                                  want["camera_data"][name]["depth"])
        assert sorted(lazy.render_now({"top"})["camera_data"]) == ["top"]


def test_frames_of_an_observation_are_refused_once_the_world_has_moved() -> None:
    with SimEnv(SimConfig(cameras=CAMS, render="on_demand")) as env:
        env.reset()
        with pytest.raises(HttpError, match="FRAME_GONE"):
            env.render_now()  # the first observation was rendered: nothing is pending
        env.step(HOLD)
        env.render_now()
        env.frames.request(None)
        env.step(HOLD)  # rendered in the step
        with pytest.raises(HttpError, match="the world has moved since"):
            env.render_now()


def test_an_occlusion_fault_paints_frames_rendered_after_the_step_too() -> None:
    from runtime_bridge.sim import FaultRates

    config = {"cameras": CAMS, "seed": 5, "faults": FaultRates(occlude=1.0)}
    with SimEnv(SimConfig(render="all", **config)) as eager, \
            SimEnv(SimConfig(render="on_demand", **config)) as lazy:
        eager.reset()
        lazy.reset()
        want = eager.step(HOLD)["obs"]["camera_data"]
        lazy.step(HOLD)
        got = lazy.render_now()["camera_data"]
        assert any((want[n]["rgb"] == 40).all(axis=-1).any() for n in want)
        for name in want:
            assert np.array_equal(got[name]["rgb"], want[name]["rgb"])


def test_the_server_refuses_to_render_on_demand_for_clients_that_read_every_step() -> None:
    from runtime_bridge.sim import create_sim_app

    with pytest.raises(DefinitionError, match="a GenManip client asks for images with every"):
        create_sim_app(SimConfig(cameras=CAMS, render="on_demand"))
