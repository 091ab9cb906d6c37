"""``ZmqRuntime`` (the ``zmq`` entry point of ``harness run --runtime``) against an in-process
runtime server: the episode it offers, the control epoch it takes, fencing, clear errors."""

from __future__ import annotations

import socket

import pytest
import zmq

from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.runtime.episodes import RunOptions
from runtime_bridge.testing.telemetry_faults import TelemetryFaultProxy
from runtime_bridge.zmq.episodes import ZmqRuntime, open_runtime


def test_one_run_against_the_runtime_with_a_new_control_epoch(start_server,  # type: ignore[no-untyped-def]
                                                             zctx: zmq.Context) -> None:
    server = start_server()
    runtime = ZmqRuntime(server.endpoints["bind"], context=zctx)
    try:
        assert runtime.epoch == 1 and server.host.epoch == 1  # announced before any command
        start = runtime.start_episode()
        assert start is not None and start.index == 0 and start.details["epoch"] == 1
        assert start.details["first_observation"] is True
        assert runtime.poll().observations  # the first observation is handed over
        assert runtime.start_episode() is None  # one run per harness run
        end = runtime.finish_episode()
        assert (end.ended_by, end.sim_success, end.metric) == ("not_judged", None, None)
        assert runtime.episode_over and runtime.stop_reason is None
    finally:
        runtime.close()


def test_telemetry_comes_from_the_given_endpoint_instead_of_the_announced_one(  # type: ignore[no-untyped-def]
        start_server, zctx: zmq.Context) -> None:
    server = start_server()
    relay = TelemetryFaultProxy(server.endpoints["telemetry"], context=zctx)
    runtime = ZmqRuntime(server.endpoints["bind"], context=zctx, telemetry=relay.start())
    try:
        assert runtime.bridge.config.telemetry == relay.endpoint != server.endpoints["telemetry"]
        start = runtime.start_episode()
        assert start is not None and start.details["first_observation"] is True
        assert relay.counts.subscriptions >= 1 and relay.counts.forwarded >= 1
    finally:
        runtime.close()
        relay.stop()


def test_a_newer_harness_fences_the_older_one(start_server, zctx: zmq.Context) -> None:  # type: ignore[no-untyped-def]
    server = start_server()
    old = ZmqRuntime(server.endpoints["bind"], context=zctx)
    new = ZmqRuntime(server.endpoints["bind"], context=zctx, min_epoch=old.epoch)
    try:
        assert (old.epoch, new.epoch, server.host.epoch) == (1, 2, 2)
        old.poll()
        assert old.stop_reason == "aborted_fenced" and new.stop_reason is None
    finally:
        old.close()
        new.close()


def test_an_unreachable_runtime_is_a_clear_error(zctx: zmq.Context) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(BridgeError, match=r"RUNTIME_UNREACHABLE: no runtime answered at "
                       r".* within 0.3 s \(3 tries\).*harness runtime serve --backend sim "
                       r"--bind tcp://127.0.0.1:\d+"):
        ZmqRuntime(url, context=zctx, connect_timeout_s=0.3)


def test_options_of_the_built_in_simulator_are_refused() -> None:
    with pytest.raises(DefinitionError, match="UNSUPPORTED_OPTION: --inject, --episodes"):
        open_runtime(RunOptions(task="t", runtime_url="tcp://127.0.0.1:1", episodes=2,
                                faults={"slip": 0.1}))
    with pytest.raises(DefinitionError, match="NO_RUNTIME_URL"):
        open_runtime(RunOptions(task="t"))
