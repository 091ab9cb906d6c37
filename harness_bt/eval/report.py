"""The evaluation report, read only from the results store: ``DIR/report.json``, the
self-contained ``DIR/report.html`` (:mod:`harness_bt.eval.html`) and ``DIR/report.txt``
(:mod:`harness_bt.eval.text`, what the terminal shows).

The report holds, per task and condition, the success rate with its Wilson 95 % interval
beside the simulator's, false successes and false failures, unknowns; failure reasons by the
phase the episode failed in; the mean simulated time per phase, phases in execution order;
retries and recoveries; every episode (:mod:`harness_bt.eval.listing`) with links to its trace
and, when it failed or was judged falsely, its replay page (``DIR/replays/*.html``, written
from its trace as ``harness replay TRACE --html`` does); and, for ``harness compare``, the
comparison; the injected faults per kind (:mod:`harness_bt.eval.faults`). ``sections`` adds
named parts (the reuse of a store, a comparison's notes).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_bt.errors import HarnessError
from harness_bt.eval.faults import fault_summary
from harness_bt.eval.listing import (
    episode_entry,
    episode_key,
    false_failure,
    phase_order,
)

if TYPE_CHECKING:
    from harness_bt.eval.stats import Comparison, UnpairedComparison

__all__ = ["FAILED", "build_report", "episode_list", "write_replays", "write_report"]

#: Outcomes that count as failures in the report (everything but success).
FAILED = ("failed", "aborted", "max_ticks", "worker_crashed", "error")


def episode_list(rows: Iterable[Mapping[str, Any]], *, out_dir: Path | None = None
                 ) -> list[dict[str, Any]]:
    """Every episode of ``rows`` as the report lists it (:func:`episode_entry`)."""
    return [episode_entry(r, out_dir=out_dir) for r in rows]


def _group(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["task"], r["condition"]), []).append(r)
    return out


def _details(rows: Sequence[Mapping[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    rank = {p: i for i, p in enumerate(order)}
    out = []
    for (task, condition), group in sorted(_group(rows).items()):
        failures: Counter[tuple[str, str]] = Counter(
            (r.get("last_phase") or "-", r["reason"]) for r in group
            if r["outcome"] != "succeeded")
        phases: dict[str, list[float]] = {}
        for r in group:
            for phase, secs in (r.get("phase_times") or {}).items():
                phases.setdefault(phase, []).append(float(secs))
        p50 = [r["decision_latency_p50_ms"] for r in group
               if r.get("decision_latency_p50_ms") is not None]
        out.append({
            "task": task, "condition": condition,
            "failures_by_phase": [{"phase": p, "reason": why, "count": c}
                                  for (p, why), c in sorted(
                                      failures.items(),
                                      key=lambda f: (rank.get(f[0][0], len(rank)), f[0]))],
            "phase_time_s": {p: round(statistics.fmean(phases[p]), 3) for p in order
                             if p in phases},
            "retries": sum(int(r.get("retries") or 0) for r in group),
            "recoveries": sum(int(r.get("recoveries") or 0) for r in group),
            "retries_per_episode": round(statistics.fmean(
                [int(r.get("retries") or 0) for r in group]), 3),
            "recoveries_per_episode": round(statistics.fmean(
                [int(r.get("recoveries") or 0) for r in group]), 3),
            "decision_latency_p50_ms": round(statistics.median(p50), 3) if p50 else None,
            "wall_s": round(sum(float(r.get("wall_s") or 0.0) for r in group), 1),
        })
    return out


def write_replays(rows: Sequence[Mapping[str, Any]], out_dir: Path, *,
                  subdir: str = "replays") -> dict[str, str]:
    """A replay page (in ``out_dir/subdir``) per failed or falsely judged episode that has a
    trace: episode key -> path relative to ``out_dir``. A trace that cannot be drawn is left
    without a page."""
    from harness_bt.viz.html import replay_html

    pages: dict[str, str] = {}
    for r in rows:
        trace = r.get("trace")
        wanted = r["outcome"] != "succeeded" or r.get("false_success") or false_failure(r)
        if not wanted or not trace or not Path(trace).is_file():
            continue
        name = Path(trace).with_suffix(".html").name
        target = out_dir / subdir / name
        if not target.is_file() or target.stat().st_mtime < Path(trace).stat().st_mtime:
            try:
                html = replay_html(trace, title=f"{r['task']} {r['condition']} "
                                   f"episode {r['episode']}: {r['reason']}")
            except (HarnessError, OSError, ValueError):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(html, encoding="utf-8")
        pages[episode_key(r)] = target.relative_to(out_dir).as_posix()
    return pages


def build_report(rows: Sequence[Mapping[str, Any]], *, title: str,
                 comparisons: Iterable[Comparison | UnpairedComparison] = (),
                 replays: Mapping[str, str] | None = None,
                 meta: Mapping[str, Any] | None = None, out_dir: Path | None = None,
                 sections: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report as a JSON-ready dict (see the module docstring). ``out_dir``: where the
    report goes (trace links are relative to it)."""
    from harness_bt.eval.stats import summarize

    replays = replays or {}
    order = phase_order(rows)
    episodes = [episode_entry(r, out_dir=out_dir, replay=replays.get(episode_key(r)))
                for r in rows]
    return {"title": title, "meta": dict(meta or {}), **dict(sections or {}),
            "summary": summarize(rows), "phase_order": order, "details": _details(rows, order),
            "episodes": episodes,
            "failed_episodes": [e for e in episodes if e["outcome"] != "succeeded"],
            "false_successes": [e for e in episodes if e["false_success"]],
            "false_failures": [e for e in episodes if e["false_failure"]],
            "comparisons": [c.to_dict() for c in comparisons],
            "faults": fault_summary(rows)}


def write_report(report: Mapping[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """``report.json``, ``report.html`` and ``report.txt`` in ``out_dir``; the first two
    returned."""
    from harness_bt.eval.html import report_html
    from harness_bt.eval.text import report_text

    out_dir.mkdir(parents=True, exist_ok=True)
    js = out_dir / "report.json"
    js.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    page = out_dir / "report.html"
    page.write_text(report_html(report), encoding="utf-8")
    (out_dir / "report.txt").write_text(report_text(report), encoding="utf-8")
    return js, page
