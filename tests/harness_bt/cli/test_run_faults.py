"""Faults as data end to end, on the built-in PyBullet simulator: through the GenManip HTTP
server (the faults ride in its step answers), in-process (``harness run --inject``, and one
``harness eval`` episode into the results store and the report), and a run that asked for a
fault that never fired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.eval.episode import run_episode
from harness_bt.eval.plan import EpisodeSpec, task_digest
from harness_bt.eval.report import build_report
from harness_bt.eval.store import ResultsStore
from tests.harness_bt.cli.test_run import TREES, run_json, server

pytestmark = pytest.mark.slow
HELD = "held_or_regrasp/held_or_regrasp.try/held_or_regrasp.recovery/held_or_regrasp.again"
RAISE = "grasp_or_realign/grasp_or_realign.try/grasp_and_lift/raise"


def test_a_slip_through_the_genmanip_server_is_a_trace_event_and_in_the_json(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "slip.jsonl"
    with server("pick_cube", seed=2, slip=1.0) as url:
        code, report = run_json(capfd, str(TREES / "pick_cube.yaml"), "--sim", url,
                                "--trace", str(trace))
    assert code == 0
    (episode,) = report["episodes"]
    (slip,) = episode["faults"]
    assert (slip["kind"], slip["phase"], slip["node"], slip["skill"]) == (
        "slip", "grasp", RAISE, "lift")
    assert slip["command"].endswith(f"/grasp.1/{RAISE}#1")
    assert slip["details"] == {"object": "red_cube", "steps": 8}
    assert slip["sim_time_s"] == pytest.approx(slip["timestep"] / 30.0, abs=1e-4)
    assert slip["response"]["kind"] == "recovery" and slip["response"]["node"] == HELD
    assert (slip["recovered"], slip["tolerated"]) == (True, False)
    assert episode["faults_note"] is None
    assert report["faults"] == {"slip": {"fired": 1, "recovered": 1, "tolerated": 0,
                                         "episodes": 1}}
    assert (episode["succeeded"], episode["sim_success"]) == (True, True)
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    (fault,) = [e for e in events if e["kind"] == "fault_injected"]
    assert fault["command_id"] == slip["command"] and fault["data"]["node_path"] == RAISE
    # traced as it fired: before the tree judged the cube not held and recovered
    assert kinds.index("fault_injected") < kinds.index("recovery") < kinds.index("run_end")


def test_a_run_that_asked_for_a_fault_that_never_fired_says_so(
        capfd: pytest.CaptureFixture[str]) -> None:
    argv = ["run", str(TREES / "pick_cube.yaml"), "--seed", "5", "--num-steps", "60",
            "--inject", "slip=0.000001"]
    assert main(argv) == 1  # 60 steps are too few to finish: what matters is the fault
    out = capfd.readouterr().out
    assert "episode 0 (seed 5): asked slip=1e-06; none fired in this episode" in out
    assert "faults: none fired" in out
    _, report = run_json(capfd, *argv[1:])
    assert report["episodes"][0]["faults"] == []
    assert report["episodes"][0]["faults_note"] == "asked slip=1e-06; none fired in this episode"
    assert report["faults"] == {}


def test_an_eval_episode_records_its_faults_and_the_report_counts_them(tmp_path: Path) -> None:
    task = TREES / "pick_cube.yaml"
    spec = EpisodeSpec(task="pick_cube", task_file=str(task), digest=task_digest(task),
                       condition="slip=1", seed=2, faults={"slip": 1.0})
    row = run_episode(spec)  # in-process: the built-in simulator's own answers
    (slip,) = row["faults"]
    assert (slip["kind"], slip["node"], slip["recovered"]) == ("slip", RAISE, True)
    assert (row["faults_asked"], row["faults_note"]) == ({"slip": 1.0}, None)
    with ResultsStore.in_dir(tmp_path) as store:
        store.record(row)
        rows = store.rows()
    report = build_report(rows, title="pick_cube under slips")
    (entry,) = report["faults"]
    assert entry["kinds"] == {"slip": {"fired": 1, "recovered": 1, "tolerated": 0,
                                       "episodes": 1}}
    assert entry["line"] == ("pick_cube slip=1: slip: 1 fired in 1 of 1 episodes, 1 recovered, "
                             "0 tolerated")
    assert (row["outcome"], row["sim_success"], row["false_success"]) == (
        "succeeded", True, False)


def test_each_fault_reads_as_one_line_of_the_summary() -> None:
    from harness_bt.cli.summary import fault_text

    slip = {"kind": "slip", "timestep": 84, "sim_time_s": 2.8, "phase": "grasp",
            "node": "grasp/raise", "skill": "lift",
            "response": {"kind": "recovery", "node": "held/again", "after_s": 0.9},
            "recovered": True, "tolerated": False}
    assert fault_text(slip) == ("slip at step 84, 2.80 s in grasp at grasp/raise (lift); then a "
                                "recovery at held/again: recovered")
    nudge = {**slip, "kind": "nudge", "response": None, "recovered": False, "tolerated": True}
    assert fault_text(nudge).endswith("; tolerated (no retry needed)")
    failed = {**nudge, "tolerated": False}
    assert fault_text(failed).endswith("; no retry or recovery followed")
    late = {"kind": "occlude", "timestep": 400, "sim_time_s": None, "after_task": True}
    assert fault_text(late) == "occlude at step 400; after the task ended"
