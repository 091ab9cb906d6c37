"""Graphviz: the drawing as DOT text, and SVG / PNG through the ``dot`` program.

Read top to bottom: the phases are clusters stacked in flow order
(:mod:`harness_bt.viz.layout`), compound phases holding their phases in their own flow order,
parallel ones their regions side by side (dashed); each atomic phase holds its tree, drawn top
down with every node's children left to right in order (invisible same-rank chains, and
``remincross=false``: the second crossing pass across clusters ignores them). Each phase is
entered at a point at its top (``a_<phase>``) and left from one at its bottom (``o_<phase>``);
every transition between phases is its own edge between those points, its event written on
it (a forward one pushes its target down, one back up does not). The finals are grouped in
one row (``ends``) after the last phase, and a phase's transitions into them are its exits,
arrow shapes in the row of its root (``failed ⇒ aborted_grasp``). Node shapes by kind:
composites are boxes (→ sequence, ? selector, ⇉ parallel), decorators hexagons, actions
rounded boxes, conditions ellipses, a folded ``recover`` a 3-D box (⟲) whose recovery edge is
dashed. Every tree node carries an SVG id (``n<k>``) and a class with its status, every exit
an id (``x_<phase>_<k>``), every transition between phases an id (``t_<source>_<target>``),
so a page can recolour them.
"""

from __future__ import annotations

import itertools
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
from harness_bt.viz.layout import flow_order, flow_positions, wrap

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
        rows.append(f'<font point-size="8" color="{ink}">{n.status.lower()}</font>')
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


def _top(c: Cluster) -> str:
    """Where a phase is entered: the point at its top (a pseudo-state: itself)."""
    return c.anchor


def _bottom(c: Cluster) -> str:
    """Where a phase is left: the point at its bottom (a pseudo-state: itself)."""
    return f"o_{c.id}" if c.kind in ("atomic", "compound", "parallel") else c.anchor


def _deepest(d: Drawing, c: Cluster) -> str:
    """The first node, in pre-order, at the greatest depth of an atomic phase's tree."""
    kids: dict[str, list[str]] = {}
    for a, b in d.tree_edges:
        kids.setdefault(a, []).append(b)
    return _lowest(kids, c.nodes[0])


def _cluster(c: Cluster, d: Drawing, out: list[str], indent: str) -> None:
    """One phase as a cluster, read top to bottom: the point it is entered at, its exits in a
    row beside its tree's root (atomic) or beside that point (compound, parallel), its tree
    (children left to right in order) or its child phases in flow order (compound; the
    regions of a parallel phase side by side), the point it is left at."""
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
    inner = indent + "  "
    out.append(f"{indent}subgraph cluster_{c.id} {{")
    out.append(f'{inner}id="phase_{c.id}"; label=<{_cluster_label(c)}>; style="{style}"; '
               f'color="{colour}"; penwidth={pen}; bgcolor="{bg}"; fontname="{_FONT}"; '
               f'labeljust=l;')
    out.append(f'{inner}{c.anchor} [shape=point, style=invis, width=0.01];')
    out.append(f'{inner}o_{c.id} [shape=point, style=invis, width=0.01];')
    reached = d.frame is not None and d.frame.result is not None
    for x in c.exits:
        out.append(_exit(x, inner, reached))
    for nid in c.nodes:
        out.append(f"{inner}{_node(d.nodes[nid])}")
    row = [c.anchor]  # what stands in the top row, left to right
    if c.nodes:
        root = c.nodes[0]
        out.append(f"{inner}{c.anchor} -> {root} [style=invis, weight=10];")
        # the point it is left at: below the first of the deepest nodes (one edge only:
        # a second one, from the root, lets mincross reorder that node's siblings)
        out.append(f"{inner}{_deepest(d, c)} -> o_{c.id} [style=invis];")
        row = [root]
    edges = [(t.source, t.target) for t in d.transitions]
    live = [k for k in c.children if k.kind != "final"]
    order = flow_order(live, edges, c.initial)
    for child in order:
        _cluster(child, d, out, inner)
    if c.kind == "parallel":  # regions side by side, left to right as written
        for child in order:
            out.append(f"{inner}{c.anchor} -> {_top(child)} [style=invis];")
            out.append(f"{inner}{_bottom(child)} -> o_{c.id} [style=invis];")
    elif order:
        chain = [c.anchor, *(p for k in order for p in (_top(k), _bottom(k)))]
        for a, b in zip(chain[0::2], chain[1::2], strict=False):
            out.append(f"{inner}{a} -> {b} [style=invis, weight=10];")
        last = _bottom(order[-1])
        finals = [k for k in c.children if k.kind == "final"]
        for f in finals:
            out.append(_final(f, inner))
            out.append(f"{inner}{last} -> {f.anchor} [style=invis];")
        if len(finals) > 1:
            out.append(f"{inner}{{rank=same; {' -> '.join(f.anchor for f in finals)} "
                       f"[style=invis];}}")
        out.append(f"{inner}{last} -> o_{c.id} [style=invis];")
    elif not c.nodes:
        out.append(f"{inner}{c.anchor} -> o_{c.id} [style=invis];")
    if c.exits:  # in a row beside the root, in the order they are written
        row += [x.id for x in c.exits]
        out.append(f"{inner}{{rank=same; {' -> '.join(row)} [style=invis];}}")
    mine = set(c.nodes)
    kids: dict[str, list[str]] = {}
    for a, b in d.tree_edges:
        if a in mine:
            attrs = "arrowsize=0.5"
            if (a, b) in d.recovery_edges:
                attrs += ', style=dashed, color="#ef6c00", label=<<font point-size="8" ' \
                         'color="#bf360c">on failure</font>>'
            out.append(f"{inner}{a} -> {b} [{attrs}];")
            kids.setdefault(a, []).append(b)
    for parent, siblings in kids.items():
        if len(siblings) < 2:
            continue
        if d.nodes[parent].type == "for_each":  # one body per item: each below the one before
            for a, b in itertools.pairwise(siblings):
                out.append(f"{inner}{_lowest(kids, a)} -> {b} [style=invis];")
        else:  # children left to right in order, whatever mincross does
            out.append(f"{inner}{{rank=same; {' -> '.join(siblings)} [style=invis];}}")
    out.append(f"{indent}}}")


def _lowest(kids: dict[str, list[str]], root: str) -> str:
    """The first node, in pre-order, at the greatest depth under ``root``."""
    best = (0, root)
    stack = [(root, 0)]
    while stack:
        nid, depth = stack.pop()
        if depth > best[0]:
            best = (depth, nid)
        stack.extend((k, depth + 1) for k in reversed(kids.get(nid, ())))
    return best[1]


def to_dot(d: Drawing) -> str:
    """DOT text for a drawing, read top to bottom: the phases in flow order
    (:mod:`harness_bt.viz.layout`), each tree with its children left to right in order, one
    edge per transition between phases with its event beside it, the finals grouped in the
    ``ends`` cell after the last phase."""
    by_id = {c.id: c for c in d.walk()}
    out = ["digraph task {",
           f'  graph [compound=true, rankdir=TB, ordering=out, remincross=false, '
           f'fontname="{_FONT}", labelloc=t, nodesep=0.25, ranksep=0.35, forcelabels=true, '
           f'label=<<b>{_text(d.title)}</b><br/>'
           f'<font point-size="9">{_text(d.subtitle)}</font>>];',
           f'  node [fontname="{_FONT}", fontsize=10, margin="0.08,0.03"];',
           f'  edge [fontname="{_FONT}", fontsize=9, color="#78909c"];',
           '  __start [shape=point, width=0.12, color="#263238"];']
    edges = [(t.source, t.target) for t in d.transitions]
    order = flow_order([c for c in d.clusters if c.kind != "final"], edges, d.initial)
    for c in order:
        _cluster(c, d, out, "  ")
    for a, b in itertools.pairwise(order):  # the flow axis: each phase below the one before
        out.append(f"  {_bottom(a)} -> {_top(b)} [style=invis, weight=5];")
    finals = [c for c in d.clusters if c.kind == "final"]
    if finals:
        out.append("  subgraph cluster___ends {")
        out.append('    id="ends"; label=<<b>ends</b>>; style="rounded"; '
                   f'color="#90a4ae"; bgcolor="#fafafa"; fontname="{_FONT}";')
        for f in finals:
            out.append(_final(f, "    "))
        if len(finals) > 1:
            out.append(f"    {{rank=same; {' -> '.join(f.anchor for f in finals)} "
                       f"[style=invis];}}")
        out.append("  }")
        if order:
            out.append(f"  {_bottom(order[-1])} -> {finals[0].anchor} [style=invis];")
    first = by_id.get(d.initial)
    if first is not None:
        head_attr = f", lhead=cluster_{first.id}" if first.kind not in ("final", "history") \
            else ""
        out.append(f'  __start -> {_top(first)} [color="#263238"{head_attr}];')
    place = flow_positions(d)
    for t in d.transitions:
        src, tgt = by_id.get(t.source), by_id.get(t.target)
        if src is None or tgt is None:
            continue
        colour = EVENT_COLOURS.get(t.event, "#546e7a")
        forward = place.get(tgt.id, 0) > place.get(src.id, 0) and \
            not _inside(src, tgt.id)
        attrs = [f'id="{t.id}"', f'label="{_text(t.label)}"',
                 f'color="{colour}"', f'fontcolor="{colour}"', f"class=\"{_kind(forward)}\""]
        if not forward:
            attrs.append("constraint=false")
        if src.kind in ("atomic", "compound", "parallel") and not _inside(src, tgt.id):
            attrs.append(f"ltail=cluster_{src.id}")
        if tgt.kind in ("atomic", "compound", "parallel") and tgt is not src \
                and not _inside(tgt, src.id):
            attrs.append(f"lhead=cluster_{tgt.id}")
        if t.taken:
            attrs.append("penwidth=2.5")
        elif d.frame is not None:
            attrs.append("style=dashed")
        out.append(f"  {_bottom(src)} -> {_top(tgt)} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _kind(forward: bool) -> str:
    return "transition forward" if forward else "transition back"


def _inside(c: Cluster, cid: str) -> bool:
    """Whether phase ``cid`` is ``c`` itself or nested in it."""
    stack = [c]
    while stack:
        here = stack.pop()
        if here.id == cid:
            return True
        stack.extend(here.children)
    return False


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
