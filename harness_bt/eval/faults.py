"""The report's faults section, read from the results store: per task and condition, each
injected fault kind that fired (in how many episodes, how many times, how many recovered or
were tolerated; :mod:`harness_bt.run.faults`), the rates asked for, how many episodes asked
for faults that never fired, and one summary line. Kept apart from the rest of the report
(:func:`fault_summary` for ``report.json``, :func:`faults_html` for ``report.html``)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from harness_bt.run.faults import fault_counts

__all__ = ["fault_summary", "faults_html"]


def _line(entry: Mapping[str, Any]) -> str:
    kinds = entry["kinds"]
    parts = [f"{k}: {c['fired']} fired in {c['episodes']} of {entry['recorded']} episodes, "
             f"{c['recovered']} recovered, {c['tolerated']} tolerated" for k, c in kinds.items()]
    asked = ",".join(f"{k}={v:g}" for k, v in entry["asked"].items())
    head = f"{entry['task']} {entry['condition']}"
    if not parts:
        return f"{head}: asked {asked}; no fault fired in any episode" if asked else \
            f"{head}: no fault asked for or fired"
    none = f"; {entry['none_fired']} episode(s) saw none of the faults asked for" \
        if entry["none_fired"] else ""
    unrecorded = entry["episodes"] - entry["recorded"]
    old = f"; {unrecorded} episode(s) recorded without faults (an older store)" \
        if unrecorded else ""
    return f"{head}: " + "; ".join(parts) + none + old


def fault_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (task, condition), in order: ``episodes``, ``recorded`` (episodes whose faults the
    store holds), ``asked`` (rates), ``kinds`` (per fault kind: fired, recovered, tolerated,
    episodes), ``none_fired`` (episodes that asked for faults and saw none) and ``line``."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["condition"]), []).append(r)
    out = []
    for (task, condition), group in sorted(groups.items()):
        asked: dict[str, float] = {}
        for r in group:
            asked.update({k: float(v) for k, v in (r.get("faults_asked") or {}).items()})
        recorded = [r for r in group if r.get("faults") is not None]
        entry: dict[str, Any] = {
            "task": task, "condition": condition, "episodes": len(group),
            "recorded": len(recorded), "asked": asked,
            "kinds": fault_counts(r["faults"] for r in recorded),
            "none_fired": sum(1 for r in recorded if r.get("faults_asked") and not r["faults"]),
        }
        entry["line"] = _line(entry)
        out.append(entry)
    return out


def faults_html(faults: Sequence[Mapping[str, Any]]) -> str:
    """The section of ``report.html``: a column per fault kind (fired / recovered) and the
    summary lines; empty when no episode asked for or saw a fault."""
    shown = [f for f in faults if f["kinds"] or f["asked"]]
    if not shown:
        return ""
    kinds = sorted({k for f in shown for k in f["kinds"]})
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in (
        "task", "condition", "asked", *(f"{k}: fired / recovered" for k in kinds),
        "saw none asked for"))
    body = []
    for f in shown:
        cells = [e(f["task"]), e(f["condition"]),
                 e(",".join(f"{k}={v:g}" for k, v in f["asked"].items()) or "-")]
        for k in kinds:
            c = f["kinds"].get(k)
            cells.append("0 / 0" if c is None else f"{c['fired']} / {c['recovered']}")
        cells.append(f"{f['none_fired']} of {f['recorded']}")
        body.append("<tr>" + "".join(f"<td class='n'>{c}</td>" if i > 2 else f"<td>{c}</td>"
                                     for i, c in enumerate(cells)) + "</tr>")
    lines = "".join(f"<li>{e(f['line'])}</li>" for f in shown)
    return (f"<h2>Injected faults</h2><table><tr>{head}</tr>{''.join(body)}</table>"
            f"<ul class='meta'>{lines}</ul>")
