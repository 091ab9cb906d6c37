"""The evaluation report, read only from the results store: ``DIR/report.json`` and the
self-contained ``DIR/report.html`` (:mod:`harness_bt.eval.html`).

The report holds, per task and condition, the success rate with its Wilson 95 % interval
beside the simulator's, false successes and unknowns; failure reasons by the phase the episode
failed in; the mean simulated time per phase; retries and recoveries; each failed episode with
its replay page (``DIR/replays/*.html``, written from its trace as ``harness replay TRACE
--html`` does); the injected faults per kind (:mod:`harness_bt.eval.faults`); and, for
``harness compare``, the paired comparison.
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

if TYPE_CHECKING:
    from harness_bt.eval.stats import Comparison

__all__ = ["FAILED", "build_report", "episode_list", "write_replays", "write_report"]

#: Outcomes that count as failures in the report (everything but success).
FAILED = ("failed", "aborted", "max_ticks", "worker_crashed", "error")


def episode_list(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``episodes`` of ``--json``: task, seed, condition, outcome, reason, the simulator's
    verdict and whether the harness's success was false."""
    return [{"task": r["task"], "seed": r["seed"], "episode": r["episode"],
             "condition": r["condition"], "outcome": r["outcome"], "reason": r["reason"],
             "sim_success": r["sim_success"], "false_success": bool(r["false_success"])}
            for r in rows]


def _group(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["task"], r["condition"]), []).append(r)
    return out


def _details(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
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
                                  for (p, why), c in sorted(failures.items())],
            "phase_time_s": {p: round(statistics.fmean(v), 3) for p, v in phases.items()},
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


def write_replays(rows: Sequence[Mapping[str, Any]], out_dir: Path) -> dict[str, str]:
    """A replay page per failed (or falsely successful) episode that has a trace: episode key
    -> path relative to ``out_dir``. A trace that cannot be drawn is left without a page."""
    from harness_bt.viz.html import replay_html

    pages: dict[str, str] = {}
    for r in rows:
        trace = r.get("trace")
        wanted = r["outcome"] != "succeeded" or r.get("false_success")
        if not wanted or not trace or not Path(trace).is_file():
            continue
        name = Path(trace).with_suffix(".html").name
        target = out_dir / "replays" / name
        if not target.is_file() or target.stat().st_mtime < Path(trace).stat().st_mtime:
            try:
                html = replay_html(trace, title=f"{r['task']} {r['condition']} "
                                   f"episode {r['episode']}: {r['reason']}")
            except (HarnessError, OSError, ValueError):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(html, encoding="utf-8")
        pages[_key(r)] = str(target.relative_to(out_dir))
    return pages


def _key(r: Mapping[str, Any]) -> str:
    return f"{r['digest']}/{r['condition']}/{r['episode']}"


def build_report(rows: Sequence[Mapping[str, Any]], *, title: str,
                 comparisons: Iterable[Comparison] = (),
                 replays: Mapping[str, str] | None = None,
                 meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report as a JSON-ready dict (see the module docstring)."""
    from harness_bt.eval.stats import summarize

    replays = replays or {}
    failed = [{"task": r["task"], "condition": r["condition"], "episode": r["episode"],
               "seed": r["seed"], "outcome": r["outcome"], "reason": r["reason"],
               "phase": r.get("last_phase"), "sim_success": r["sim_success"],
               "trace": r.get("trace"), "replay": replays.get(_key(r)),
               "error": r.get("error")}
              for r in rows if r["outcome"] != "succeeded"]
    false = [{"task": r["task"], "condition": r["condition"], "episode": r["episode"],
              "trace": r.get("trace"), "replay": replays.get(_key(r))}
             for r in rows if r.get("false_success")]
    return {"title": title, "meta": dict(meta or {}), "summary": summarize(rows),
            "details": _details(rows), "failed_episodes": failed,
            "false_successes": false,
            "comparisons": [c.to_dict() for c in comparisons],
            "faults": fault_summary(rows)}


def write_report(report: Mapping[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """``report.json`` and ``report.html`` in ``out_dir``."""
    from harness_bt.eval.html import report_html

    out_dir.mkdir(parents=True, exist_ok=True)
    js = out_dir / "report.json"
    js.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    page = out_dir / "report.html"
    page.write_text(report_html(report), encoding="utf-8")
    return js, page
