"""``report.html``: the evaluation report as one self-contained page (no script, no network;
the plots are matplotlib SVG inline). Links to replay pages are relative, so the output
directory can be moved or served as it is."""

from __future__ import annotations

import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

from harness_bt.eval.faults import faults_html

__all__ = ["report_html"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;
max-width:1100px;color:#1d2430;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid
#d8dde6;padding-bottom:4px}.meta{color:#5b6578}
table{border-collapse:collapse;margin:8px 0;width:100%}th,td{padding:4px 8px;text-align:left;
border-bottom:1px solid #e6e9ef;vertical-align:top}th{background:#f4f6fa;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b42318;font-weight:600}
.ok{color:#067647}.verdict{font-size:16px;font-weight:600;padding:8px 12px;background:#f4f6fa;
border-left:4px solid #3e63dd;margin:8px 0}.plots{display:flex;flex-wrap:wrap;gap:12px}
.plots svg{max-width:100%;height:auto}
"""


def _e(value: Any) -> str:
    return html.escape("-" if value is None else str(value))


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.0f} %"


def _ci(interval: Sequence[float] | None) -> str:
    return "" if not interval else f" [{100 * interval[0]:.0f}, {100 * interval[1]:.0f}]"


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _plots(report: Mapping[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.fonttype"] = "none"
    summary = report["summary"]
    out = []
    if summary:
        labels = [f"{s['task']}\n{s['condition']}" for s in summary]
        rates = [100 * (s["success_rate"] or 0.0) for s in summary]
        lows = [r - 100 * (s["success_interval"] or [0, 0])[0] for r, s in zip(rates, summary,
                                                                               strict=True)]
        highs = [100 * (s["success_interval"] or [0, 0])[1] - r for r, s in zip(rates, summary,
                                                                                strict=True)]
        sims = [100 * (s["sim_success_rate"] or 0.0) for s in summary]
        fig, ax = plt.subplots(figsize=(max(4.5, 1.6 * len(summary) + 2), 3.2))
        xs = range(len(summary))
        ax.bar([x - 0.18 for x in xs], rates, 0.36, yerr=[lows, highs], capsize=4,
               color="#3e63dd", label="task's own verdict (Wilson 95 %)")
        ax.bar([x + 0.18 for x in xs], sims, 0.36, color="#9aa6bd", label="simulator's metric")
        ax.set_xticks(list(xs), labels, fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel("success %")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_title("success per task and condition", fontsize=10)
        out.append(_svg(fig))
    details = report["details"]
    reasons = sorted({f"{f['phase']}: {f['reason']}" for d in details
                      for f in d["failures_by_phase"]})
    if reasons:
        fig, ax = plt.subplots(figsize=(6, 0.45 * len(reasons) + 1.2))
        left = [0.0] * len(reasons)
        for d in details:
            counts = {f"{f['phase']}: {f['reason']}": f["count"] for f in d["failures_by_phase"]}
            values = [counts.get(r, 0) for r in reasons]
            ax.barh(reasons, values, left=left, label=f"{d['task']} {d['condition']}")
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_xlabel("failed episodes")
        ax.tick_params(axis="y", labelsize=8)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_title("failure reasons by phase", fontsize=10)
        out.append(_svg(fig))
    phases = list(dict.fromkeys(p for d in details for p in d["phase_time_s"]))
    if phases:
        fig, ax = plt.subplots(figsize=(6, 0.4 * len(phases) + 1.2))
        width = 0.8 / max(1, len(details))
        for i, d in enumerate(details):
            ax.barh([k + i * width for k in range(len(phases))],
                    [d["phase_time_s"].get(p, 0.0) for p in phases], width,
                    label=f"{d['task']} {d['condition']}")
        ax.set_yticks([k + 0.4 - width / 2 for k in range(len(phases))], phases, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("mean simulated seconds in the phase")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_title("time per phase", fontsize=10)
        out.append(_svg(fig))
    return out


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td class='n'>{c}</td>" if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def report_html(report: Mapping[str, Any]) -> str:
    """The page (see the module docstring)."""
    parts = [f"<h1>{_e(report['title'])}</h1>"]
    meta = report.get("meta") or {}
    if meta:
        parts.append("<p class='meta'>" + " &middot; ".join(
            f"{_e(k)}: {_e(v)}" for k, v in meta.items()) + "</p>")
    for c in report.get("comparisons", []):
        lo, hi = c["difference_interval"]
        parts.append(
            f"<h2>{_e(c['b'])} (B) against {_e(c['a'])} (A), {_e(c['condition'])}</h2>"
            f"<p class='verdict'>{_e(c['verdict'])}</p>" + _table(
                ("paired episodes", "A succeeded", "B succeeded", "B only", "A only",
                 "exact McNemar p", "difference B - A (95 %)"),
                [(str(c["n"]), str(c["a_success"]), str(c["b_success"]), str(c["b_only"]),
                  str(c["a_only"]), f"{c['p_value']:.3g}",
                  f"{100 * c['difference']:+.0f} pts [{100 * lo:+.0f}, {100 * hi:+.0f}]")],
                {0, 1, 2, 3, 4, 5}))
    parts.append("<h2>Success</h2>")
    rows = [(_e(s["task"]), _e(s["condition"]), str(s["n"]),
             _pct(s["success_rate"]) + _e(_ci(s["success_interval"])),
             _pct(s["sim_success_rate"]),
             f"<span class='{'bad' if s['false_success_count'] else 'ok'}'>"
             f"{s['false_success_count']}</span>",
             str(s["unknown_count"]), str(s["worker_crashed_count"] + s["error_count"]))
            for s in report["summary"]]
    parts.append(_table(("task", "condition", "episodes", "success (Wilson 95 %)",
                         "simulator's metric", "false successes", "unknown",
                         "no result"), rows, {2, 5, 6, 7}))
    parts.append("<div class='plots'>" + "".join(_plots(report)) + "</div>")
    parts.append("<h2>Retries, recoveries, time</h2>")
    parts.append(_table(
        ("task", "condition", "retries", "recoveries", "per episode", "decision latency p50",
         "wall"),
        [(_e(d["task"]), _e(d["condition"]), str(d["retries"]), str(d["recoveries"]),
          f"{d['retries_per_episode']:.2f} / {d['recoveries_per_episode']:.2f}",
          "-" if d["decision_latency_p50_ms"] is None else f"{d['decision_latency_p50_ms']} ms",
          f"{d['wall_s']} s") for d in report["details"]], {2, 3, 4, 5, 6}))
    parts.append(faults_html(report.get("faults", ())))
    failed = report["failed_episodes"]
    parts.append(f"<h2>Failed episodes ({len(failed)})</h2>")
    if failed:
        parts.append(_table(
            ("task", "condition", "episode", "outcome", "reason", "phase", "simulator", "replay"),
            [(_e(f["task"]), _e(f["condition"]), _e(f["episode"]), _e(f["outcome"]),
              _e(f["reason"]) + (f"<br><small>{_e(f['error'])}</small>" if f.get("error")
                                 else ""), _e(f["phase"]),
              _e({True: "success", False: "failed"}.get(f["sim_success"])),
              f"<a href='{html.escape(f['replay'])}'>replay</a>" if f.get("replay") else "-")
             for f in failed], set()))
    false = report.get("false_successes", [])
    if false:
        parts.append(f"<h2 class='bad'>False successes ({len(false)})</h2>")
        parts.append(_table(("task", "condition", "episode", "replay"), [
            (_e(f["task"]), _e(f["condition"]), _e(f["episode"]),
             f"<a href='{html.escape(f['replay'])}'>replay</a>" if f.get("replay") else "-")
            for f in false], set()))
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(report['title'])}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")
