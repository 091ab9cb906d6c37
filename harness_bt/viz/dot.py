"""Graphviz: the drawing as DOT text, and SVG / PNG through the ``dot`` program.

Phases are clusters (compound phases hold their phases, parallel ones their regions side by
side, dashed), atomic phases hold their tree, finals are double circles; transitions join the
clusters. Node shapes by kind: composites are boxes (→ sequence, ? selector, ⇉ parallel),
decorators hexagons, actions rounded boxes, conditions ellipses. Every tree node carries an
SVG id (``n<k>``) and a class with its status, so a page can recolour it.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from html import escape

from harness_bt.errors import HarnessError
from harness_bt.viz.graph import COLOURS, EVENT_COLOURS, Cluster, Drawing, DrawNode

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
    rows = [f"<b>{_text(n.title)}</b>", f'<font point-size="8">{_text(n.detail)}</font>']
    rows += [f'<font point-size="8" color="{border}">{_text(note)}</font>' for note in n.notes]
    if n.status is not None:
        rows.append(f'<font point-size="7" color="{border}">{n.status.lower()}</font>')
    style = "filled,rounded" if n.kind == "action" else "filled"
    if n.kind == "composite":
        style += ",bold"
    if n.status == "NOT_TICKED":
        style += ",dashed"
    label = "<br/>".join(rows)
    return (f'{n.id} [id="{n.id}", class="node-{(n.status or "static").lower()}", '
            f'shape={_SHAPES.get(n.kind, "box")}, style="{style}", fillcolor="{fill}", '
            f'color="{border}", label=<{label}>, tooltip="{_text(n.phase)}: {_text(n.path)}"];')


def _cluster(c: Cluster, d: Drawing, out: list[str], indent: str) -> None:
    if c.kind == "history":  # a pseudo-state: a small circle, H or H*
        out.append(f'{indent}{c.anchor} [id="phase_{c.id}", shape=circle, width=0.3, '
                   f'fixedsize=true, fontsize=9, color="#546e7a", label="{c.label}", '
                   f'tooltip="{_text(c.id)}"];')
        return
    if c.kind == "final":
        reason = c.reason or c.id
        colour = "#2e7d32" if reason == "done" else "#c62828" if reason.startswith(
            "aborted_") else "#37474f"
        fill = "#eeeeee"
        if c.state == "active":
            fill = COLOURS["SUCCESS"][0] if colour == "#2e7d32" else COLOURS["FAILURE"][0]
        out.append(f'{indent}{c.anchor} [id="phase_{c.id}", shape=box, peripheries=2, '
                   f'style="rounded,filled", fillcolor="{fill}", color="{colour}", fontsize=9, '
                   f'fontcolor="{colour}", label="{_text(c.id)}"];')
        return
    style = "rounded,dashed" if c.kind == "parallel" else "rounded"
    colour, pen, bg = "#546e7a", "1", "white"
    if c.state == "active":
        colour, pen, bg = "#1565c0", "3", "#e3f2fd"
    elif c.state == "idle":
        colour, style = "#b0bec5", style + ",dashed" if "dashed" not in style else style
    label = f"<b>{_text(c.label)}</b>"
    if c.description:
        label += f'<br/><font point-size="8">{_text(c.description)}</font>'
    out.append(f"{indent}subgraph cluster_{c.id} {{")
    out.append(f'{indent}  id="phase_{c.id}"; label=<{label}>; style="{style}"; '
               f'color="{colour}"; penwidth={pen}; bgcolor="{bg}"; fontname="{_FONT}";')
    out.append(f'{indent}  {c.anchor} [shape=point, style=invis, width=0.01];')
    for child in c.children:
        _cluster(child, d, out, indent + "  ")
    for nid in c.nodes:
        out.append(f"{indent}  {_node(d.nodes[nid])}")
    if c.nodes:  # the anchor sits above the tree's root
        out.append(f"{indent}  {c.anchor} -> {c.nodes[0]} [style=invis];")
    mine = set(c.nodes)
    kids: dict[str, list[str]] = {}
    for a, b in d.tree_edges:
        if a in mine:
            out.append(f"{indent}  {a} -> {b} [arrowsize=0.5];")
            kids.setdefault(a, []).append(b)
    for siblings in kids.values():  # keep children in order, left to right
        if len(siblings) > 1:
            chain = " -> ".join(siblings)
            out.append(f"{indent}  {{rank=same; {chain} [style=invis];}}")
    out.append(f"{indent}}}")


def to_dot(d: Drawing) -> str:
    """DOT text for a drawing."""
    by_id = {c.id: c for c in d.walk()}
    out = ["digraph task {",
           f'  graph [compound=true, rankdir=TB, ordering=out, fontname="{_FONT}", '
           f'labelloc=t, nodesep=0.25, ranksep=0.3, label=<<b>{_text(d.title)}</b><br/>'
           f'<font point-size="9">{_text(d.subtitle)}</font>>];',
           f'  node [fontname="{_FONT}", fontsize=10, margin="0.08,0.03"];',
           f'  edge [fontname="{_FONT}", fontsize=8, color="#78909c"];',
           '  __start [shape=point, width=0.12, color="#263238"];']
    for c in d.clusters:
        _cluster(c, d, out, "  ")
    first = by_id.get(d.initial)
    if first is not None:
        head = f", lhead=cluster_{first.id}" if first.kind != "final" else ""
        out.append(f"  __start -> {first.anchor} [color=\"#263238\"{head}];")
    for t in d.transitions:
        src, tgt = by_id.get(t.source), by_id.get(t.target)
        if src is None or tgt is None:
            continue
        attrs = [f'label="{_text(t.label)}"', f'color="{EVENT_COLOURS.get(t.event, "#546e7a")}"',
                 f'fontcolor="{EVENT_COLOURS.get(t.event, "#546e7a")}"', "constraint=false"]
        if src.kind != "final":
            attrs.append(f"ltail=cluster_{src.id}")
        if tgt.kind not in ("final", "history") and tgt is not src:
            attrs.append(f"lhead=cluster_{tgt.id}")
        if t.taken:
            attrs.append("penwidth=2.5")
        elif d.frame is not None:
            attrs.append("style=dashed")
        out.append(f"  {src.anchor} -> {tgt.anchor} [{', '.join(attrs)}];")
    # The phases flow in document order through invisible edges; the transitions themselves
    # do not constrain the layout (they would scramble the order of the trees' children).
    for siblings in [d.clusters, *(c.children for c in d.walk() if c.kind == "compound")]:
        steps = [c for c in siblings if c.kind not in ("final", "history")]
        for a, b in itertools.pairwise(steps):
            out.append(f"  {a.anchor} -> {b.anchor} [style=invis];")
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
