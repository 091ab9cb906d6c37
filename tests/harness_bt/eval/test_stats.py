"""Wilson intervals and the exact McNemar test agree with scipy on constructed data."""

from __future__ import annotations

import pytest
from scipy import stats

from harness_bt.eval.stats import compare_paired, summarize, wilson


def pairs(both: int, b_only: int, a_only: int, neither: int) -> list[tuple[bool, bool]]:
    return ([(True, True)] * both + [(False, True)] * b_only + [(True, False)] * a_only
            + [(False, False)] * neither)


def test_wilson_interval_is_scipys() -> None:
    ci = stats.binomtest(17, 20).proportion_ci(confidence_level=0.95, method="wilson")
    rate = wilson(17, 20)
    assert (rate.k, rate.n, rate.rate) == (17, 20, 0.85)
    assert (rate.low, rate.high) == pytest.approx((ci.low, ci.high))
    assert rate.low == pytest.approx(0.6396, abs=1e-4)


def test_wilson_of_no_episode_is_no_interval() -> None:
    rate = wilson(0, 0)
    assert (rate.rate, rate.low, rate.high) == (None, None, None)
    assert rate.to_dict() == {"rate": None, "k": 0, "n": 0, "interval": None}


@pytest.mark.parametrize(("both", "b_only", "a_only", "neither"), [
    (20, 1, 12, 7), (10, 9, 1, 20), (15, 3, 3, 19), (5, 0, 6, 29), (30, 2, 0, 8)])
def test_mcnemar_p_value_is_scipys_exact_binomial_test_of_the_discordant_pairs(
        both: int, b_only: int, a_only: int, neither: int) -> None:
    c = compare_paired("a", "b", pairs(both, b_only, a_only, neither))
    expected = stats.binomtest(b_only, b_only + a_only, 0.5, alternative="two-sided").pvalue
    assert c.p_value == pytest.approx(expected)
    assert (c.n, c.a_success, c.b_success, c.b_only, c.a_only) == (
        both + b_only + a_only + neither, both + a_only, both + b_only, b_only, a_only)


def test_verdicts_name_the_better_version_only_when_significant() -> None:
    worse = compare_paired("a", "b", pairs(20, 1, 12, 7))
    better = compare_paired("a", "b", pairs(10, 9, 1, 20))
    tie = compare_paired("a", "b", pairs(15, 3, 3, 19))
    assert worse.verdict == f"B worse than A (p = {worse.p_value:.3g})"
    assert worse.p_value < 0.05
    assert better.verdict == f"B better than A (p = {better.p_value:.3g})"
    assert tie.verdict == "no significant difference at alpha 0.05 (p = 1)"


def test_difference_interval_is_the_paired_wald_interval() -> None:
    c = compare_paired("a", "b", pairs(20, 1, 12, 7))
    n, b, a = 40, 1, 12
    se = ((b + a) - (b - a) ** 2 / n) ** 0.5 / n
    assert c.difference == pytest.approx((b - a) / n)
    assert c.difference_interval == pytest.approx(((b - a) / n - 1.959964 * se,
                                                   (b - a) / n + 1.959964 * se))
    assert c.difference_interval[1] < 0


def test_no_discordant_pair_is_no_difference() -> None:
    c = compare_paired("a", "b", pairs(3, 0, 0, 2))
    assert (c.p_value, c.difference, c.difference_interval) == (1.0, 0.0, (0.0, 0.0))
    assert compare_paired("a", "b", []).verdict.startswith("no significant difference")


def test_alpha_is_the_callers() -> None:
    c = compare_paired("a", "b", pairs(10, 6, 1, 3), alpha=0.2)
    assert c.p_value < 0.2
    assert c.verdict.startswith("B better than A")
    assert compare_paired("a", "b", pairs(10, 6, 1, 3), alpha=0.01).verdict.startswith("no ")


def test_summary_counts_per_task_and_condition() -> None:
    def row(task: str, cond: str, outcome: str, sim: bool | None, **kw: object) -> dict:
        return {"task": task, "condition": cond, "outcome": outcome, "sim_success": sim,
                "false_success": kw.get("false", False), "unknown": kw.get("unknown", False)}

    rows = [row("pick", "clean", "succeeded", True), row("pick", "clean", "aborted", False),
            row("pick", "clean", "succeeded", False, false=True),
            row("pick", "clean", "worker_crashed", None),
            row("pick", "slip=0.3", "aborted", None, unknown=True)]
    out = summarize(rows)
    assert [(s["task"], s["condition"], s["n"]) for s in out] == [
        ("pick", "clean", 4), ("pick", "slip=0.3", 1)]
    clean = out[0]
    assert clean["success_rate"] == 0.5
    assert clean["success_interval"] == [round(wilson(2, 4).low or 0, 4),
                                         round(wilson(2, 4).high or 0, 4)]
    assert clean["sim_success_rate"] == round(1 / 3, 4)
    assert (clean["false_success_count"], clean["unknown_count"],
            clean["worker_crashed_count"]) == (1, 0, 1)
    assert out[1]["sim_success_rate"] is None
    assert out[1]["unknown_count"] == 1
