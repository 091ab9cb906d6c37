"""The console's page: the replay page (:func:`harness_bt.viz.html.page`, the same graph,
legend, zoom and pan, timeline, cameras and ledger) with the console's controls and panels,
fed over a WebSocket by ``console.js`` instead of from frames written into the page."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_bt.viz.html import page
from harness_bt.viz.view import page_svg

__all__ = ["console_page"]

_ASSETS = Path(__file__).parent
_JS = (_ASSETS / "console.js").read_text(encoding="utf-8")
_CSS = (_ASSETS / "console.css").read_text(encoding="utf-8")
#: Room reserved on each node for its label (``#2 RUNNING · run 2/3``): labels are not known
#: before the run writes them.
_NOTE_ROOM = 30

_BAR = """<div class="controls" id="console_bar">
<b>live</b> <span id="link" class="off">connecting…</span>
<button id="c_pause" title="pause ticking">pause</button>
<button id="c_resume" title="resume ticking">resume</button>
<button id="c_step" title="one tick, then pause again">single tick</button>
<button id="c_stop" class="stop" title="halt the tree, cancel open commands, wait for the
runtime to confirm">stop</button>
<span id="c_tick">tick -</span> <span id="c_state"></span>
</div>
<div class="controls">"""

_PANEL = """<aside>
<section id="console_panel">
<p id="c_held" class="held"></p>
<h3>stop</h3><ol id="stages"><li class="none">not asked for</li></ol>
<h3>breakpoints</h3>
<div><input id="bp_node" list="bp_nodes" placeholder="node (PHASE:PATH or name)" size="28">
<select id="bp_when"><option value="before">before it ticks</option>
<option value="change">when its status changes</option><option value="both">both</option>
</select> <button id="bp_add">set</button></div>
<datalist id="bp_nodes"></datalist>
<ul id="breakpoints"></ul>
<p><b>budget left:</b> <span id="c_budget">-</span><br>
<b>decision latency:</b> <span id="c_latency">-</span></p>
<h3>verdicts</h3><div id="verdicts"></div>
<h3>console</h3><div id="c_log"></div>
</section>"""


def console_page(structure: Mapping[str, Any], *, fold: bool = True) -> str:
    """The page for a run of the task ``structure``."""
    room = {"nodes": {nid: ["", "x" * _NOTE_ROOM] for nid in _ids(structure, fold)}}
    svg = page_svg(structure, [room], fold=fold)
    html = page(structure, [], svg=svg, title=f"{structure.get('task')} — live console")
    html = html.replace('<div class="controls">', _BAR, 1)
    html = html.replace("<aside>", _PANEL, 1)
    html = html.replace("<th>reason</th>", "<th>reason</th><th>timing</th>", 1)
    html = html.replace("</style>", _CSS + "</style>", 1)
    return html.replace("</body>", f"<script>{_JS}</script>\n</body>", 1)


def _ids(structure: Mapping[str, Any], fold: bool) -> list[str]:
    from harness_bt.viz.graph import drawing

    return list(drawing(structure, fold=fold).nodes)
