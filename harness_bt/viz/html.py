"""A self-contained HTML page that steps through a run in a browser: the execution graph (one
SVG, drawn once by Graphviz) recoloured and relabelled frame by frame by a small script
(``replay.js``), with zoom and pan, beside the camera images of that moment (when the run
recorded them), the chart configuration, the ledger, the budget counters and the events of
each step. No external resources: the page works offline and from a file (images embedded),
or from ``harness replay --serve`` (images fetched from the server).

Keys: right / left step, Home / End jump, n / p next / previous chart transition, space
plays, + / - / 0 zoom in, out, to the whole graph, f follows the active phase again. The
page opens fitted to the active phase at a readable size and follows it from frame to frame
until the user zooms or pans. The mouse wheel zooms where it points, dragging pans. The
address fragment selects a frame (``#frame=12`` or ``#seq=140``) and may replay key presses
through the same handler (``#keys=RRL``: R right, L left, N next transition, P previous, E
end, H home, + and - zoom), so a headless browser can check the page steps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from harness_bt.recording import FrameStore
from harness_bt.trace import TraceReader
from harness_bt.viz.graph import COLOURS, EVENT_COLOURS, TEXT_COLOURS
from harness_bt.viz.render import TraceLike, trace_of
from harness_bt.viz.view import Images, page_svg, view_frames

__all__ = ["page", "replay_html"]

_ASSETS = Path(__file__).parent
_CSS = (_ASSETS / "replay.css").read_text(encoding="utf-8")
_JS = (_ASSETS / "replay.js").read_text(encoding="utf-8")
_NAMES = {"SUCCESS": "success", "FAILURE": "failure", "RUNNING": "running",
          "UNKNOWN": "unknown (not judged)", "HALTED": "halted (interrupted)",
          "NOT_TICKED": "not ticked"}


def _json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def _legend() -> str:
    chips = "".join(f'<span class="chip" style="background:{fill};border-color:{border}">'
                    f"{escape(_NAMES[k])}</span>"
                    for k, (fill, border) in COLOURS.items() if k is not None)
    events = "".join(f'<span class="event" style="border-color:{c}">'
                     f'<i style="background:{c}"></i>{escape(e.replace("_", " "))}</span>'
                     for e, c in EVENT_COLOURS.items())
    return (f'<div class="legend" id="legend"><b>nodes</b> {chips} <b>transitions</b> '
            f'{events} <span class="note">bold: taken · ⇒ an exit into a final phase · '
            f'⟲ recover (attempt, dashed: the recovery)</span></div>')


def page(structure: Mapping[str, Any], views: Sequence[Mapping[str, Any]], *,
         svg: str, images: Sequence[str] = (), problem: str | None = None,
         title: str | None = None) -> str:
    """The page for a task ``structure``, its graph ``svg`` (:func:`page_svg`) and its view
    frames; ``images``: the sources view frames point at; ``problem``: why recorded images
    are missing. The script's ``ReplayView.push(frame)`` appends a view frame, for a page
    fed while a run goes."""
    name = title or f"{structure.get('task')} — replay"
    colours = {(k or "static"): [*v, TEXT_COLOURS[k]] for k, v in COLOURS.items()}
    config = {"problem": problem}
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style></head>
<body>
<header><h1>{escape(name)}</h1>
<div class="sub">{escape(structure.get('instruction') or structure.get('description') or '')}</div>
<div class="controls">
<button id="first" title="first (Home)">« first</button>
<button id="prev" title="back (←)">‹ back</button>
<button id="play" title="play / pause (space)">play</button>
<button id="next" title="next (→)">next ›</button>
<button id="last" title="last (End)">last »</button>
<input id="slider" type="range" min="0" value="0" aria-label="frame">
<span id="where"></span>
<span class="zoom"><button id="zoom_in" title="zoom in (+)">+</button>
<button id="zoom_out" title="zoom out (-)">−</button>
<button id="zoom_fit" title="the whole graph (0)">fit</button>
<button id="zoom_follow" title="follow the active phase (f)">follow</button></span>
</div></header>
{_legend()}
<main><div id="graph" title="wheel: zoom · drag: pan">{svg}</div>
<div id="side"><div id="cameras"></div>
<aside>
<p class="outcome"><b>outcome:</b> <span id="outcome"></span></p>
<p><b>configuration:</b> <span id="config"></span><br><b>visited:</b> <span id="visited"></span>
<br><b>budget used:</b> <span id="counters"></span></p>
<h3>ledger</h3><table><thead><tr><th>command</th><th>skill</th><th>state</th><th>reason</th>
</tr></thead><tbody id="ledger"></tbody></table>
<h3>events of this step</h3><div id="events"></div>
</aside></div></main>
<script type="application/json" id="frames">{_json(list(views))}</script>
<script type="application/json" id="colours">{_json(colours)}</script>
<script type="application/json" id="images">{_json(list(images))}</script>
<script type="application/json" id="pageconfig">{_json(config)}</script>
<script>{_JS}</script>
</body></html>
"""


def replay_html(trace: TraceLike, *, title: str | None = None, fold: bool = True,
                frames_file: str | Path | None = None, image_url: str | None = None) -> str:
    """The replay page of a trace (a JSONL path, a :class:`TraceReader` or its events).
    Camera frames come from the file the trace's ``frame`` events name, beside the trace
    (or ``frames_file``): embedded, or with ``image_url`` (a prefix) fetched from there."""
    reader: TraceReader = trace_of(trace)
    structure = reader.structure
    if frames_file is not None:
        store = FrameStore(frames_file)
    else:
        where = trace if isinstance(trace, str | Path) else None
        store = FrameStore.beside(where, reader.events)
    images = Images.of(reader, store, url=image_url)
    views = view_frames(reader, fold=fold, images=images)
    return page(structure, views, svg=page_svg(structure, views, fold=fold),
                images=images.sources, problem=images.problem, title=title)
