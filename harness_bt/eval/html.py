"""``report.html``: the evaluation report as one self-contained page (no script, no network;
the plots are matplotlib SVG inline). Links to traces and replay pages are relative, so the
output directory can be moved or served as it is.

Every episode is a row of one table (the columns of :mod:`harness_bt.eval.columns`), under a
heading row per task and condition: a failed episode's row is red, a false success or false
failure amber, and two switches (CSS only) show only the failures or only the false
verdicts."""

from __future__ import annotations

import html
import io
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from harness_bt.eval.columns import EPISODE_COLUMNS, SUMMARY_COLUMNS, Column
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
.plots svg{max-width:100%;height:auto}.notes li{color:#3a4356}
table.episodes{font-size:13px}table.episodes th{position:sticky;top:0}
table.episodes tr:nth-child(even) td{background:#fafbfd}
table.episodes tr.fail td{background:#fdecea}table.episodes tr.fail td.outcome{color:#b42318;
font-weight:600}table.episodes tr.false td{background:#fff4d6}
table.episodes tr.false td.false-verdict{color:#93370d;font-weight:600}
.switch{margin:6px 16px 6px 0;display:inline-block;color:#3a4356}
table.episodes tr.group th{background:#e9edf5;font-size:13px}table.compact{width:auto}
table.compact td,table.compact th{padding-right:24px}
#only-failed:checked~table.episodes tr.pass{display:none}
#only-false:checked~table.episodes tr.pass:not(.false),
#only-false:checked~table.episodes tr.fail:not(.false){display:none}
"""


def _e(value: Any) -> str:
    return html.escape("-" if value is None else str(value))


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
    phases = list(report.get("phase_order") or dict.fromkeys(
        p for d in details for p in d["phase_time_s"]))
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
        ax.set_title("time per phase, in execution order", fontsize=10)
        out.append(_svg(fig))
    return out


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int],
           css: str = "") -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td class='n'>{c}</td>" if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    cls = f" class='{css}'" if css else ""
    return f"<table{cls}><tr>{th}</tr>{body}</table>"


def _cell(column: Column, row: Mapping[str, Any]) -> str:
    if column.link is not None and row.get(column.link):
        href = html.escape(quote(str(row[column.link])))  # a relative path, as a URL
        return f"<a href='{href}'>{_e(column.head)}</a>"
    return _e(column.cell(row))


def _rows(columns: Sequence[Column], rows: Sequence[Mapping[str, Any]],
          css: Any = None, *, head: bool = True) -> str:
    """A table's rows of ``columns`` (after a heading row, when ``head``); ``css(row)`` gives
    a row's class."""
    heading = "".join(f"<th>{_e(c.head)}</th>" for c in columns)
    body = []
    for row in rows:
        cls = f" class='{css(row)}'" if css is not None else ""
        cells = "".join(
            f"<td class='{'n ' if c.numeric else ''}{'bad ' if c.alert and c.alert(row) else ''}"
            f"{c.head.replace(' ', '-')}'>{_cell(c, row)}</td>" for c in columns)
        body.append(f"<tr{cls}>{cells}</tr>")
    return (f"<tr class='head'>{heading}</tr>" if head else "") + "".join(body)


def _episode_class(entry: Mapping[str, Any]) -> str:
    classes = ["pass" if entry["outcome"] == "succeeded" else "fail"]
    if entry["false_success"] or entry["false_failure"]:
        classes.append("false")
    return " ".join(classes)


def _comparison(c: Mapping[str, Any]) -> str:
    lo, hi = c["difference_interval"]
    diff = f"{100 * c['difference']:+.0f} pts [{100 * lo:+.0f}, {100 * hi:+.0f}]"
    title = (f"<h2>{_e(c['b'])} (B) against {_e(c['a'])} (A), {_e(c['condition'])}</h2>"
             f"<p class='verdict'>{_e(c['verdict'])}</p>")
    if "n_a" in c:
        return title + _table(
            ("episodes of A", "of B", "A succeeded", "B succeeded", "Fisher exact p (unpaired)",
             "difference B - A (95 %)"),
            [(str(c["n_a"]), str(c["n_b"]), str(c["a_success"]), str(c["b_success"]),
              f"{c['p_value']:.3g}", diff)], {0, 1, 2, 3, 4})
    return title + _table(
        ("paired episodes", "A succeeded", "B succeeded", "B only", "A only",
         "exact McNemar p", "difference B - A (95 %)"),
        [(str(c["n"]), str(c["a_success"]), str(c["b_success"]), str(c["b_only"]),
          str(c["a_only"]), f"{c['p_value']:.3g}", diff)], {0, 1, 2, 3, 4, 5})


def _grouped(episodes: Sequence[Mapping[str, Any]]) -> str:
    """The episode rows under a heading row per task and condition (the two columns the
    heading says are left out)."""
    columns = [c for c in EPISODE_COLUMNS if c.head not in ("task", "condition")]
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for e in episodes:
        groups.setdefault((e["task"], e["condition"]), []).append(e)
    out = ["<tr class='head'>" + "".join(f"<th>{_e(c.head)}</th>" for c in columns) + "</tr>"]
    for (task, condition), group in groups.items():
        failed = sum(e["outcome"] != "succeeded" for e in group)
        out.append(f"<tr class='group'><th colspan='{len(columns)}'>{_e(task)} &middot; "
                   f"{_e(condition)}: {len(group)} episodes, {failed} failed</th></tr>")
        out.append(_rows(columns, group, _episode_class, head=False))
    return "".join(out)


def _episodes(report: Mapping[str, Any]) -> list[str]:
    episodes = report["episodes"]
    failed = sum(e["outcome"] != "succeeded" for e in episodes)
    false_s = sum(e["false_success"] for e in episodes)
    false_f = sum(e["false_failure"] for e in episodes)
    missing = sum(e["trace_status"] == "missing" for e in episodes)
    parts = [f"<h2>Episodes ({len(episodes)})</h2>",
             f"<p>{failed} failed (red), {false_s} false success(es) and {false_f} false "
             "failure(s) (amber: the simulator judged otherwise)"
             + (f"; {missing} trace file(s) missing" if missing else "") + ".</p>",
             "<input type='checkbox' id='only-failed'><label class='switch' "
             "for='only-failed'>failures only</label>",
             "<input type='checkbox' id='only-false'><label class='switch' "
             "for='only-false'>false verdicts only</label>",
             "<table class='episodes'>" + _grouped(episodes) + "</table>"]
    errors = [e for e in episodes if e.get("error")]
    if errors:
        parts.append("<h2>Errors</h2><ul class='notes'>" + "".join(
            f"<li>{_e(e['task'])} {_e(e['condition'])} episode {_e(e['episode'])}: "
            f"{_e(e['error'])}</li>" for e in errors) + "</ul>")
    return parts


def report_html(report: Mapping[str, Any]) -> str:
    """The page (see the module docstring)."""
    parts = [f"<h1>{_e(report['title'])}</h1>"]
    meta = report.get("meta") or {}
    if meta:
        parts.append("<p class='meta'>" + " &middot; ".join(
            f"{_e(k)}: {_e(v)}" for k, v in meta.items()) + "</p>")
    said = [*((report.get("reuse") or {}).get("lines") or ()), *(report.get("notes") or ())]
    if said:
        parts.append("<ul class='notes'>" + "".join(f"<li>{_e(n)}</li>" for n in said)
                     + "</ul>")
    parts.extend(_comparison(c) for c in report.get("comparisons", []))
    parts.append("<h2>Success</h2>")
    parts.append("<table>" + _rows(SUMMARY_COLUMNS, report["summary"]) + "</table>")
    parts.append("<div class='plots'>" + "".join(_plots(report)) + "</div>")
    order, details = report.get("phase_order") or [], report["details"]
    if order:
        parts.append("<h2>Mean simulated seconds per phase, in execution order</h2>")
        parts.append(_table(("phase", *(f"{d['task']} {d['condition']}" for d in details)), [
            (_e(p), *("-" if d["phase_time_s"].get(p) is None
                      else f"{d['phase_time_s'][p]:.2f}" for d in details)) for p in order],
            set(range(1, len(details) + 1)), "compact"))
    parts.append("<h2>Retries, recoveries, time</h2>")
    parts.append(_table(
        ("task", "condition", "retries", "recoveries", "per episode", "decision latency p50",
         "wall"),
        [(_e(d["task"]), _e(d["condition"]), str(d["retries"]), str(d["recoveries"]),
          f"{d['retries_per_episode']:.2f} / {d['recoveries_per_episode']:.2f}",
          "-" if d["decision_latency_p50_ms"] is None else f"{d['decision_latency_p50_ms']} ms",
          f"{d['wall_s']} s") for d in report["details"]], {2, 3, 4, 5, 6}))
    parts.append(faults_html(report.get("faults", ())))
    parts.extend(_episodes(report))
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(report['title'])}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")
