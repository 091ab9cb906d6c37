"""A runtime killed with SIGKILL and restarted: nothing runs twice, and it still answers."""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness_bt.ledger import EventKind
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.zmq import WireCode, WireError
from tests.conftest import Processes, python
from tests.runtime_bridge.executors import command


@pytest.fixture
def runtime(tmp_path: Path, processes: Processes) -> Any:
    """``runtime(bind=...)``: a ZeroMQ runtime process on the kinematic backend running the test
    executors, which log every start to a file (``runtime.executions()`` counts them across
    the process's lives); its ready line, with ``proc``."""
    log = tmp_path / "executions.log"

    def spawn(bind: str = "tcp://127.0.0.1:*") -> dict[str, Any]:
        proc, ready = processes.ready(
            *python("-m", "runtime_bridge.zmq", "serve", "--backend", "kinematic",
                    "--bind", bind, "--telemetry", "tcp://127.0.0.1:*",
                    "--journal", str(tmp_path / "runtime.db"), "--control-hz", "100",
                    "--executors", "tests.runtime_bridge.executors:factory", "--lease-ms", "0"),
            env={"HBT_EXEC_LOG": str(log)})
        return {**ready, "proc": proc}

    def executions() -> Counter[str]:
        return Counter(log.read_text().split()) if log.exists() else Counter()

    spawn.executions = executions  # type: ignore[attr-defined]
    return spawn


def poll_until(bridge, predicate, timeout_s: float = 10.0):
    seen = []
    deadline = time.monotonic() + timeout_s
    while not predicate(seen):
        seen.extend(bridge.poll().events)
        assert time.monotonic() < deadline, f"not reached; saw {seen[-5:]}"
        time.sleep(0.01)
    return seen


def test_killed_runtime_restarts_without_running_anything_twice(runtime, make_bridge):
    first = runtime()
    bridge = make_bridge(first["bind"], timeout_s=0.3, retries=2, telemetry="")
    long_ = command("long", "wait", steps=1_000_000)
    bridge.dispatch(long_)
    bridge.dispatch(command("short", "wait", steps=1))
    before = poll_until(bridge, lambda s: {("long", EventKind.STARTED),
                                           ("short", EventKind.CONTROL_DONE)}
                        <= {(e.command_id, e.kind) for e in s})
    last_seq = max(e.seq for e in before if e.command_id == "long")

    first["proc"].send_signal(signal.SIGKILL)
    assert first["proc"].wait(10) == -signal.SIGKILL
    with pytest.raises(WireError) as info:
        bridge.dispatch(command("while-dead", "wait", steps=1))
    assert info.value.code == WireCode.OUTCOME_UNKNOWN

    second = runtime(bind=first["bind"])
    assert second["restarted"] == ["long"]
    assert second["boot_id"] != first["boot_id"]
    resent = bridge.dispatch(long_)
    assert (resent.accepted, resent.state, resent.reason, resent.duplicate) == (
        True, RuntimeState.ABORTED, "RUNTIME_RESTARTED", True)
    assert bridge.query("short").state is RuntimeState.CONTROL_DONE
    assert bridge.query("while-dead").state is RuntimeState.NOT_FOUND  # never arrived: no guessing
    status = bridge.query("long")
    assert (status.state, status.events[-1].seq) == (RuntimeState.ABORTED, status.last_seq)
    assert status.last_seq > last_seq
    after = poll_until(bridge, lambda s: any(e.command_id == "long" and
                                             e.kind is EventKind.ABORTED for e in s))
    assert [e.reason for e in after if e.command_id == "long"] == ["RUNTIME_RESTARTED"]
    time.sleep(0.1)  # a few control periods of the new runtime
    assert runtime.executions() == Counter({"long": 1, "short": 1})
