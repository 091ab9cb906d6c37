"""What a browser view of a run is fed: the execution graph drawn once (:func:`page_svg`)
and, per step, a *view frame* (:func:`view_frames`): plain JSON with every drawn node's
status and label (``#1 FAILED``, ``run 2/3``, verdicts), the phases' states, the transitions
and exits taken, the ledger, the counters, the step's events and the camera images of that
moment. The replay page steps through a list of them; anything that produces them as a run
goes (a live console) can push them to the same page script (``replay.js``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_bt.events import FrameEvent
from harness_bt.recording import FrameStore
from harness_bt.trace import TraceReader
from harness_bt.viz.dot import render_dot, to_dot
from harness_bt.viz.frames import Frame, frames
from harness_bt.viz.graph import Drawing, drawing

__all__ = ["NOTE_SPACE", "Images", "page_svg", "view_frame", "view_frames"]

#: The character that reserves room for a node's label in the page's SVG (a figure space).
NOTE_SPACE = "\u2007"
_NOTE_MAX = 56


def _notes(d: Drawing) -> dict[str, str]:
    return {nid: " · ".join(n.notes) for nid, n in d.nodes.items()}


def view_frame(structure: Mapping[str, Any], frame: Frame, *, fold: bool = True,
               images: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One step of a run as JSON-ready data (see the module docstring)."""
    d = drawing(structure, frame, fold=fold)
    notes = _notes(d)
    return {
        "seq": frame.seq, "tick": frame.tick, "t": round(frame.mono, 3),
        "config": list(frame.configuration), "visited": list(frame.visited),
        "nodes": {nid: [n.status, notes[nid]] for nid, n in d.nodes.items()},
        "phases": {c.id: c.state for c in d.walk()},
        "taken": sorted({t.id for t in d.transitions if t.taken}),
        "exits": sorted(x.id for c in d.walk() for x in c.exits if x.taken),
        "commands": [[c.command_id, c.skill, c.state, c.reason]
                     for c in frame.commands.values()],
        "counters": dict(frame.counters),
        "events": [[e["seq"], e["kind"], e["text"]] for e in frame.events],
        "result": frame.result and {k: frame.result.get(k) for k in ("outcome", "reason")},
        "images": dict(images or {}),
    }


@dataclass
class Images:
    """The camera images a page shows: ``sources`` (data URIs, or URLs of a server), and
    for each ``frame`` event's seq the images it recorded (camera -> index into
    ``sources``, size, perceived boxes). ``problem``: why a recorded run shows none."""

    sources: list[str] = field(default_factory=list)
    by_seq: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    problem: str | None = None

    @classmethod
    def of(cls, reader: TraceReader, store: FrameStore, *, url: str | None = None) -> Images:
        """The images of a trace's ``frame`` events found in ``store``: embedded as data
        URIs, or (``url``: a prefix such as ``frames/``) as addresses a server answers."""
        out = cls(problem=store.problem)
        index: dict[str, int] = {}
        missing = 0
        for e in reader.records:
            if not isinstance(e, FrameEvent):
                continue
            shown: dict[str, Any] = {}
            for camera, image in e.images.items():
                member = str(image.get("member"))
                if member not in store:
                    missing += 1
                    continue
                if member not in index:
                    index[member] = len(out.sources)
                    data = store.get(member) or b""
                    out.sources.append(f"{url}{member}" if url is not None else
                                       "data:image/jpeg;base64," + base64.b64encode(
                                           data).decode("ascii"))
                shown[camera] = {"src": index[member], "w": image.get("width"),
                                 "h": image.get("height"), "boxes": image.get("boxes") or {},
                                 "timestep": e.timestep}
            if shown:
                out.by_seq.append((e.seq, shown))
        if missing and out.problem is None:
            out.problem = f"{missing} recorded image(s) are not in the frames file"
        return out

    def at(self, seq: int) -> dict[str, Any]:
        """The latest image of every camera up to event ``seq``."""
        latest: dict[str, Any] = {}
        for s, shown in self.by_seq:
            if s > seq:
                break
            latest.update(shown)
        return latest


def view_frames(reader: TraceReader, *, fold: bool = True, images: Images | None = None
                ) -> list[dict[str, Any]]:
    """One view frame per tick of the run (see :func:`harness_bt.viz.frames.frames`)."""
    structure = reader.structure
    return [view_frame(structure, f, fold=fold, images=images.at(f.seq) if images else None)
            for f in frames(reader)]


def page_svg(structure: Mapping[str, Any], views: Sequence[Mapping[str, Any]] = (), *,
             fold: bool = True) -> str:
    """The graph a page recolours: drawn once, every node with room for the longest label
    it shows in ``views`` (a line of :data:`NOTE_SPACE`), inline SVG (no XML prolog)."""
    static = drawing(structure, fold=fold)
    widths = {nid: 12 for nid in static.nodes}
    for view in views:
        for nid, (_, note) in view["nodes"].items():
            if nid in widths:
                widths[nid] = max(widths[nid], min(_NOTE_MAX, len(note)))
    for nid, n in static.nodes.items():
        n.notes = [NOTE_SPACE * widths[nid]]
    svg = render_dot(to_dot(static), "svg").decode("utf-8")
    return svg[svg.index("<svg"):]
