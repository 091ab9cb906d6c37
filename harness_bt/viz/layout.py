"""Where the phases go: in flow order, the order a run reads the chart. The initial phase
comes first, then the phases its transitions lead to, followed depth first in the order the
transitions are written, so a branch stays together (``put_1``, its ``let_go_1``, then
``put_2``); a transition back to a phase already on the path (a retry loop) is a *back edge*
and does not move anything. What is left is ordered topologically (a phase after every phase
with a forward transition into it), ties broken by first discovery, then the phases no
transition reaches, in document order. The Graphviz writer stacks the phases in this order
along the flow axis (top to bottom) and joins them by their transitions.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from harness_bt.viz.graph import Cluster, Drawing

__all__ = ["flow_order", "flow_positions", "wrap"]


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


def _owner(siblings: Sequence[Cluster]) -> dict[str, str]:
    """Every phase id under ``siblings`` -> the id of the sibling that holds it."""
    out: dict[str, str] = {}
    for top in siblings:
        stack = [top]
        while stack:
            here = stack.pop()
            out[here.id] = top.id
            stack.extend(here.children)
    return out


def flow_order(siblings: Sequence[Cluster], edges: Iterable[tuple[str, str]],
               initial: str = "") -> list[Cluster]:
    """``siblings`` (the phases of one level, finals left out by the caller) in flow order.
    ``edges``: (source, target) phase ids of the chart's transitions, in the order they are
    written; a transition from or to a phase nested in a sibling counts for that sibling."""
    if not siblings:
        return []
    by_id = {c.id: c for c in siblings}
    owner = _owner(siblings)
    succ: dict[str, list[str]] = {c.id: [] for c in siblings}
    for src, tgt in edges:
        a, b = owner.get(src), owner.get(tgt)
        if a is None or b is None or a == b or b in succ[a]:
            continue
        succ[a].append(b)
    first = owner.get(initial, siblings[0].id)
    found: dict[str, int] = {}  # first discovery, depth first
    back: set[tuple[str, str]] = set()
    for root in [first, *(c.id for c in siblings)]:
        if root in found:
            continue
        on_path: set[str] = set()
        stack: list[tuple[str, int]] = [(root, 0)]
        found[root] = len(found)
        on_path.add(root)
        while stack:
            here, k = stack[-1]
            if k == len(succ[here]):
                stack.pop()
                on_path.discard(here)
                continue
            stack[-1] = (here, k + 1)
            nxt = succ[here][k]
            if nxt in on_path:
                back.add((here, nxt))
            elif nxt not in found:
                found[nxt] = len(found)
                on_path.add(nxt)
                stack.append((nxt, 0))
    waiting = {c.id: 0 for c in siblings}
    for a, targets in succ.items():
        for b in targets:
            if (a, b) not in back:
                waiting[b] += 1
    ready = [(found[i], i) for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    out: list[Cluster] = []
    while ready:
        _, here = heapq.heappop(ready)
        out.append(by_id[here])
        for nxt in succ[here]:
            if (here, nxt) in back:
                continue
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (found[nxt], nxt))
    return out


def flow_positions(d: Drawing) -> dict[str, int]:
    """Every phase id -> its place in the whole chart read in flow order (a compound phase
    before its children, its children in their own flow order), the finals last."""
    edges = [(t.source, t.target) for t in d.transitions]
    out: dict[str, int] = {}

    def visit(siblings: Sequence[Cluster], initial: str) -> None:
        for c in flow_order([s for s in siblings if s.kind != "final"], edges, initial):
            out[c.id] = len(out)
            visit(c.children, c.initial)
        for c in siblings:
            if c.kind == "final":
                out[c.id] = len(out)

    visit(d.clusters, d.initial)
    return out
