"""Execution graphs: the statechart of phases with each phase's tree, drawn with Graphviz
(DOT, SVG, PNG) or Mermaid, coloured by a run's trace at any step (:func:`render`), idioms
folded and finals grouped so the graph reads; the frames of a run (:func:`frames`,
:func:`frame_at`), stepped through in the terminal, or in an HTML page (written, or served
over HTTP) fed view frames (:mod:`harness_bt.viz.view`)."""

from harness_bt.viz.dot import GRAPHVIZ_HELP, render_dot, to_dot
from harness_bt.viz.frames import STATUSES, Frame, NodeState, frame_at, frames
from harness_bt.viz.graph import COLOURS, Drawing, drawing
from harness_bt.viz.mermaid import to_mermaid
from harness_bt.viz.render import FORMATS, render

__all__ = [
    "COLOURS",
    "FORMATS",
    "GRAPHVIZ_HELP",
    "STATUSES",
    "Drawing",
    "Frame",
    "NodeState",
    "drawing",
    "frame_at",
    "frames",
    "render",
    "render_dot",
    "to_dot",
    "to_mermaid",
]
