"""``harness eval`` and ``harness compare`` from the command line (worker processes running
the rig episode, no simulator): the JSON the issue names, the reports, resuming, the exit
status of a comparison, and every refusal with its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.eval.report import build_report, write_replays, write_report
from harness_bt.testing.example import run_example
from tests.conftest import ROOT

PICK = ROOT / "trees" / "pick_cube.yaml"
QUICK = ["--episode-fn", "harness_bt.testing.eval_rigs:quick_episode"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out = capsys.readouterr()
    return status, out.out, out.err


def test_eval_json_has_the_episodes_and_the_summary_and_writes_the_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["eval", str(PICK), "--episodes", "4", "--seed", "3", "--workers",
                          "2", "--inject", "slip=0.3", "--out", str(tmp_path), "--json",
                          *QUICK], capsys)
    assert status == 0
    data = json.loads(out)
    assert data["episodes"] == [
        {"task": "pick_cube", "seed": s, "episode": str(s), "condition": "slip=0.3",
         "outcome": "succeeded" if s % 3 else "aborted",
         "reason": "done" if s % 3 else "aborted_grasp_failed",
         "phase": "evaluate" if s % 3 else "grasp", "sim_success": bool(s % 3),
         "simulator": "success" if s % 3 else "failure",
         "sim_ended_by": "success" if s % 3 else "timeout", "false_success": False,
         "false_failure": False, "unknown": False, "retries": s % 2, "recoveries": s % 2,
         "wall_s": 0.01, "sim_time_s": 3.0, "trace": None, "trace_status": "not kept",
         "recorded_trace": None, "replay": None, "error": None} for s in (3, 4, 5, 6)]
    assert data["reuse"]["lines"] == [f"results store {tmp_path / 'results.sqlite'}: new"]
    (summary,) = data["summary"]
    assert {k: summary[k] for k in ("task", "condition", "n", "success_rate",
                                    "sim_success_rate", "false_success_count",
                                    "unknown_count")} == {
        "task": "pick_cube", "condition": "slip=0.3", "n": 4, "success_rate": 0.5,
        "sim_success_rate": 0.5, "false_success_count": 0, "unknown_count": 0}
    assert summary["success_interval"] == [0.1500, 0.8500]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"] == data["summary"]
    assert [(f["seed"], f["phase"], f["reason"]) for f in report["failed_episodes"]] == [
        (3, "grasp", "aborted_grasp_failed"), (6, "grasp", "aborted_grasp_failed")]
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") == 3 and "<script" not in page
    assert (tmp_path / "report.txt").read_text().count("aborted_grasp_failed") == 3
    assert "50 % [15, 85]" in page


def test_the_same_command_again_runs_nothing_and_reports_everything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", str(PICK), "--episodes", "3", "--out", str(tmp_path), *QUICK]
    assert run(argv, capsys)[0] == 0
    status, out, _ = run([*argv, "--episodes", "5"], capsys)
    assert status == 0
    assert "ran 2 episode(s) now, 3 recorded before; 0 worker crash(es)" in out
    status, out, _ = run([*argv, "--json"], capsys)
    assert [e["seed"] for e in json.loads(out)["episodes"]] == [0, 1, 2]


def test_compare_json_has_the_paired_counts_and_the_verdict(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    b = tmp_path / "pick_b.yaml"
    b.write_text(PICK.read_text() + "# version B\n")
    (tmp_path / "steps.yaml").write_text((ROOT / "trees" / "steps.yaml").read_text())
    monkeypatch.setenv("HARNESS_EVAL_RIG_WORSE", "pick_b")  # B also fails every even seed
    status, out, _ = run(["compare", str(PICK), str(b), "--episodes", "30", "--workers", "2",
                          "--out", str(tmp_path / "out"), "--json", *QUICK], capsys)
    data = json.loads(out)
    assert {k: data[k] for k in ("n", "a_success", "b_success", "b_only", "a_only")} == {
        "n": 30, "a_success": 20, "b_success": 10, "b_only": 0, "a_only": 10}
    assert data["p_value"] == pytest.approx(2 * 0.5 ** 10)
    assert data["verdict"] == "B worse than A (p = 0.00195)"
    assert status == 1  # the gate: B is worse
    page = (tmp_path / "out" / "report.html").read_text()
    assert "B worse than A (p = 0.00195)" in page
    monkeypatch.delenv("HARNESS_EVAL_RIG_WORSE")
    status, out, _ = run(["compare", str(PICK), str(b), "--episodes", "6", "--out",
                          str(tmp_path / "same"), *QUICK], capsys)
    assert status == 0
    assert "verdict: no significant difference at alpha 0.05 (p = 1)" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "trees/nope.yaml"], "TASK_NOT_FOUND: no task file at 'trees/nope.yaml'"),
    (["eval", str(PICK), "--set", "target"], "INVALID_OPTION: --set 'target' is not "
     "NAME=VALUE"),
    (["eval", str(PICK), "--set", "colour=red"], "colour"),
    (["eval", str(PICK), "--inject", "slip=2"], "INVALID_INJECT: --inject item 'slip=2'"),
    (["eval", str(PICK), "--workers", "0"], "INVALID_OPTION: --workers 0: at least 1"),
    (["eval", str(PICK), "--episodes", "0"], "INVALID_OPTION: --episodes 0: at least 1"),
    (["eval", str(PICK), "--sim", "http://127.0.0.1:9", "--ray"], "--sim with --ray"),
    (["eval", str(PICK), "--sim", "http://127.0.0.1:9", "--inject", "slip=0.1"],
     "UNSUPPORTED_FAULT"),
    (["compare", str(PICK), str(PICK)], "INVALID_OPTION: A and B are the same file"),
    (["compare", str(PICK), "trees/pick.yaml", "--alpha", "2"], "--alpha 2.0: between 0 and 1"),
    (["compare", str(PICK), str(ROOT / "tests" / ".." / "trees" / "pick_cube.yaml")],
     "A and B are the same file"),
])
def test_a_bad_command_is_refused_before_any_worker_starts(
        argv: list[str], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run([*argv, "--out", str(tmp_path)], capsys)
    assert status == 1
    assert message in " ".join(err.split())
    assert not (tmp_path / "results.sqlite").exists() or "--sim" in argv


def test_a_fault_the_simulator_does_not_know_stops_the_evaluation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(["eval", str(PICK), "--episodes", "2", "--inject", "spin=0.2",
                          "--out", str(tmp_path)], capsys)
    assert status == 1
    text = " ".join(err.split())
    assert "EPISODE_ERROR: 1 episode(s) raised; the first: pick_cube episode 0: " \
           "UNKNOWN_FAULT: unknown fault(s) spin" in text


def test_a_corrupt_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "results.sqlite").write_text("garbage " * 500)
    status, _, err = run(["eval", str(PICK), "--out", str(tmp_path), *QUICK], capsys)
    assert status == 1
    assert "STORE_CORRUPT" in err and "move it aside" in " ".join(err.split())


def test_a_failed_episode_links_its_replay_page(tmp_path: Path) -> None:
    trace = tmp_path / "traces" / "fetch.jsonl"
    trace.parent.mkdir()
    run_example("slip", trace=str(trace))
    row = {"task": "fetch", "digest": "d", "condition": "clean", "episode": "7", "seed": 7,
           "outcome": "aborted", "reason": "aborted_grasp_failed", "last_phase": "grasp",
           "sim_success": False, "false_success": False, "unknown": False, "retries": 1,
           "recoveries": 1, "phase_times": {"grasp": 2.0}, "decision_latency_p50_ms": 1.0,
           "wall_s": 1.0, "trace": str(trace), "error": None}
    replays = write_replays([row], tmp_path)
    assert replays == {"fetch/d/clean/7": "replays/fetch.html"}
    assert "<title>fetch clean episode 7: aborted_grasp_failed</title>" in \
        (tmp_path / "replays" / "fetch.html").read_text()
    _, page = write_report(build_report([row], title="t", replays=replays, out_dir=tmp_path),
                           tmp_path)
    assert "<a href='replays/fetch.html'>replay</a>" in page.read_text()
    assert "<a href='traces/fetch.jsonl'>trace</a>" in page.read_text()
