"""The public surface of the runtime packages, and the command line's wiring."""

from __future__ import annotations

import re

import pytest

import runtime_bridge.host
import runtime_bridge.zmq
from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.runtime.backend import Backend
from harness_bt.runtime.executor import ExecutorRegistry, load_executors
from runtime_bridge.backends import backend_from_spec
from runtime_bridge.backends.kinematic import KinematicBackend
from tests.runtime_bridge.executors import factory


def test_exported_names_are_pinned():
    assert sorted(runtime_bridge.host.__all__) == [
        "EventBatch", "ExecutorHost", "GiveWay", "HeartbeatResult", "HostConfig",
        "PlanOn", "StepResult"]
    assert sorted(runtime_bridge.zmq.__all__) == sorted([
        "PROTOCOL_VERSION", "Broker", "BrokerConfig", "BrokerPlugin", "FunctionService",
        "LazyPirateClient", "Limits", "Message", "MessageType", "RuntimeServer",
        "RuntimeServerConfig", "RuntimeService", "Service", "ServiceWorker",
        "TelemetryPublisher", "TelemetrySubscriber", "TopicValue", "WireCode", "WireError",
        "WorkerConfig", "ZmqBridge", "ZmqBridgeConfig", "decode", "encode"])
    for name in runtime_bridge.zmq.__all__:
        assert hasattr(runtime_bridge.zmq, name)


def test_backends_and_executors_are_found_by_spec():
    backend = backend_from_spec("kinematic", dt=0.02)
    assert isinstance(backend, KinematicBackend) and backend.control_period_s == 0.02
    assert isinstance(backend, Backend)
    assert load_executors("tests.runtime_bridge.executors:factory") is factory
    with pytest.raises(DefinitionError, match="unknown backend 'pybullet'; known: genmanip, "
                       "kinematic, sim"):
        backend_from_spec("pybullet")
    no_attr = re.escape("'tests.runtime_bridge.executors' has no 'nope'")
    with pytest.raises(DefinitionError, match=no_attr):
        load_executors("tests.runtime_bridge.executors:nope")
    with pytest.raises(DefinitionError,
                       match=re.escape("is not of the form package.module:attribute")):
        load_executors("factory")
    installed = load_executors(None)
    assert isinstance(installed, ExecutorRegistry) and "grasp" in installed.names()


@pytest.mark.parametrize(("spec", "options", "message"), [
    ("kinematic", {"sim_scene": "pick_and_place"}, "--sim-scene pick_and_place: only for "
     "--backend sim (they choose the built-in simulator's scene), not --backend kinematic"),
    ("tests.runtime_bridge.executors:factory", {"seed": 3}, "--seed 3: only for --backend sim"),
    ("http://127.0.0.1:1", {"sim_scene": "pick_cube", "seed": 0},
     "--sim-scene pick_cube, --seed 0: only for --backend sim"),
])
def test_sim_options_are_refused_with_another_backend(spec, options, message):
    with pytest.raises(BridgeError, match=re.escape(message)) as caught:
        backend_from_spec(spec, **options)
    assert caught.value.code == "INVALID_CONFIG"


def test_the_sim_backend_serves_the_chosen_task_and_seed_and_chaos_shares_it():
    from runtime_bridge.inproc import DEFAULT_CAMERAS
    from runtime_bridge.testing.chaos.runtime import make_backend as chaos_backend

    served = backend_from_spec("sim", dt=0.05, sim_scene="pick_and_place", seed=3)
    chaos = chaos_backend("pick_and_place", dt=0.05, seed=3)
    try:
        for backend in (served, chaos):
            c = backend.config
            assert (c.scenes, c.seed, c.control_dt, c.num_steps) == (
                ("pick_and_place",), 3, 0.05, 2**31 - 1)
        assert [c.name for c in served.config.cameras] == ["front"]
        assert len(chaos.config.cameras) == len(DEFAULT_CAMERAS)
        assert chaos.config.render == "round_robin"
        assert served.reset().instruction == "put the red cube in the tray"
    finally:
        served.close()
        chaos.close()


def test_an_unknown_sim_scene_names_the_known_ones_before_building_a_scene(monkeypatch):
    import runtime_bridge.sim.backend as sim_backend

    def refuse(*_, **__):
        raise AssertionError("built a simulator for an unknown scene")

    monkeypatch.setattr(sim_backend, "SimBackend", refuse)
    with pytest.raises(DefinitionError, match=(  # installed packages may add scenes
            r"unknown scene 'pick_and_plac'; known: (\w+, )*pick_and_place, pick_cube, place_at, "
            r"(\w+, )*sort, stack, table; did you mean 'pick_and_place'\?")) as caught:
        backend_from_spec("sim", sim_scene="pick_and_plac")
    assert (caught.value.code, caught.value.where) == ("UNKNOWN_SCENE", "pick_and_plac")


def test_harness_cli_has_the_runtime_subcommand(capsys):
    from harness_bt.cli import main

    assert main(["runtime", "--help"]) == 0
    out = capsys.readouterr().out
    assert "serve" in out and "broker" in out


def test_a_runtime_process_freezes_its_start_up_and_collects_young_garbage_less_often():
    import gc

    from runtime_bridge.zmq.cli import GC_YOUNG_THRESHOLD, quiet_collector

    before = gc.get_threshold()
    try:
        quiet_collector()
        assert gc.get_threshold()[0] == GC_YOUNG_THRESHOLD > before[0]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
