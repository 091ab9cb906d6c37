"""The report as plain text: what ``harness eval`` and ``harness compare`` print, and
``DIR/report.txt``. The same sections as the page (:mod:`harness_bt.eval.html`), the same
columns (:mod:`harness_bt.eval.columns`), every episode on a line of its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness_bt.eval.columns import EPISODE_COLUMNS, SUMMARY_COLUMNS, Column

__all__ = ["comparison_lines", "report_text", "table"]


def table(columns: Sequence[Column], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Aligned lines: the headings, then a line per row."""
    cells = [[c.cell(r) for c in columns] for r in rows]
    widths = [max([len(c.head)] + [len(line[i]) for line in cells])
              for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if c.numeric else v.ljust(w)
                         for v, w, c in zip(values, widths, columns, strict=True)).rstrip()

    return [line([c.head for c in columns]), *(line(v) for v in cells)]


def comparison_lines(c: Mapping[str, Any]) -> list[str]:
    """A comparison in two lines: the counts and the test, then the verdict."""
    lo, hi = c["difference_interval"]
    diff = (f"difference B - A {100 * c['difference']:+.1f} pts "
            f"(95 % CI {100 * lo:+.1f} to {100 * hi:+.1f})")
    if "n_a" in c:
        counts = (f"{c['n_a']} episodes of A and {c['n_b']} of B, unpaired "
                  f"({c['condition']}): A {c['a']} {c['a_success']}/{c['n_a']}, "
                  f"B {c['b']} {c['b_success']}/{c['n_b']}; Fisher exact "
                  f"p = {c['p_value']:.3g}; {diff}")
    else:
        n = c["n"]
        counts = (f"{n} paired episodes ({c['condition']}): A {c['a']} {c['a_success']}/{n}, "
                  f"B {c['b']} {c['b_success']}/{n}; B only {c['b_only']}, A only "
                  f"{c['a_only']}; exact McNemar p = {c['p_value']:.3g}; {diff}")
    return [counts, f"verdict: {c['verdict']}"]


def _seconds(k: int) -> Callable[[Mapping[Any, Any]], str]:
    """The cell of column ``k`` of the phase-time table: seconds, or "-" when not entered."""
    return lambda r: "-" if r[k] is None else f"{r[k]:.2f}"


def _phase_times(report: Mapping[str, Any]) -> list[str]:
    details = report["details"]
    order = report.get("phase_order") or []
    if not order:
        return []
    columns = [Column("phase", lambda r: r["phase"])] + [
        Column(f"{d['task']} {d['condition']}", _seconds(k), numeric=True)
        for k, d in enumerate(details)]
    rows = [{"phase": p, **{k: d["phase_time_s"].get(p) for k, d in enumerate(details)}}
            for p in order]
    return ["", "mean simulated seconds per phase, in execution order:",
            *table(columns, rows)]


def _failures(report: Mapping[str, Any]) -> list[str]:
    rows = [{"group": f"{d['task']} {d['condition']}", **f} for d in report["details"]
            for f in d["failures_by_phase"]]
    if not rows:
        return []
    columns = (Column("task and condition", lambda r: r["group"]),
               Column("phase", lambda r: str(r["phase"])),
               Column("reason", lambda r: r["reason"]),
               Column("episodes", lambda r: str(r["count"]), numeric=True))
    return ["", "failure reasons by phase:", *table(columns, rows)]


def report_text(report: Mapping[str, Any]) -> str:
    """The whole report as text (see the module docstring)."""
    lines = [report["title"]]
    meta = report.get("meta") or {}
    if meta:
        lines.append("; ".join(f"{k}: {v}" for k, v in meta.items()))
    reuse = report.get("reuse")
    if reuse:
        lines.extend(reuse["lines"])
    for note in report.get("notes") or ():
        lines.append(f"note: {note}")
    for c in report.get("comparisons") or ():
        lines.extend(comparison_lines(c))
    lines.extend(["", *table(SUMMARY_COLUMNS, report["summary"])])
    lines.extend(f"faults: {f['line']}" for f in report.get("faults") or ()
                 if f["kinds"] or f["asked"])
    lines.extend(_phase_times(report))
    lines.extend(_failures(report))
    episodes = report["episodes"]
    lines.extend(["", f"episodes ({len(episodes)}):", *table(EPISODE_COLUMNS, episodes)])
    return "\n".join(lines) + "\n"
