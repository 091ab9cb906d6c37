"""Mermaid: the drawing as a ``flowchart`` (phases as subgraphs, trees inside with their
exits, transitions between the subgraphs, the finals grouped in ``ends``, statuses as
classes), for Markdown pages and tools that render Mermaid. It needs no program to
produce."""

from __future__ import annotations

from harness_bt.viz.graph import COLOURS, EVENT_COLOURS, Cluster, Drawing, DrawNode
from harness_bt.viz.layout import flow_order

__all__ = ["to_mermaid"]

_SHAPES = {"composite": ('["', '"]'), "decorator": ('{{"', '"}}'), "action": ('("', '")'),
           "condition": ('(["', '"])'), "idiom": ('[["', '"]]')}


def _text(value: object) -> str:
    """Mermaid label text: quotes, angle brackets and '#' as entities, no line breaks."""
    text = str(value).replace("#", "#35;").replace('"', "#quot;")
    return text.replace("<", "#lt;").replace(">", "#gt;").replace("\n", " ")


def _node(n: DrawNode) -> str:
    left, right = _SHAPES.get(n.kind, ('["', '"]'))
    lines = [f"<b>{_text(n.title)}</b>", _text(n.detail), *(_text(x) for x in n.notes)]
    return f"{n.id}{left}{'<br/>'.join(lines)}{right}"


def _cluster(c: Cluster, d: Drawing, out: list[str], indent: str) -> None:
    if c.kind == "final":
        out.append(f'{indent}{c.anchor}((("{_text(c.id)}")))')
        return
    if c.kind == "history":  # a pseudo-state: H or H*
        out.append(f'{indent}{c.anchor}(("{c.label}"))')
        return
    out.append(f'{indent}subgraph {c.anchor}["{_text(c.label)}"]')
    if c.kind == "parallel":
        out.append(f"{indent}  direction LR")
    for child in c.children:
        _cluster(child, d, out, indent + "  ")
    mine = set(c.nodes)
    for nid in c.nodes:
        out.append(f"{indent}  {_node(d.nodes[nid])}")
    for x in c.exits:
        out.append(f'{indent}  {x.id}>"{_text(x.label)} ⇒ {_text(x.target)}"]')
    for a, b in d.tree_edges:
        if a in mine:
            arrow = "-.->|on failure|" if (a, b) in d.recovery_edges else "-->"
            out.append(f"{indent}  {a} {arrow} {b}")
    out.append(f"{indent}end")


def to_mermaid(d: Drawing) -> str:
    """Mermaid ``flowchart`` text for a drawing."""
    title = f"{d.title} ({d.subtitle})".replace("\\", "/").replace('"', "'")
    out = ["---", f'title: "{title}"', "---", "flowchart TD"]
    for status, (fill, border) in COLOURS.items():
        name = (status or "static").lower()
        dash = ",stroke-dasharray:4" if status == "NOT_TICKED" else ""
        out.append(f"  classDef {name} fill:{fill},stroke:{border},color:#212121{dash}")
    out.append('  __start(("start"))')
    for c in flow_order([c for c in d.clusters if c.kind != "final"],
                        [(t.source, t.target) for t in d.transitions], d.initial):
        _cluster(c, d, out, "  ")  # written in flow order, as Graphviz draws them
    finals = [c for c in d.clusters if c.kind == "final"]
    if finals:  # grouped: the phases' exits name them
        out.append('  subgraph __ends["ends"]')
        out += [f'    {c.anchor}((("{_text(c.id)}")))' for c in finals]
        out.append("  end")
    by_id = {c.id: c for c in d.walk()}
    first = by_id.get(d.initial)
    if first is not None:
        out.append(f"  __start --> {first.anchor}")
    styles: list[str] = []
    edge = len(d.tree_edges) + (1 if first is not None else 0)  # links count in file order
    for x in (x for c in d.walk() for x in c.exits):
        colour = EVENT_COLOURS.get(x.event, "#546e7a")
        fill = "#ffcdd2" if x.taken and d.frame is not None and d.frame.result else "#ffffff"
        out.append(f"  style {x.id} fill:{fill},stroke:{colour},color:#212121")
    for t in d.transitions:
        src, tgt = by_id.get(t.source), by_id.get(t.target)
        if src is None or tgt is None:
            continue
        arrow = "==>" if t.taken else "-.->" if d.frame is not None else "-->"
        out.append(f'  {src.anchor} {arrow}|"{_text(t.label)}"| {tgt.anchor}')
        colour = EVENT_COLOURS.get(t.event, "#546e7a")
        styles.append(f"  linkStyle {edge} stroke:{colour},color:{colour}")
        edge += 1
    out += styles
    for n in d.nodes.values():
        out.append(f"  class {n.id} {(n.status or 'static').lower()}")
    for c in d.walk():
        if c.kind in ("final", "history"):
            continue
        if c.state == "active":
            out.append(f"  style {c.anchor} fill:#e3f2fd,stroke:#1565c0,stroke-width:3px")
        elif c.state == "idle":
            out.append(f"  style {c.anchor} fill:#ffffff,stroke:#b0bec5,stroke-dasharray:4")
    return "\n".join(out) + "\n"
