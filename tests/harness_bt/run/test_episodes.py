"""The run report: rates, false successes, unknowns, the final-metric cross-check."""

from __future__ import annotations

from typing import Any

import pytest

from harness_bt.cli.run import parse_inject
from harness_bt.run.episodes import EpisodeReport, RunReport, percentile
from harness_bt.runtime.episodes import RunOptions


def episode(index: int, reason: str, sim: bool | None, **kw: Any) -> EpisodeReport:
    base: dict[str, Any] = dict(
        index=index, seed=index, outcome="succeeded" if reason == "done" else "aborted",
        reason=reason, sim_success=sim, sim_ended_by="success" if sim else "timeout",
        retries=0, recoveries=0, unknown_verdicts=0, unknown_commands=0, commands=5,
        sim_steps=100, sim_time_s=3.0, wall_s=4.0, decision_latency_s=(0.008, 0.010),
        phases_visited=("observe",))
    base.update(kw)
    return EpisodeReport(**base)


def test_rates_false_successes_and_unknowns() -> None:
    report = RunReport("pick_cube", (
        episode(0, "done", True), episode(1, "done", False), episode(2, "aborted_unknown", False),
        episode(3, "aborted_grasp", True, unknown_commands=1), episode(4, "aborted_grasp", None),
    ), {"pick_cube": 0.5}, RunOptions(task="pick_cube", episodes=5))
    assert report.success_rate == pytest.approx(0.4)
    assert report.sim_success_rate == pytest.approx(0.5)  # of the 4 judged
    assert report.false_success_count == 1
    assert report.unknown_count == 2
    data = report.to_dict()
    assert data["sim_unjudged_count"] == 1 and data["final_metric_agrees"] is None
    assert [e["false_success"] for e in data["episodes"]] == [False, True, False, False, False]
    assert data["decision_latency_ms"] == {"p50": 8.0, "p99": 10.0, "n": 10}


def test_the_final_metric_is_checked_against_the_episode_verdicts() -> None:
    eps = (episode(0, "done", True), episode(1, "aborted_grasp", False))
    opts = RunOptions(task="pick_cube")
    assert RunReport("pick_cube", eps, {"pick_cube": 0.5}, opts).final_metric_agrees is True
    assert RunReport("pick_cube", eps, {"pick_cube": 1.0}, opts).final_metric_agrees is False
    assert RunReport("pick_cube", eps, None, opts).final_metric_agrees is None


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile([5.0], 99) == 5.0


def test_inject_parses_rates() -> None:
    assert parse_inject("slip=0.3, nudge=0.3,occlude=0.2") == {"slip": 0.3, "nudge": 0.3,
                                                               "occlude": 0.2}
    assert parse_inject(None) == {}
