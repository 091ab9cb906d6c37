"""The statistics of an evaluation, from scipy: Wilson score intervals for success rates, and
the exact McNemar test for two task versions run on the same episodes.

McNemar: of ``n`` paired episodes, ``b_only`` succeeded with B alone and ``a_only`` with A
alone (the discordant pairs); under "no difference" each discordant pair is a fair coin, so the
two-sided p-value is scipy's exact binomial test of ``b_only`` successes in
``b_only + a_only`` trials at 0.5. The difference in success rate, ``(b_only - a_only) / n``,
comes with the Wald interval for paired proportions (Agresti, *Categorical Data Analysis*,
10.1): ``se = sqrt(b_only + a_only - (b_only - a_only)^2 / n) / n``.

Two evaluation folders whose seeds differ cannot be paired: :func:`compare_unpaired` tests the
two success rates with Fisher's exact test (``scipy.stats.fisher_exact``) and gives the
difference with Newcombe's hybrid score interval (method 10), built from the two Wilson
intervals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scipy import stats

from harness_bt.eval.listing import false_failure

__all__ = ["Comparison", "Rate", "UnpairedComparison", "compare_paired", "compare_unpaired",
           "summarize", "wilson"]

ALPHA = 0.05


@dataclass(frozen=True, slots=True)
class Rate:
    """``k`` of ``n`` with its Wilson 95 % interval (None for n = 0)."""

    k: int
    n: int
    low: float | None
    high: float | None

    @property
    def rate(self) -> float | None:
        return None if self.n == 0 else self.k / self.n

    def to_dict(self) -> dict[str, Any]:
        return {"rate": _r(self.rate), "k": self.k, "n": self.n,
                "interval": None if self.low is None else [_r(self.low), _r(self.high)]}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def wilson(k: int, n: int, confidence: float = 0.95) -> Rate:
    """``k`` successes of ``n`` with the Wilson score interval (scipy's binomtest)."""
    if n == 0:
        return Rate(0, 0, None, None)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Rate(k, n, float(ci.low), float(ci.high))


def summarize(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per task and condition: ``n``, ``success_rate`` with its interval, the simulator's
    success rate (over the episodes it judged), false successes and false failures, unknowns
    and the episodes
    that produced no result (``worker_crashed``, ``error``)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["task"], row["condition"]), []).append(row)
    out = []
    for (task, condition), group in sorted(groups.items()):
        n = len(group)
        ok = sum(r["outcome"] == "succeeded" for r in group)
        judged = [r["sim_success"] for r in group if r.get("sim_success") is not None]
        rate = wilson(ok, n)
        sim = wilson(sum(bool(v) for v in judged), len(judged))
        out.append({
            "task": task, "condition": condition, "n": n,
            "success_rate": _r(rate.rate),
            "success_interval": None if rate.low is None else [_r(rate.low), _r(rate.high)],
            "sim_success_rate": _r(sim.rate),
            "sim_success_interval": None if sim.low is None else [_r(sim.low), _r(sim.high)],
            "false_success_count": sum(bool(r.get("false_success")) for r in group),
            "false_failure_count": sum(false_failure(r) for r in group),
            "unknown_count": sum(bool(r.get("unknown")) for r in group),
            "worker_crashed_count": sum(r["outcome"] == "worker_crashed" for r in group),
            "error_count": sum(r["outcome"] == "error" for r in group),
        })
    return out


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two task versions on the same episodes (see the module docstring)."""

    a: str
    b: str
    condition: str
    n: int
    a_success: int
    b_success: int
    b_only: int
    a_only: int
    p_value: float
    difference: float
    difference_interval: tuple[float, float]
    alpha: float
    verdict: str
    test: str = "exact McNemar (paired by seed)"

    def to_dict(self) -> dict[str, Any]:
        return _comparison_dict(self)


def _comparison_dict(c: Comparison | UnpairedComparison) -> dict[str, Any]:
    """A comparison as JSON: the difference and its interval rounded, the p-value a float."""
    data = asdict(c)
    data["difference"] = round(c.difference, 4)
    data["difference_interval"] = [round(v, 4) for v in c.difference_interval]
    data["p_value"] = float(c.p_value)
    return data


def compare_paired(a: str, b: str, pairs: Sequence[tuple[bool, bool]], *,
                   condition: str = "clean", alpha: float = ALPHA,
                   confidence: float = 0.95) -> Comparison:
    """The exact McNemar test over ``pairs`` of (A succeeded, B succeeded)."""
    n = len(pairs)
    b_only = sum(1 for x, y in pairs if y and not x)
    a_only = sum(1 for x, y in pairs if x and not y)
    discordant = b_only + a_only
    p = 1.0 if discordant == 0 else float(stats.binomtest(b_only, discordant, 0.5).pvalue)
    diff = 0.0 if n == 0 else (b_only - a_only) / n
    if n == 0:
        interval = (0.0, 0.0)
    else:
        se = math.sqrt(max(discordant - (b_only - a_only) ** 2 / n, 0.0)) / n
        z = float(stats.norm.ppf(0.5 + confidence / 2))
        interval = (max(-1.0, diff - z * se), min(1.0, diff + z * se))
    return Comparison(a=a, b=b, condition=condition, n=n,
                      a_success=sum(1 for x, _ in pairs if x),
                      b_success=sum(1 for _, y in pairs if y), b_only=b_only, a_only=a_only,
                      p_value=p, difference=diff, difference_interval=interval, alpha=alpha,
                      verdict=_verdict(p, alpha, b_only - a_only))


def _verdict(p: float, alpha: float, sign: float) -> str:
    if p < alpha and sign != 0:
        return f"B better than A (p = {p:.3g})" if sign > 0 else f"B worse than A (p = {p:.3g})"
    return f"no significant difference at alpha {alpha:g} (p = {p:.3g})"


@dataclass(frozen=True, slots=True)
class UnpairedComparison:
    """Two success rates from episodes that share no seed (see the module docstring)."""

    a: str
    b: str
    condition: str
    n_a: int
    n_b: int
    a_success: int
    b_success: int
    p_value: float
    difference: float
    difference_interval: tuple[float, float]
    alpha: float
    verdict: str
    test: str = "Fisher exact (unpaired)"

    def to_dict(self) -> dict[str, Any]:
        return _comparison_dict(self)


def compare_unpaired(a: str, b: str, outcomes: tuple[Sequence[bool], Sequence[bool]], *,
                     condition: str = "clean", alpha: float = ALPHA) -> UnpairedComparison:
    """Fisher's exact test of A's successes against B's, and the difference B - A with
    Newcombe's hybrid score interval (95 %)."""
    got_a, got_b = outcomes
    n_a, n_b = len(got_a), len(got_b)
    k_a, k_b = sum(map(bool, got_a)), sum(map(bool, got_b))
    if n_a == 0 or n_b == 0:
        return UnpairedComparison(a, b, condition, n_a, n_b, k_a, k_b, 1.0, 0.0, (0.0, 0.0),
                                  alpha, _verdict(1.0, alpha, 0))
    p = float(stats.fisher_exact([[k_b, n_b - k_b], [k_a, n_a - k_a]]).pvalue)
    ra, rb = wilson(k_a, n_a), wilson(k_b, n_b)
    pa, pb = k_a / n_a, k_b / n_b
    diff = pb - pa
    la, ha, lb, hb = (float(v or 0.0) for v in (ra.low, ra.high, rb.low, rb.high))
    low = diff - math.sqrt((pb - lb) ** 2 + (ha - pa) ** 2)
    high = diff + math.sqrt((hb - pb) ** 2 + (pa - la) ** 2)
    return UnpairedComparison(a, b, condition, n_a, n_b, k_a, k_b, p, diff,
                              (max(-1.0, low), min(1.0, high)), alpha,
                              _verdict(p, alpha, diff))
