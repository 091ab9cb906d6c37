"""The report lists every episode (seed, outcome, reason, the simulator's verdict, times, trace
and replay links), orders phases by execution, and counts false failures beside false
successes, in the text, the JSON and the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from harness_bt.eval.episode import row_from_report
from harness_bt.eval.listing import episode_entry, phase_order
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.eval.report import build_report, write_report
from harness_bt.eval.stats import compare_unpaired, summarize
from harness_bt.eval.store import ResultsStore
from harness_bt.run.episodes import EpisodeReport
from harness_bt.testing.eval_rigs import quick_episode


def row(seed: int, **changes: Any) -> dict[str, Any]:
    spec = EpisodeSpec(task="pick", task_file="pick.yaml", digest="d" * 64, condition="clean",
                       seed=seed)
    return {**quick_episode(spec), **changes}


def test_a_failure_the_simulator_judged_a_success_is_a_false_failure() -> None:
    rows = [row(1), row(2, outcome="aborted", reason="aborted_grasp_failed", sim_success=True),
            row(3, outcome="failed", reason="unknown", unknown=True, sim_success=True),
            row(4, false_success=True, sim_success=False),
            row(5, outcome="worker_crashed", reason="worker_crashed", sim_success=None)]
    (summary,) = summarize(rows)
    assert (summary["false_success_count"], summary["false_failure_count"],
            summary["unknown_count"]) == (1, 2, 1)
    entries = [episode_entry(r) for r in rows]
    assert [(e["seed"], e["false_success"], e["false_failure"], e["simulator"])
            for e in entries] == [(1, False, False, "success"), (2, False, True, "success"),
                                  (3, False, True, "success"), (4, True, False, "failure"),
                                  (5, False, False, "not judged")]


def test_phases_are_ordered_by_first_entry_across_episodes_not_by_name() -> None:
    rows = [row(1, phase_times={"observe": 0.1, "approach": 1.0, "grasp": 2.0,
                                "evaluate": 0.1}),
            row(2, phase_times={"observe": 0.1, "approach": 1.0, "grasp": 2.0,
                                "regrasp": 1.5, "evaluate": 0.1}),
            row(3, phase_times={"observe": 0.1, "approach": 1.0}, last_phase="back_off")]
    assert phase_order(rows) == ["observe", "approach", "back_off", "grasp", "regrasp",
                                 "evaluate"]
    report = build_report(rows, title="t")
    (details,) = report["details"]
    assert list(details["phase_time_s"]) == ["observe", "approach", "grasp", "regrasp",
                                             "evaluate"]
    assert report["phase_order"] == phase_order(rows)


def test_an_episodes_row_keys_its_phase_times_in_the_order_it_entered_the_phases() -> None:
    report = EpisodeReport(
        index=0, seed=1, outcome="succeeded", reason="done", sim_success=True,
        sim_ended_by="success", retries=0, recoveries=1, unknown_verdicts=0,
        unknown_commands=0, commands=5, sim_steps=200, sim_time_s=4.0, wall_s=2.0,
        decision_latency_s=(0.001,), details={"final_state": "done"},
        phases_visited=("observe", "approach", "grasp", "evaluate", "grasp", "evaluate",
                        "done"))
    spec = EpisodeSpec(task="pick", task_file="pick.yaml", digest="d" * 64,
                       condition="clean", seed=1)
    durations = {"approach": 1.0, "evaluate": 0.5, "grasp": 2.0, "observe": 0.1, "total": 4.0}
    row_ = row_from_report(spec, "1", report, durations)
    assert list(row_["phase_times"]) == ["observe", "approach", "grasp", "evaluate"]
    assert row_["last_phase"] == "evaluate"


def test_the_store_keeps_each_episodes_phases_in_the_order_it_entered_them(
        tmp_path: Path) -> None:
    times = {"observe": 0.1, "approach": 1.0, "grasp": 2.0, "evaluate": 0.1}
    with ResultsStore.in_dir(tmp_path, clock=lambda: 0.0) as store:
        store.record(row(1, phase_times=times))
        (stored,) = store.rows()
    assert list(stored["phase_times"]) == ["observe", "approach", "grasp", "evaluate"]


def test_every_episode_is_listed_with_its_trace_link_or_why_it_has_none(
        tmp_path: Path) -> None:
    kept = tmp_path / "traces" / "pick.1.jsonl"
    kept.parent.mkdir()
    kept.write_text("{}\n")
    rows = [row(1, trace=str(kept)), row(2, trace=str(tmp_path / "traces" / "gone.jsonl")),
            row(3, outcome="aborted", reason="aborted_grasp_failed", sim_success=False)]
    report = build_report(rows, title="t", out_dir=tmp_path)
    assert [(e["seed"], e["trace"], e["trace_status"], e["recorded_trace"])
            for e in report["episodes"]] == [
        (1, "traces/pick.1.jsonl", "kept", None),
        (2, None, "missing", str(tmp_path / "traces" / "gone.jsonl")),
        (3, None, "not kept", None)]
    js, page = write_report(report, tmp_path)
    assert json.loads(js.read_text())["episodes"] == report["episodes"]
    text = (tmp_path / "report.txt").read_text()
    lines = text.splitlines()
    episodes = lines[lines.index("episodes (3):") + 2:]
    assert [line.split()[:6] for line in episodes] == [
        ["pick", "clean", "1", "succeeded", "done", "evaluate"],
        ["pick", "clean", "2", "succeeded", "done", "evaluate"],
        ["pick", "clean", "3", "aborted", "aborted_grasp_failed", "grasp"]]
    assert episodes[0].split()[-2:] == ["traces/pick.1.jsonl", "-"]
    assert episodes[1].split()[-2:] == ["missing", "-"]
    assert episodes[2].split()[-3:] == ["not", "kept", "-"]
    html = page.read_text()
    assert "<a href='traces/pick.1.jsonl'>trace</a>" in html
    assert "1 failed (red), 0 false success(es) and 0 false failure(s)" in html
    assert "1 trace file(s) missing" in html
    assert html.count("<tr class='fail'>") == 1 and html.count("<tr class='pass'>") == 2


def test_a_trace_link_is_quoted_as_a_url(tmp_path: Path) -> None:
    trace = tmp_path / "run #2" / "pick.1.jsonl"
    trace.parent.mkdir()
    trace.write_text("{}\n")
    report = build_report([row(1, trace=str(trace))], title="t", out_dir=tmp_path)
    assert report["episodes"][0]["trace"] == "run #2/pick.1.jsonl"
    _, page = write_report(report, tmp_path)
    assert "<a href='run%20%232/pick.1.jsonl'>trace</a>" in page.read_text()


def test_the_page_marks_false_verdicts_and_counts_them_in_the_summary(tmp_path: Path) -> None:
    rows = [row(1), row(2, outcome="aborted", reason="aborted_grasp_failed", sim_success=True),
            row(4, false_success=True, sim_success=False)]
    report = build_report(rows, title="t", out_dir=tmp_path)
    assert [e["seed"] for e in report["false_failures"]] == [2]
    assert [e["seed"] for e in report["false_successes"]] == [4]
    write_report(report, tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert html.count("<tr class='fail false'>") == 1
    assert html.count("<tr class='pass false'>") == 1
    assert "<th>false successes</th><th>false failures</th>" in html
    assert "<td class='n bad false-successes'>1</td>" in html  # a count that calls for a look
    assert "<td class='n bad false-failures'>1</td><td class='n unknown'>0</td>" in html
    assert "<td class='false-verdict'>false failure</td>" in html
    text = (tmp_path / "report.txt").read_text()
    header = next(line for line in text.splitlines() if line.startswith("task  condition"))
    assert "false successes  false failures" in header


def test_unpaired_comparison_is_fishers_exact_test_with_newcombes_interval() -> None:
    c = compare_unpaired("a", "b", ([True] * 48 + [False] * 32, [True] * 56 + [False] * 14))
    assert c.p_value == pytest.approx(stats.fisher_exact([[56, 14], [48, 32]]).pvalue)
    assert (c.n_a, c.n_b, c.a_success, c.b_success) == (80, 70, 48, 56)
    assert c.difference == pytest.approx(0.2)
    # Newcombe (1998), Stat. Med. 17:873, example (a), method 10: 0.0524 to 0.3339
    assert c.difference_interval == pytest.approx((0.0524, 0.3339), abs=1e-4)
    assert c.verdict == "B better than A (p = 0.0125)"
    empty = compare_unpaired("a", "b", ([], [True]))
    assert (empty.p_value, empty.verdict) == (1.0, "no significant difference at alpha 0.05 "
                                                   "(p = 1)")
