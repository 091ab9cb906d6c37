"""The execution graph as a drawing model, shared by the Graphviz and Mermaid writers: the
statechart (compound and parallel phases as clusters, finals as end states, transitions with
their events), each atomic phase's tree inside it (node kinds, key params, budgets and retry
bounds), and, from a :class:`~harness_bt.viz.frames.Frame`, every node's status, attempts
and command state, and the active configuration.

Readable by default: idioms are folded into one node each (:mod:`harness_bt.viz.fold`;
``fold=False`` draws every node), and a transition into a final phase is an *exit* of its
source phase (drawn inside it, naming the final) rather than an edge across the chart; the
finals themselves are grouped (``Drawing.ends``)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness_bt.viz.fold import fold_tree
from harness_bt.viz.frames import Frame, NodeState

__all__ = ["COLOURS", "TEXT_COLOURS", "Cluster", "DrawNode", "Drawing", "Exit", "Transition",
           "drawing"]

#: status -> (fill, border) colours; ``None``: drawn without a run.
COLOURS: dict[str | None, tuple[str, str]] = {
    "SUCCESS": ("#c8e6c9", "#2e7d32"),
    "FAILURE": ("#ffcdd2", "#c62828"),
    "RUNNING": ("#fff59d", "#f9a825"),
    "UNKNOWN": ("#e1bee7", "#6a1b9a"),
    "HALTED": ("#ffe0b2", "#ef6c00"),
    "NOT_TICKED": ("#f5f5f5", "#9e9e9e"),
    None: ("#ffffff", "#37474f"),
}
#: status -> the colour of the text written on a node (darker than its border: legible on
#: the fill).
TEXT_COLOURS: dict[str | None, str] = {
    "SUCCESS": "#1b5e20", "FAILURE": "#b71c1c", "RUNNING": "#6d4c00", "UNKNOWN": "#4a148c",
    "HALTED": "#a33c00", "NOT_TICKED": "#616161", None: "#37474f",
}
EVENT_COLOURS = {"succeeded": "#2e7d32", "failed": "#c62828", "unknown": "#6a1b9a",
                 "budget_exhausted": "#ef6c00", "done": "#1565c0"}
_SYMBOL = {"sequence": "→", "selector": "?", "parallel": "⇉", "recover": "⟲"}


@dataclass
class DrawNode:
    """One tree node: where it is, what it is, and what the run made of it."""

    id: str
    phase: str
    path: str
    name: str
    type: str
    kind: str  # composite | decorator | action | condition
    detail: str  # the params worth seeing: skill, bounds, keys
    status: str | None = None
    notes: list[str] = field(default_factory=list)  # attempts, command state, outcome
    idiom: str = ""  # recover | act_and_evaluate: drawn folded

    @property
    def title(self) -> str:
        symbol = _SYMBOL.get(self.type)
        return f"{symbol} {self.name}" if symbol else self.name


@dataclass
class Exit:
    """A transition from a phase into a final phase, drawn inside its source phase."""

    id: str
    source: str
    target: str
    event: str
    label: str
    taken: bool = False


@dataclass
class Cluster:
    """One phase: its kind, its children (compound / parallel) or tree (atomic)."""

    id: str
    kind: str
    label: str
    description: str = ""
    children: list[Cluster] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)  # DrawNode ids, pre-order (atomic)
    reason: str | None = None  # finals
    state: str = ""  # with a run: active | visited | idle
    exits: list[Exit] = field(default_factory=list)
    initial: str = ""  # compound phases: the child phase entered first

    @property
    def anchor(self) -> str:
        return f"a_{self.id}"


@dataclass
class Transition:
    source: str
    target: str
    event: str
    label: str
    taken: bool = False
    id: str = ""  # t_<source>_<target>; t_<source>_<target>_<event> when the pair repeats


@dataclass
class Drawing:
    title: str
    subtitle: str
    clusters: list[Cluster]
    nodes: dict[str, DrawNode]
    tree_edges: list[tuple[str, str]]
    transitions: list[Transition]
    initial: str
    frame: Frame | None = None
    recovery_edges: set[tuple[str, str]] = field(default_factory=set)

    def walk(self) -> list[Cluster]:
        out: list[Cluster] = []
        stack = list(reversed(self.clusters))
        while stack:
            c = stack.pop()
            out.append(c)
            stack.extend(reversed(c.children))
        return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ", ".join(_fmt(v) for v in value)
    return str(value)


def _detail(entry: Mapping[str, Any]) -> str:
    t = entry["type"]
    p = entry.get("params") or {}
    if t == "skill_action":
        extra = " (handover)" if p.get("handover") else ""
        return f"skill {p.get('skill')}{extra}"
    if t == "retry":
        backoff = p.get("backoff") or {}
        cap = f", backoff ≤{_fmt(backoff.get('cap_s'))} s" if backoff.get("cap_s") else ""
        return f"retry ≤{p.get('attempts')} runs{cap}"
    if t == "timeout":
        return f"timeout {_fmt(p.get('seconds'))} s"
    if t == "delay":
        return f"delay {_fmt(p.get('seconds'))} s"
    if t == "repeat":
        times = p.get("times")
        return "repeat forever" if times == -1 else f"repeat ×{times}"
    if t == "evaluate":
        return f"judge {p.get('command')} (≤{p.get('max_observations')} looks)"
    if t == "observe":
        return f"observe {_fmt(p.get('objects') or [])}" + (
            f" → {p['record']}" if p.get("record") else "")
    if t == "check":
        return "check " + _fmt(p.get("objects") or p.get("relations") or [])
    if t == "wait_for":
        for key in ("when", "key", "condition"):
            if p.get(key) is not None:
                return f"wait {p[key]}"
        return f"wait {_fmt(p.get('seconds'))} s"
    if t in ("sequence", "selector"):
        return t + ("" if p.get("memory", True) else " (reactive)")
    if t == "parallel":
        return f"parallel ({p.get('policy', 'all')})"
    if t == "for_each":
        over = p.get("over")
        group = over.get("group") if isinstance(over, dict) else None
        items = f"group {group}" if group is not None else \
            f"[{_fmt(over)}]" if isinstance(over, list) else str(over)
        shown = f" = {_fmt(p['candidates'])}" if group is not None and p.get("candidates") \
            else ""
        return f"for each {p.get('item')} in {items}{shown}, ≤{p.get('attempts')} runs each"
    return t


def _notes(entry: Mapping[str, Any], state: NodeState,
           parts: Mapping[str, NodeState] | None = None) -> list[str]:
    """What a run wrote on a node: runs of a retry, the latest command and its state, the
    verdict, why it failed. ``parts``: the hidden nodes of a folded idiom (``act``,
    ``check``, ``recovery``), whose command, verdict and outcome show on it."""
    out = []
    parts = parts or {}
    params = entry.get("params") or {}
    if entry["type"] == "retry" and (state.retries or state.status not in (None, "NOT_TICKED")):
        out.append(f"run {1 + state.retries}/{params.get('attempts')}")
    if state.item:  # a for_each: the item it runs, or how it ended
        out.append(state.item)
    recovery = parts.get("recovery")
    if recovery is not None and recovery.status == "RUNNING":
        out.append("recovering")
    act = parts.get("act", state)
    if act.command is not None:
        out.append(f"#{act.attempts} {act.command_state}")
    check = parts.get("check", state)
    if check.verdict is not None:
        out.append(f"verdict {check.verdict}")
    outcome = state.outcome or next((p.outcome for k, p in parts.items()
                                     if k != "recovery" and p.outcome), "")
    if outcome and state.status in ("FAILURE", "UNKNOWN", "HALTED"):
        out.append(outcome)
    return out


def _label(spec: Mapping[str, Any]) -> str:
    kind = spec["kind"]
    if kind == "history":  # the statechart symbol: H shallow, H* deep
        return "H*" if spec.get("type") == "deep" else "H"
    return spec["id"] if kind == "atomic" else f"{spec['id']} ({kind})"


def _finals(specs: Any) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for spec in specs:
        if spec["kind"] == "final":
            out[spec["id"]] = spec
        out.update(_finals(spec.get("phases", ())))
    return out


def _transition_label(t: Mapping[str, Any]) -> str:
    bits = [str(t["event"])]
    if t.get("reason"):
        bits.append(f"[{t['reason']}]")
    if t.get("guard"):
        bits.append(f"if {t['guard']}")
    return " ".join(bits)


def _name_transitions(transitions: list[Transition], frame: Frame | None) -> None:
    """Give every transition its own SVG id, and say whether the run took it: by its phases
    alone when it is the only one between them, by its event too when several are."""
    pairs: dict[tuple[str, str], int] = {}
    for t in transitions:
        pairs[(t.source, t.target)] = pairs.get((t.source, t.target), 0) + 1
    taken = set(frame.transitions) if frame is not None else set()
    used: set[str] = set()
    for t in transitions:
        base = f"t_{t.source}_{t.target}"
        tid = base if pairs[(t.source, t.target)] == 1 else f"{base}_{t.event}"
        k = 2
        while tid in used:  # the same event twice (guards): numbered
            tid, k = f"{base}_{t.event}_{k}", k + 1
        used.add(tid)
        t.id = tid
        if pairs[(t.source, t.target)] > 1:
            t.taken = (str(t.event), t.source, t.target) in taken


def drawing(structure: Mapping[str, Any], frame: Frame | None = None, *,
            fold: bool = True) -> Drawing:
    """The drawing model of a task structure (``Task.structure()`` or a trace's first event),
    coloured by ``frame`` when given. ``fold=False`` draws every node of the idioms."""
    trees = structure.get("trees", {})
    finals = _finals(structure.get("phases", ()))
    nodes: dict[str, DrawNode] = {}
    edges: list[tuple[str, str]] = []
    recovery_edges: set[tuple[str, str]] = set()
    transitions: list[Transition] = []
    taken = {(src, tgt) for _, src, tgt in (frame.transitions if frame else ())}
    config = set(frame.configuration) if frame else set()
    visited = set(frame.visited) if frame else set()
    counter = itertools.count()  # node ids: n<k> by pre-order over every tree, folded or not

    def tree(c: Cluster, entries: list[dict[str, Any]]) -> None:
        ids = {entry["path"]: f"n{next(counter)}" for entry in entries}
        shape = fold_tree(entries, fold=fold)
        for entry in entries:
            path = entry["path"]
            if path in shape.hidden:
                continue
            nid = ids[path]
            idiom = shape.idioms.get(path)
            state = frame.node(c.id, path) if frame is not None else None
            parts = {k: frame.node(c.id, p) for k, p in idiom.parts.items()} \
                if idiom is not None and frame is not None else None
            node_type, detail = entry["type"], _detail(entry)
            if idiom is not None and idiom.kind == "recover":
                node_type, detail = "recover", detail.replace("retry", "recover", 1)
            elif idiom is not None:
                by_path = {e["path"]: e for e in entries}
                act, check = by_path[idiom.parts["act"]], by_path[idiom.parts["check"]]
                looks = (check.get("params") or {}).get("max_observations")
                node_type, detail = "act_and_evaluate", f"{_detail(act)}, judged (≤{looks} looks)"
            kind = entry["kind"] if idiom is None else \
                "idiom" if idiom.kind == "recover" else "action"
            nodes[nid] = DrawNode(
                nid, c.id, path, entry["name"], node_type, kind, detail,
                status=state.status if state is not None else None,
                notes=_notes(entry, state, parts) if state is not None else [],
                idiom=idiom.kind if idiom is not None else "")
            c.nodes.append(nid)
            for kid, how in shape.children.get(path, ()):
                edges.append((nid, ids[kid]))
                if how == "recovery":
                    recovery_edges.add((nid, ids[kid]))

    def cluster(spec: Mapping[str, Any]) -> Cluster:
        c = Cluster(spec["id"], spec["kind"], _label(spec), spec.get("description", ""),
                    reason=spec.get("reason"), initial=str(spec.get("initial") or ""))
        if frame is not None:
            c.state = "active" if c.id in config else "visited" if c.id in visited else "idle"
        for t in spec.get("transitions", ()):
            target = t["target"]
            was_taken = (c.id, target) in taken
            if target in finals:
                c.exits.append(Exit(f"x_{c.id}_{len(c.exits)}", c.id, target, str(t["event"]),
                                    _transition_label(t), was_taken))
            else:
                transitions.append(Transition(c.id, target, t["event"], _transition_label(t),
                                              was_taken))
        c.children = [cluster(child) for child in spec.get("phases", ())]
        if spec["kind"] == "atomic":
            tree(c, list(trees.get(c.id, ())))
        return c

    clusters = [cluster(p) for p in structure.get("phases", ())]
    _name_transitions(transitions, frame)
    budget = structure.get("budget") or {}
    bits = []
    if budget.get("max_retries") is not None:
        used = f"{sum(frame.counters.values())}/" if frame is not None else "≤"
        bits.append(f"retries {used}{budget['max_retries']}")
    if budget.get("max_time_s") is not None:
        bits.append(f"time ≤{_fmt(budget['max_time_s'])} s")
    subtitle = "task budget: " + (", ".join(bits) if bits else "unlimited")
    if frame is not None:
        subtitle += f" · seq {frame.seq}, tick {frame.tick}, t={frame.mono:.2f} s"
        if frame.result is not None:
            subtitle += f" · {frame.result.get('outcome')} ({frame.result.get('reason')})"
    title = str(structure.get("task", "task"))
    if structure.get("instruction"):
        title += f": {structure['instruction']}"
    return Drawing(title, subtitle, clusters, nodes, edges, transitions,
                   str(structure.get("initial") or (clusters[0].id if clusters else "")), frame,
                   recovery_edges)
