"""Graphviz: the drawing as DOT text, and SVG / PNG through the ``dot`` program.

Phases are clusters (compound phases hold their phases, parallel ones their regions, dashed,
stacked top to bottom), atomic phases hold their tree drawn left to right; the phases sit in
bands read top to bottom, left to right (:mod:`harness_bt.viz.layout`); the finals are
grouped in one cell (``ends``), and a phase's transitions into them are its exits, drawn
inside it (arrow shapes: ``failed ⇒ aborted_grasp``); other transitions join the clusters,
their event written beside the edge. Node shapes by kind: composites are boxes (→ sequence,
? selector, ⇉ parallel), decorators hexagons, actions rounded boxes, conditions ellipses, a
folded ``recover`` a 3-D box (⟲) whose recovery edge is dashed. Every tree node carries an
SVG id (``n<k>``) and a class with its status, every exit an id (``x_<phase>_<k>``), every
transition between phases an id (``t_<source>_<target>``), so a page can recolour them.
"""

from __future__ import annotations

import shutil
import subprocess
from html import escape

from harness_bt.errors import HarnessError
from harness_bt.viz.graph import (
    COLOURS,
    EVENT_COLOURS,
    TEXT_COLOURS,
    Cluster,
    Drawing,
    DrawNode,
    Exit,
)
from harness_bt.viz.layout import bands, wrap

__all__ = ["GRAPHVIZ_HELP", "render_dot", "to_dot"]

GRAPHVIZ_HELP = ("install Graphviz: apt-get install graphviz (Debian/Ubuntu), dnf install "
                 "graphviz (Fedora), brew install graphviz (macOS); DOT (-o x.dot) and Mermaid "
                 "(-o x.mmd) output work without it")
_SHAPES = {"composite": "box", "decorator": "hexagon", "action": "box", "condition": "ellipse",
           "idiom": "box3d"}
_FONT = "Helvetica"


def _text(value: object) -> str:
    return escape(str(value), quote=True)


def _node(n: DrawNode) -> str:
    fill, border = COLOURS.get(n.status, COLOURS[None])
    ink = TEXT_COLOURS.get(n.status, TEXT_COLOURS[None])
    rows = [f"<b>{_text(n.title)}</b>", f'<font point-size="8">{_text(n.detail)}</font>']
    rows += [f'<font point-size="8" color="{ink}">{_text(note)}</font>' for note in n.notes]
    if n.status is not None:
        rows.append(f'<font point-size="7" color="{ink}">{n.status.lower()}</font>')
    style = "filled,rounded" if n.kind == "action" else "filled"
    if n.kind == "composite":
        style += ",bold"
    if n.status == "NOT_TICKED":
        style += ",dashed"
    label = "<br/>".join(rows)
    return (f'{n.id} [id="{n.id}", class="node-{(n.status or "static").lower()}", '
            f'shape={_SHAPES.get(n.kind, "box")}, style="{style}", fillcolor="{fill}", '
            f'color="{border}", label=<{label}>, tooltip="{_text(n.phase)}: {_text(n.path)}"];')


def _exit(x: Exit, indent: str, reached: bool) -> str:
    colour = EVENT_COLOURS.get(x.event, "#546e7a")
    fill, pen = "white", "1"
    if x.taken and reached:
        fill, pen = (COLOURS["SUCCESS"][0] if x.target == "done" else COLOURS["FAILURE"][0]), "2.5"
    return (f'{indent}{x.id} [id="{x.id}", class="exit", shape=cds, style="filled", '
            f'fillcolor="{fill}", color="{colour}", penwidth={pen}, fontsize=8, '
            f'fontcolor="#212121", height=0.3, margin="0.12,0.02", '
            f'label=<<font color="{colour}">{_text(x.label)}</font> ⇒ '
            f'<b>{_text(x.target)}</b>>, tooltip="{_text(x.source)}: on {_text(x.label)}, '
            f'end in {_text(x.target)}"];')


def _final(c: Cluster, indent: str) -> str:
    reason = c.reason or c.id
    colour = "#2e7d32" if reason == "done" else "#c62828" if reason.startswith(
        "aborted_") else "#37474f"
    fill = "#eeeeee"
    if c.state == "active":
        fill = COLOURS["SUCCESS"][0] if colour == "#2e7d32" else COLOURS["FAILURE"][0]
    return (f'{indent}{c.anchor} [id="phase_{c.id}", shape=box, peripheries=2, '
            f'style="rounded,filled", fillcolor="{fill}", color="{colour}", fontsize=9, '
            f'fontcolor="{colour}", label="{_text(c.id)}"];')


def _cluster_label(c: Cluster) -> str:
    label = f"<b>{_text(c.label)}</b>"
    for line in wrap(c.description):
        label += f'<br/><font point-size="8">{_text(line)}</font>'
    return label


def _cluster(c: Cluster, d: Drawing, out: list[str], indent: str) -> None:
    """One phase as a cluster: its anchor (a point at its left), then its tree (atomic) or
    its children stacked top to bottom (compound, parallel), then its exits."""
    if c.kind == "history":  # a pseudo-state: a small circle, H or H*
        out.append(f'{indent}{c.anchor} [id="phase_{c.id}", shape=circle, width=0.3, '
                   f'fixedsize=true, fontsize=9, color="#546e7a", label="{c.label}", '
                   f'tooltip="{_text(c.id)}"];')
        return
    style = "rounded,dashed" if c.kind == "parallel" else "rounded"
    colour, pen, bg = "#546e7a", "1", "white"
    if c.state == "active":
        colour, pen, bg = "#1565c0", "3", "#e3f2fd"
    elif c.state == "idle":
        colour, style = "#b0bec5", style + ",dashed" if "dashed" not in style else style
    out.append(f"{indent}subgraph cluster_{c.id} {{")
    out.append(f'{indent}  id="phase_{c.id}"; label=<{_cluster_label(c)}>; style="{style}"; '
               f'color="{colour}"; penwidth={pen}; bgcolor="{bg}"; fontname="{_FONT}"; '
               f'labeljust=l;')
    out.append(f'{indent}  {c.anchor} [shape=point, style=invis, width=0.01];')
    firsts = []  # what stacks in the first column, top to bottom
    if c.nodes:
        firsts.append(c.nodes[0])
    for child in c.children:
        if child.kind == "final":
            out.append(_final(child, indent + "  "))
        else:
            _cluster(child, d, out, indent + "  ")
        firsts.append(child.anchor)
    reached = d.frame is not None and d.frame.result is not None
    for x in c.exits:
        out.append(_exit(x, indent + "  ", reached))
        firsts.append(x.id)
    for nid in c.nodes:
        out.append(f"{indent}  {_node(d.nodes[nid])}")
    if c.nodes:  # where a transition to a later band leaves: the phase's right-hand side
        out.append(f'{indent}  o_{c.id} [shape=point, style=invis, width=0.01];')
        out.append(f"{indent}  {{rank=same; {_deepest(d, (c.id,))[0]}; o_{c.id};}}")
    for first in firsts:
        out.append(f"{indent}  {c.anchor} -> {first} [style=invis];")
    if len(firsts) > 1:
        out.append(f"{indent}  {{rank=same; {' -> '.join(reversed(firsts))} [style=invis];}}")
    mine = set(c.nodes)
    kids: dict[str, list[str]] = {}
    for a, b in d.tree_edges:
        if a in mine:
            attrs = "arrowsize=0.5"
            if (a, b) in d.recovery_edges:
                attrs += ', style=dashed, color="#ef6c00", xlabel=<<font point-size="7" ' \
                         'color="#bf360c">on failure</font>>'
            out.append(f"{indent}  {a} -> {b} [{attrs}];")
            kids.setdefault(a, []).append(b)
    for siblings in kids.values():  # keep children in order, top to bottom
        if len(siblings) > 1:
            chain = " -> ".join(reversed(siblings))  # inside a cluster, LR stacks upwards
            out.append(f"{indent}  {{rank=same; {chain} [style=invis];}}")
    out.append(f"{indent}}}")


def _deepest(d: Drawing, ids: tuple[str, ...]) -> list[str]:
    """One node at the greatest depth of each of the cells ``ids``: the next band's head is
    put right of these (fewer edges than one from every node: less for mincross to untangle)."""
    by_id = {c.id: c for c in d.walk()}
    kids: dict[str, list[str]] = {}
    for a, b in d.tree_edges:
        kids.setdefault(a, []).append(b)

    def deepest(c: Cluster) -> tuple[int, str]:
        best = (0, c.anchor)
        if c.nodes:
            stack = [(c.nodes[0], 1)]
            while stack:
                nid, depth = stack.pop()
                best = max(best, (depth, nid))
                stack.extend((k, depth + 1) for k in kids.get(nid, ()))
        for child in c.children:
            depth, nid = deepest(child)
            best = max(best, (depth + 1, nid))
        return best

    return [deepest(by_id[i])[1] for i in ids if i in by_id]


def _top(d: Drawing, cid: str) -> str:
    """The top-level phase that holds phase ``cid`` (itself at the top level)."""
    for c in d.clusters:
        stack = [c]
        while stack:
            here = stack.pop()
            if here.id == cid:
                return c.id
            stack.extend(here.children)
    return cid


def to_dot(d: Drawing) -> str:
    """DOT text for a drawing: trees left to right, the phases in bands (see
    :mod:`harness_bt.viz.layout`), the finals grouped in the last cell."""
    by_id = {c.id: c for c in d.walk()}
    out = ["digraph task {",
           f'  graph [compound=true, rankdir=LR, fontname="{_FONT}", '
           f'labelloc=t, nodesep=0.25, ranksep=0.3, forcelabels=true, '
           f'label=<<b>{_text(d.title)}</b><br/>'
           f'<font point-size="9">{_text(d.subtitle)}</font>>];',
           f'  node [fontname="{_FONT}", fontsize=10, margin="0.08,0.03"];',
           f'  edge [fontname="{_FONT}", fontsize=8, color="#78909c"];',
           '  __start [shape=point, width=0.12, color="#263238"];']
    grid = bands(d)
    band_of = {i: k for k, band in enumerate(grid) for cell in band for i in cell.ids}
    previous: list[str] = []
    for k, band in enumerate(grid):
        head = f"__band{k}"
        out.append(f"  {head} [shape=point, style=invis, width=0.01];")
        for member in previous:
            out.append(f"  {member} -> {head} [style=invis, weight=0];")
        anchors = [by_id[cell.ids[0]].anchor if len(cell.ids) == 1 and
                   by_id[cell.ids[0]].kind != "final" else "a___ends" for cell in band]
        if len(anchors) > 1:  # top to bottom in document order
            out.append(f"  {{rank=same; {' -> '.join(anchors)} [style=invis];}}")
        for cell in band:
            if len(cell.ids) == 1 and by_id[cell.ids[0]].kind != "final":
                c = by_id[cell.ids[0]]
                _cluster(c, d, out, "  ")
                out.append(f"  {head} -> {c.anchor} [style=invis];")
            else:  # the finals
                out.append("  subgraph cluster___ends {")
                out.append('    id="ends"; label=<<b>ends</b>>; style="rounded"; '
                           f'color="#90a4ae"; bgcolor="#fafafa"; fontname="{_FONT}";')
                out.append("    a___ends [shape=point, style=invis, width=0.01];")
                for fid in cell.ids:
                    out.append(_final(by_id[fid], "    "))
                    out.append(f"    a___ends -> {by_id[fid].anchor} [style=invis];")
                out.append("  }")
                out.append(f"  {head} -> a___ends [style=invis];")
        previous = [m for cell in band for m in _deepest(d, cell.ids)]
        if any(by_id[i].kind == "final" for cell in band for i in cell.ids):
            previous.append("a___ends")
    first = by_id.get(d.initial)
    if first is not None:
        head_attr = f", lhead=cluster_{first.id}" if first.kind != "final" else ""
        out.append(f"  __start -> {first.anchor} [color=\"#263238\"{head_attr}];")
    for t in d.transitions:
        src, tgt = by_id.get(t.source), by_id.get(t.target)
        if src is None or tgt is None:
            continue
        colour = EVENT_COLOURS.get(t.event, "#546e7a")
        attrs = [f'id="t_{t.source}_{t.target}"', f'xlabel="{_text(t.label)}"',
                 f'color="{colour}"', f'fontcolor="{colour}"', "constraint=false"]
        if src.kind != "final":
            attrs.append(f"ltail=cluster_{src.id}")
        if tgt.kind not in ("final", "history") and tgt is not src:
            attrs.append(f"lhead=cluster_{tgt.id}")
        if t.taken:
            attrs.append("penwidth=2.5")
        elif d.frame is not None:
            attrs.append("style=dashed")
        tail = src.anchor
        if src.kind == "atomic" and src.nodes and band_of.get(_top(d, tgt.id), 0) > \
                band_of.get(_top(d, src.id), 0):
            tail = f"o_{src.id}"  # rightwards, across the gap between the bands
        out.append(f"  {tail} -> {tgt.anchor} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def render_dot(dot: str, fmt: str = "svg", *, timeout_s: float = 60.0) -> bytes:
    """Run Graphviz's ``dot`` on DOT text (``fmt``: svg, png, pdf). A missing ``dot`` raises
    :class:`~harness_bt.errors.HarnessError` ``GRAPHVIZ_MISSING`` saying how to install it."""
    exe = shutil.which("dot")
    if exe is None:
        raise HarnessError("GRAPHVIZ_MISSING", f"Graphviz's 'dot' program is not on PATH, so "
                           f"{fmt.upper()} cannot be rendered", fix=GRAPHVIZ_HELP)
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=dot.encode("utf-8"),
                              capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise HarnessError("GRAPHVIZ_FAILED", f"dot took longer than {timeout_s:g} s",
                           fix="draw a smaller task, or render the .dot file by hand") from None
    if proc.returncode != 0:
        raise HarnessError("GRAPHVIZ_FAILED", f"dot exited {proc.returncode}: "
                           f"{proc.stderr.decode(errors='replace').strip()[:500]}",
                           fix="report it with the .dot file (harness viz -o x.dot)")
    return proc.stdout
