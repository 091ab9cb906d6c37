"""The console's decision latency is the run's: ``harness run`` on the built-in simulator
(behind the GenManip HTTP server on a loopback port) traces every wall-clock decision latency
it reports, and the console's feed, fed that trace, shows the same figures (where it showed
the simulator clock's 0 ms before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.console.feed import Feed
from harness_bt.events import LatencyEvent, parse_event
from harness_bt.trace import TraceReader
from runtime_bridge.genmanip import ServerThread
from runtime_bridge.sim import SimConfig, create_sim_app, parse_camera_spec

pytestmark = pytest.mark.slow
TREES = Path(__file__).resolve().parents[3] / "trees"


def test_the_console_shows_the_decision_latency_the_run_summary_reports(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    config = SimConfig(scenes=("pick_cube",), episodes=1, seed=3, success_hold_steps=90,
                       cameras=(parse_camera_spec("front:256x192:fov=40"),))
    with ServerThread(create_sim_app(config)) as running:
        code = main(["run", str(TREES / "pick_cube.yaml"), "--sim", running.url,
                     "--trace", str(trace), "--json"])
    assert code == 0
    (episode,) = json.loads(capfd.readouterr().out)["episodes"]
    summary = episode["decision_latency_ms"]
    assert summary["n"] >= 3 and summary["p50"] > 0

    reader = TraceReader.open(trace)
    latencies = [e for e in map(parse_event, reader.events) if isinstance(e, LatencyEvent)
                 and e.which == "decision"]
    wall = [e.seconds for e in latencies if e.clock == "wall"]
    assert len(wall) == summary["n"]  # every figure the summary counts is in the trace
    assert {e.clock for e in latencies} == {"run", "wall"}
    assert all(e.seconds == 0 for e in latencies if e.clock == "run")  # the simulator's steps

    feed = Feed(reader.structure)
    for event in reader.events:
        feed.on_event(dict(event))
    feed.drain()
    shown = feed.build()["latency"]
    assert shown["clock"] == "wall" and shown["n"] == summary["n"]
    assert (shown["p50_ms"], shown["p99_ms"]) == (summary["p50"], summary["p99"])
    assert shown["p50_ms"] > 0
