"""Faults on the runtime's side: the simulator's answer of a step in which a fault fired
carries it (and an answer without one is exactly GenManip's); the GenManip client reads them
from a server's answers (a malformed list is left out with a notice, the step kept); the
in-process runtime hands them to the harness with the commands executing in that step."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from harness_bt.errors import BridgeError
from harness_bt.runtime.faults import MAX_FAULTS_PER_STEP, FaultFired, faults_from_wire
from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.client import ClientOptions, GenManipClient
from runtime_bridge.sim import FaultRates, SimConfig, parse_camera_spec
from runtime_bridge.sim.env import SimEnv

HOLD = {"control_type": "ee_pose",
        "action": ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.04, 0.04])}


def _env(**faults: float) -> SimEnv:
    return SimEnv(SimConfig(scenes=("pick_cube",), episodes=1, seed=3, num_steps=50,
                            cameras=(parse_camera_spec("front:64x48"),),
                            faults=FaultRates(**faults)))


def test_a_step_carries_the_faults_that_fired_in_it_and_a_plain_step_is_genmanips() -> None:
    with _env(occlude=1.0, occlude_steps=1) as env:
        first = env.reset()
        assert set(first) == {"obs", "metric"}  # the first observation's occlusion waits
        answer = env.step(HOLD)
        assert [(f["kind"], f["step"]) for f in answer["faults"]] == [("occlude", 0),
                                                                       ("occlude", 1)]
        assert answer["faults"][0]["camera"] == "front"
        again = env.step(HOLD)
        assert [f["step"] for f in again["faults"]] == [2]  # each fault goes out once
        # what the results keep is what the answers said, in order
        assert [f["step"] for f in env.faults.fired] == [0, 1, 2]
    with _env() as clean:
        clean.reset()
        assert set(clean.step(HOLD)) == {"obs", "metric"}


def test_the_faults_a_simulator_reports_are_checked() -> None:
    (fault,) = faults_from_wire([{"kind": "slip", "step": 30, "object": "red_cube",
                                  "offset_m": (0.01, -0.02)}], worker_id="2", step_s=0.1)
    assert fault == FaultFired("slip", 30, 3.0, "2", {"object": "red_cube",
                                                       "offset_m": [0.01, -0.02]})
    assert faults_from_wire(None) == []
    bad = [([{"kind": "slip"}], r"faults\[0\]: 'step' must be an integer >= 0, got None"),
           ([{"kind": "", "step": 1}], r"'kind' must be a name of 1 to 64 characters"),
           ([{"kind": "slip", "step": 1, "object": {"nested": 1}}],
            r"faults\[0\]\.object: a detail must be a short scalar"),
           ([{"kind": "slip", "step": 1, "x": float("nan")}], r"a detail must be"),
           ([{"kind": "slip", "step": 1}] * (MAX_FAULTS_PER_STEP + 1),
            f"expected a list of at most {MAX_FAULTS_PER_STEP} fault records"),
           ("slip", "expected a list")]
    for raw, message in bad:
        with pytest.raises(BridgeError, match=message) as err:
            faults_from_wire(raw)
        assert err.value.code == "BAD_FAULT_RECORD"
        assert "check the server's version" in (err.value.fix or "")


def _obs(timestep: int) -> dict[str, object]:
    return {"camera_data": {}, "instruction": "pick up the red cube",
            "joint_position_state": np.zeros(9), "timestep": timestep, "reset": timestep == 0,
            "ee_pose_state": [np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])]}


def _client(faults: object, ended: object = None) -> GenManipClient:
    def serve(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/reset":
            entry: dict[str, object] = {"obs": _obs(0), "metric": None}
        else:
            entry = {"obs": _obs(1), "metric": None, "faults": faults}
            if ended is not None:
                entry["episode_ended"] = ended
        return httpx.Response(200, content=codec.dumps({"0": entry}),
                              headers={"content-type": codec.COMPAT_MEDIA_TYPE})

    return GenManipClient("http://sim", options=ClientOptions(fast_path=False),
                          transport=httpx.MockTransport(serve))


def test_the_genmanip_client_reads_the_faults_of_a_step_answer() -> None:
    with _client([{"kind": "nudge", "step": 0, "object": "red_cube"}]) as client:
        assert client.reset()["0"].faults == ()
        (result,) = client.step({"0": HOLD}).values()
    assert result.faults == (FaultFired("nudge", 0, None, "0", {"object": "red_cube"}),)
    assert result.obs is not None and result.obs.timestep == 1


@pytest.mark.parametrize(("sent", "read"), [("success", "success"), ("timeout", "timeout"),
                                             ("exploded", None), (7, None), (None, None)])
def test_the_client_reads_how_an_episode_ended_and_ignores_anything_else(
        sent: object, read: str | None) -> None:
    with _client([], ended=sent) as client:
        assert client.reset()["0"].ended is None
        (result,) = client.step({"0": HOLD}).values()
    assert result.ended == read


def test_a_malformed_fault_list_is_left_out_with_a_notice_and_the_step_is_kept() -> None:
    with _client([{"kind": "nudge"}]) as client:
        client.reset()
        (result,) = client.step({"0": HOLD}).values()
        notices = client.notices()
    assert result.faults == () and result.obs is not None
    (notice,) = [n for n in notices if n.kind == "faults_unreadable"]
    assert notice.data["error"]["code"] == "BAD_FAULT_RECORD"
    assert "'step' must be an integer >= 0" in notice.data["error"]["message"]


def test_the_in_process_runtime_hands_each_fault_over_with_the_commands_of_its_step() -> None:
    from harness_bt.ledger import Command
    from runtime_bridge.inproc import InProcRuntime
    from runtime_bridge.sim import SimBackend
    from skills.executors import executor_registry

    config = SimConfig(scenes=("pick_cube",), episodes=1, seed=0, num_steps=40,
                       cameras=(parse_camera_spec("front:64x48"),),
                       faults=FaultRates(occlude=1.0, occlude_steps=1))
    runtime = InProcRuntime(SimBackend(config), executor_registry())
    try:
        runtime.start_episode()
        assert runtime.poll().faults == ()  # the first observation: no step ran yet
        idle = runtime.poll().faults
        assert [(f.kind, f.command_ids) for f in idle] == [("occlude", ()), ("occlude", ())]
        assert [f.sim_time_s for f in idle] == [0.0, 0.0333]  # step / 30, to 0.1 ms
        runtime.dispatch(Command(command_id="m", skill="move_ee_to",
                                 params={"target": [0.6, 0.2, 0.2], "speed_mps": 0.01},
                                 resources=("arm",), start_within_ms=1000,
                                 execution_timeout_ms=30_000))
        busy = runtime.poll().faults
        assert [(f.kind, f.timestep, f.command_ids) for f in busy] == [("occlude", 2, ("m",))]
        end = runtime.finish_episode(max_hold_steps=3)  # fired while the robot is held still
        assert [(f["kind"], f["timestep"]) for f in end.details["faults_after_task"]] == [
            ("occlude", 3), ("occlude", 4), ("occlude", 5)]
    finally:
        runtime.close()
