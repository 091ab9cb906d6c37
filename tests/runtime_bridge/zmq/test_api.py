"""The public surface of the runtime packages, and the command line's wiring."""

from __future__ import annotations

import re

import pytest

import runtime_bridge.host
import runtime_bridge.zmq
from harness_bt.errors import BridgeError
from runtime_bridge.backends import backend_from_spec
from runtime_bridge.kinematic import KinematicBackend
from runtime_bridge.zmq.cli import executors_from_spec
from tests.runtime_bridge.executors import factory


def test_exported_names_are_pinned():
    assert sorted(runtime_bridge.host.__all__) == [
        "Backend", "EventBatch", "ExecutorHost", "HeartbeatResult", "HostConfig", "StepResult"]
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
    assert isinstance(backend, runtime_bridge.host.Backend)
    assert executors_from_spec("tests.runtime_bridge.executors:factory") is factory
    with pytest.raises(BridgeError, match="unknown backend 'pybullet'; known: kinematic, sim"):
        backend_from_spec("pybullet")
    no_attr = re.escape("'tests.runtime_bridge.executors' has no 'nope'")
    with pytest.raises(BridgeError, match=no_attr):
        executors_from_spec("tests.runtime_bridge.executors:nope")
    with pytest.raises(BridgeError, match=re.escape("is not of the form package.module:name")):
        executors_from_spec("factory")


def test_harness_cli_has_the_runtime_subcommand(capsys):
    from harness_bt.cli import main

    assert main(["runtime", "--help"]) == 0
    out = capsys.readouterr().out
    assert "serve" in out and "broker" in out
