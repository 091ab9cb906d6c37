"""A run of the running example watched by a live console: the run ticks on its own thread
(as ``harness run`` does) on a fake clock, against the fake runtime with a painted camera;
the grasp hangs (it runs until stopped), so the run lasts until the test stops it. ``gate``
lets the test hold the run between two ticks, so what it checks never races the run."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness_bt import FakeClock, TaskRunner
from harness_bt.console import Console, ConsoleSettings, Request
from harness_bt.run.settings import RunParts
from harness_bt.testing import example
from harness_bt.testing.fake_runtime import Script
from harness_bt.world import scripted_perception
from tests.harness_bt.conftest import _Painted


@dataclass
class LiveRun:
    console: Console
    runner: TaskRunner
    thread: threading.Thread
    gate: threading.Event = field(default_factory=threading.Event)

    def ws(self, **kw: Any) -> Any:
        import websocket

        return websocket.create_connection(f"ws://127.0.0.1:{self.console.port}/ws",
                                           timeout=30, **kw)

    def control(self, ws: Any, op: str, **fields: Any) -> None:
        ws.send(json.dumps({"op": op, "token": self.console.token, **fields}))


def recv(ws: Any) -> dict[str, Any]:
    """The next text message (binary camera images skipped)."""
    while True:
        message = ws.recv()
        if isinstance(message, str):
            return dict(json.loads(message))


def until(ws: Any, test: Any) -> dict[str, Any]:
    """Read messages until one passes ``test``; returns it."""
    while True:
        m = recv(ws)
        if test(m):
            return m


@pytest.fixture
def live() -> Iterator[LiveRun]:
    clock = FakeClock()
    runtime = example.example_runtime(clock, grasps=[Script(outcome="hang")])
    task = example.fetch_cup_task()
    console = Console(task.structure(), ConsoleSettings(start_paused=True))
    console.start()
    runner = TaskRunner(
        task,
        bridge=_Painted(runtime),
        clock=clock,
        skills=example.example_skills(),
        run_id="live",
        parts=RunParts(perception=console.perception(scripted_perception)),
    )
    console.attach(runner, 0)
    gate = threading.Event()
    gate.set()

    def drive() -> None:
        while runner.phase != "finished":
            gate.wait()
            runner.tick()
            console.ticked(runner)
            clock.advance(runner.tick_period_s)

    thread = threading.Thread(target=drive, name="run")
    thread.start()
    run = LiveRun(console, runner, thread, gate)
    try:
        yield run
    finally:
        gate.set()
        if runner.phase == "running":
            console.control.submit(Request("stop", who={"client": "test teardown"}))
        console.close()
        thread.join(30)
        runner.close()
