"""Where the phases go: the chart's cells (each top-level phase, then the group of finals)
read in document order, top to bottom, in as many columns ("bands") as keep the drawing
about 1.4 times as wide as it is tall. Graphviz lays out each cell; this module only
estimates cell sizes from the label text (a Helvetica glyph is about 0.55 em wide) to pick
the number of bands, so the choice is the same on every machine, without running ``dot``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from harness_bt.viz.graph import Cluster, Drawing, DrawNode

__all__ = ["Cell", "bands", "cell_size", "node_size", "wrap"]

TARGET_RATIO = 1.4
NODESEP = 18.0  # points, as in the graph attributes of the DOT writer
RANKSEP = 22.0
CLUSTER_PAD = 16.0


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a top-level phase or the finals, with its estimated size."""

    ids: tuple[str, ...]  # cluster ids (one phase, or every final of the group)
    width: float
    height: float


def _text_width(text: str, size: float, bold: bool = False) -> float:
    return len(text) * size * (0.6 if bold else 0.55)


def wrap(text: str, width: int = 48) -> list[str]:
    """Words in lines of at most ``width`` characters (a longer word stands alone)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


def node_size(n: DrawNode) -> tuple[float, float]:
    """(width, height) in points of a tree node's box."""
    rows = [_text_width(n.title, 10, True), _text_width(n.detail, 8),
            *(_text_width(x, 8) for x in n.notes)]
    if n.status is not None:
        rows.append(_text_width(n.status, 7))
    width = max(rows) + 12
    if n.kind in ("decorator", "condition"):
        width *= 1.3  # hexagons and ellipses need room at the ends
    height = 12 + 10 * len(rows)
    return max(width, 54.0), max(height, 36.0)


def exit_size(label: str, target: str) -> tuple[float, float]:
    return _text_width(f"{label} ⇒ {target}", 8) + 26, 22.0


def _tree_size(d: Drawing, c: Cluster) -> tuple[float, float]:
    """An atomic phase laid out left to right: columns by depth, leaves stacked."""
    if not c.nodes:
        return 40.0, 30.0
    kids: dict[str, list[str]] = {}
    mine = set(c.nodes)
    for a, b in d.tree_edges:
        if a in mine:
            kids.setdefault(a, []).append(b)
    columns: dict[int, float] = {}
    stacks: dict[int, list[float]] = {}  # heights of the nodes in each column
    todo = [(c.nodes[0], 0)]
    while todo:
        nid, depth = todo.pop()
        w, h = node_size(d.nodes[nid])
        columns[depth] = max(columns.get(depth, 0.0), w)
        stacks.setdefault(depth, []).append(h)
        todo.extend((k, depth + 1) for k in kids.get(nid, ()))
    exits = [exit_size(x.label, x.target) for x in c.exits]
    if exits:
        columns[0] = max(columns[0], *(w for w, _ in exits))
        stacks[0].extend(h for _, h in exits)
    # Graphviz packs each column about as tight as its nodes allow: the tallest column rules
    tree_h = max(sum(hs) + NODESEP * (len(hs) - 1) for hs in stacks.values()) * 1.1
    width = sum(columns.values()) + RANKSEP * len(columns)
    return width, tree_h


def cell_size(d: Drawing, c: Cluster) -> tuple[float, float]:
    """(width, height) in points of one phase with its label and padding."""
    if c.kind == "final":
        return _text_width(c.id, 9) + 24, 30.0
    label_lines = [_text_width(c.label, 11, True),
                   *(_text_width(x, 8) for x in wrap(c.description))]
    if c.kind == "atomic":
        width, height = _tree_size(d, c)
    else:  # compound and parallel phases stack their children
        sizes = [cell_size(d, k) for k in c.children]
        width = max((w for w, _ in sizes), default=40.0) + RANKSEP
        height = sum(h for _, h in sizes) + NODESEP * max(0, len(sizes) - 1)
        exits = [exit_size(x.label, x.target) for x in c.exits]
        width = max(width, *(w + RANKSEP for w, _ in exits)) if exits else width
        height += sum(h + NODESEP for _, h in exits)
    label_h = 14 + 10 * (len(label_lines) - 1)
    return max(width, max(label_lines)) + CLUSTER_PAD, height + label_h + CLUSTER_PAD


def cells(d: Drawing) -> list[Cell]:
    """The top-level phases in document order, then one cell with every top-level final."""
    out = [Cell((c.id,), *cell_size(d, c)) for c in d.clusters if c.kind != "final"]
    finals = [c for c in d.clusters if c.kind == "final"]
    if finals:
        sizes = [cell_size(d, c) for c in finals]
        out.append(Cell(tuple(c.id for c in finals), max(w for w, _ in sizes) + CLUSTER_PAD,
                        sum(h for _, h in sizes) + 8 * len(sizes) + 14 + CLUSTER_PAD))
    return out


def _split(items: Sequence[Cell], parts: int) -> list[list[Cell]]:
    """``items`` in order, cut into ``parts`` runs with the tallest run as short as can be."""
    n = len(items)
    best: dict[tuple[int, int], tuple[float, list[int]]] = {}

    def solve(start: int, k: int) -> tuple[float, list[int]]:
        if (start, k) in best:
            return best[(start, k)]
        res: tuple[float, list[int]]
        if k == 1:
            res = (sum(c.height for c in items[start:]) + NODESEP * (n - start - 1), [])
        else:
            res = (math.inf, [])
            for cut in range(start + 1, n - k + 2):
                head = sum(c.height for c in items[start:cut]) + NODESEP * (cut - start - 1)
                rest, cuts = solve(cut, k - 1)
                if max(head, rest) < res[0]:
                    res = (max(head, rest), [cut, *cuts])
        best[(start, k)] = res
        return res

    _, cuts = solve(0, parts)
    bounds = [0, *cuts, n]
    return [list(items[a:b]) for a, b in itertools.pairwise(bounds)]


def bands(d: Drawing, target: float = TARGET_RATIO) -> list[list[Cell]]:
    """The cells in bands (left to right; each band's cells top to bottom), as many bands as
    bring width / height closest to ``target``."""
    items = cells(d)
    if not items:
        return []
    title_h = 40.0
    choice: tuple[float, list[list[Cell]]] | None = None
    for parts in range(1, len(items) + 1):
        split = _split(items, parts)
        width = sum(max(c.width for c in band) for band in split) + 40.0 * len(split)
        height = max(sum(c.height for c in band) + NODESEP * (len(band) - 1)
                     for band in split) + title_h
        score = abs(math.log(width / height / target))
        if choice is None or score < choice[0]:
            choice = (score, split)
    assert choice is not None
    return choice[1]
