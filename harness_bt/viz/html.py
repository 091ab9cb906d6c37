"""A self-contained HTML page that steps through a run in a browser: the execution graph (one
SVG, drawn once by Graphviz) recoloured frame by frame by a small script, beside the chart
configuration, the ledger, the budget counters and the events of each step. No external
resources: the page works offline and from a file.

Keys: right / left step, Home / End jump, n / p next / previous chart transition, space
plays. The address fragment selects a frame (``#frame=12`` or ``#seq=140``) and may replay key
presses through the same handler (``#keys=RRL``: R right, L left, N next transition, P
previous, E end, H home), so a headless browser can check the page steps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from harness_bt.trace import TraceReader
from harness_bt.viz.dot import render_dot, to_dot
from harness_bt.viz.frames import Frame, frames
from harness_bt.viz.graph import COLOURS, EVENT_COLOURS, drawing
from harness_bt.viz.render import TraceLike, trace_of

__all__ = ["replay_html"]


def _frame_data(frame: Frame, ids: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    nodes = {}
    for phase, states in frame.nodes.items():
        for path, st in states.items():
            nid = ids.get((phase, path))
            if nid is None:
                continue
            notes = []
            if st.retries:
                notes.append(f"retries {st.retries}")
            if st.command:
                notes.append(f"#{st.attempts} {st.command_state}")
            if st.verdict:
                notes.append(f"verdict {st.verdict}")
            if st.outcome and st.status in ("FAILURE", "UNKNOWN", "HALTED"):
                notes.append(st.outcome)
            nodes[nid] = [st.status, " · ".join(notes)]
    return {
        "seq": frame.seq, "tick": frame.tick, "t": round(frame.mono, 3),
        "config": frame.configuration, "visited": frame.visited, "nodes": nodes,
        "commands": [[c.command_id, c.skill, c.state, c.reason] for c in frame.commands.values()],
        "counters": frame.counters,
        "taken": sorted({f"{s}>{t}" for _, s, t in frame.transitions}),
        "events": [[e["seq"], e["kind"], e["text"]] for e in frame.events],
        "result": frame.result and {k: frame.result.get(k) for k in ("outcome", "reason")},
    }


_ASSETS = Path(__file__).parent
_CSS = (_ASSETS / "replay.css").read_text(encoding="utf-8")
_JS = (_ASSETS / "replay.js").read_text(encoding="utf-8")


def _json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def replay_html(trace: TraceLike, *, title: str | None = None) -> str:
    """The replay page of a trace (a JSONL path, a :class:`TraceReader` or its events)."""
    reader: TraceReader = trace_of(trace)
    structure = reader.structure
    static = drawing(structure)
    svg = render_dot(to_dot(static), "svg").decode("utf-8")
    svg = svg[svg.index("<svg"):]  # drop the XML prolog and doctype: the SVG sits inline
    ids = {(n.phase, n.path): n.id for n in static.nodes.values()}
    names = {n.id: f"{n.phase}: {n.path}" for n in static.nodes.values()}
    data = [_frame_data(f, ids) for f in frames(reader)]
    colours = {(k or "static"): list(v) for k, v in COLOURS.items()}
    name = title or f"{structure.get('task')} — replay"
    legend = "".join(f'<span style="background:{fill};border-color:{border}">'
                     f'{escape((k or "not run").lower().replace("_", " "))}</span>'
                     for k, (fill, border) in COLOURS.items() if k is not None)
    events = " ".join(f'<span style="color:{c}">{escape(e)}</span>'
                      for e, c in EVENT_COLOURS.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style></head>
<body>
<header><h1>{escape(name)}</h1>
<div>{escape(structure.get('instruction') or structure.get('description') or '')}</div>
<button id="first" title="first (Home)">« first</button>
<button id="prev" title="back (←)">‹ back</button>
<button id="play" title="play / pause (space)">play</button>
<button id="next" title="next (→)">next ›</button>
<button id="last" title="last (End)">last »</button>
<input id="slider" type="range" min="0" value="0"><span id="where"></span>
<div class="legend">{legend} · transitions: {events}</div></header>
<main><div id="graph">{svg}</div>
<aside>
<p><b>outcome:</b> <span id="outcome"></span></p>
<p><b>configuration:</b> <span id="config"></span><br><b>visited:</b> <span id="visited"></span>
<br><b>budget used:</b> <span id="counters"></span></p>
<h3>ledger</h3><table><thead><tr><th>command</th><th>skill</th><th>state</th><th>reason</th>
</tr></thead><tbody id="ledger"></tbody></table>
<h3>events of this step</h3><div id="events"></div>
</aside></main>
<script type="application/json" id="frames">{_json(data)}</script>
<script type="application/json" id="colours">{_json(colours)}</script>
<script type="application/json" id="names">{_json(names)}</script>
<script>{_JS}</script>
</body></html>
"""
