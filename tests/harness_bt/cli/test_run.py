"""``harness run`` end to end: short seeded episodes through the real GenManip HTTP server
(uvicorn on a loopback port, the built-in PyBullet simulator behind it), and once on the
built-in simulator in-process. Every run must report no false success."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness_bt.cli import main
from runtime_bridge.genmanip import ServerThread
from runtime_bridge.sim import FaultRates, SimConfig, create_sim_app, parse_camera_spec

pytestmark = pytest.mark.slow
TREES = Path(__file__).resolve().parents[3] / "trees"
CAMERA = parse_camera_spec("front:256x192:fov=40")


@contextmanager
def server(task: str, *, seed: int = 0, **faults: float) -> Iterator[str]:
    config = SimConfig(scenes=(task,), episodes=1, seed=seed, cameras=(CAMERA,),
                       success_hold_steps=90, faults=FaultRates(**faults))
    with ServerThread(create_sim_app(config)) as running:
        yield running.url


def run_json(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--json"])
    out = capfd.readouterr().out
    return code, json.loads(out)


def test_pick_cube_over_http_succeeds_and_the_simulator_agrees(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    with server("pick_cube", seed=3) as url:
        code, report = run_json(capfd, str(TREES / "pick_cube.yaml"), "--sim", url,
                                "--trace", str(trace))
    assert code == 0
    assert (report["success_rate"], report["sim_success_rate"]) == (1.0, 1.0)
    assert (report["false_success_count"], report["unknown_count"]) == (0, 0)
    (episode,) = report["episodes"]
    assert episode["reason"] == "done" and episode["sim_ended_by"] == "success"
    assert episode["phases_visited"][:4] == ["observe", "approach", "grasp", "evaluate"]
    assert episode["decision_latency_ms"]["n"] >= 3
    assert report["final_metric"] == {"pick_cube": 1.0} and report["final_metric_agrees"]
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    verdicts = [e["data"] for e in events if e["kind"] == "verdict" and e["data"]["final"]]
    assert verdicts[-1]["verdict"] == "SUCCEEDED"
    assert any("rose" in ev for ev in verdicts[-1]["evidence"])
    assert events[-1]["kind"] == "run_end"


def test_pick_and_place_over_http_puts_the_cube_in_the_tray(
        capfd: pytest.CaptureFixture[str]) -> None:
    with server("pick_and_place", seed=1) as url:
        code, report = run_json(capfd, str(TREES / "pick_and_place.yaml"), "--sim", url)
    assert code == 0, report
    (episode,) = report["episodes"]
    assert episode["phases_visited"] == ["observe", "approach", "grasp", "evaluate", "transport",
                                         "place", "done"]
    assert (episode["succeeded"], episode["sim_success"]) == (True, True)


def test_a_slip_is_seen_from_observations_and_recovered_from(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "slip.jsonl"
    with server("pick_cube", seed=2, slip=1.0, occlude=0.1) as url:
        code, report = run_json(capfd, str(TREES / "pick_cube.yaml"), "--sim", url,
                                "--trace", str(trace))
    (episode,) = report["episodes"]
    assert report["false_success_count"] == 0
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    failed = [e["data"] for e in events if e["kind"] == "verdict"
              and e["data"]["verdict"] == "FAILED"]
    assert failed and "red_cube is not between the fingertips" in failed[0]["evidence"]
    assert episode["recoveries"] >= 1
    assert next(e["data"]["node_path"] for e in events if e["kind"] == "recovery").startswith(
        "held_or_regrasp")
    assert code == 0 and episode["succeeded"] and episode["sim_success"]


def test_the_default_starts_the_built_in_simulator_in_process_and_draws_the_run(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    graph = tmp_path / "run.dot"
    code, report = run_json(capfd, str(TREES / "pick_cube.py"), "--seed", "5",
                            "--camera", "front:256x192:fov=40", "--graph", str(graph))
    assert code == 0
    assert report["options"]["sim_url"] is None
    assert report["episodes"][0]["sim_ended_by"] == "success"
    assert report["episodes"][0]["trace"] is None  # the drawing's own trace is not kept
    dot = graph.read_text()
    assert dot.startswith("digraph") and "grasp" in dot
    assert "SUCCEEDED" in dot  # coloured by the run: command states are written on the leaves


def test_the_summary_reads_as_a_table(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(TREES / "pick_cube.yaml"), "--seed", "5", "--num-steps", "60"]) == 1
    out = capfd.readouterr().out
    assert "harness run pick_cube: 1 episode(s)" in out
    assert "success (task's own evaluation): 0.0%" in out
    assert "false successes: 0" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--inject", "slip=1.5"], "--inject item 'slip=1.5' is not NAME=RATE"),
    (["--inject", "wobble=0.2"], "unknown fault(s) wobble"),
    (["--sim", "http://127.0.0.1:9", "--inject", "slip=0.2"],
     "--inject configures the built-in simulator"),
    (["--bridge", "ros"], "unknown bridge 'ros'; known: inproc, ros2, zenoh, zmq"),
    (["--bridge", "zmq"], "NO_RUNTIME_URL: the zmq bridge needs a runtime address"),
    (["--graph", "run.gif"], "--graph run.gif: the suffix must be one of .svg"),
])
def test_mistakes_are_reported_in_one_clear_line(capfd: pytest.CaptureFixture[str],
                                                  args: list[str], message: str) -> None:
    assert main(["run", str(TREES / "pick_cube.yaml"), *args]) == 1
    assert message in capfd.readouterr().err


def test_the_live_view_shows_phase_running_nodes_commands_and_budgets() -> None:
    from rich.console import Console

    from harness_bt.cli.run import _LiveView
    from harness_bt.clock import FakeClock
    from harness_bt.run.runner import TaskRunner
    from harness_bt.testing.example import example_runtime, example_skills, fetch_cup_task

    clock = FakeClock()
    runner = TaskRunner(fetch_cup_task(), bridge=example_runtime(clock), clock=clock,
                        skills=example_skills())
    for _ in range(8):
        runner.tick()
        clock.sleep(0.05)
    console = Console(record=True, width=120)
    console.print(_LiveView(console, 3).render(runner, 1))
    text = console.export_text()
    assert "fetch_cup  episode 2/3" in text and "phase: pick > grasp > watch" in text
    assert "retries 0/6" in text and "time left 59.6 s" in text
    assert "running: " in text and "navigate" in text and "SUCCEEDED" in text
    runner.close()
