"""What a drawing shows of a run at one moment: a :class:`Frame`, folded from trace events.

A frame keeps, for every node of every phase's tree, the last status it showed in the
phase's latest activation (so the graph of a finished run still says which nodes succeeded,
failed or never ran), whether an outcome was UNKNOWN, the node's attempts and its latest
command with that command's state. It also holds the chart configuration, the phases
visited, the ledger's commands, the counters, the blackboard and the events of the step.

:func:`frames` gives one frame per tick (the state after the tick's last event), for
stepping through a run; :func:`frame_at` the state after any ``seq``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness_bt.trace import TraceReader

__all__ = ["STATUSES", "CommandInfo", "Frame", "FrameFolder", "NodeState", "fold", "frame_at",
           "frames", "summarize"]

#: What a node's colour can say. ``NOT_TICKED``: not ticked in the phase's latest activation;
#: ``HALTED``: interrupted while RUNNING (its phase exited or a branch took over); ``UNKNOWN``:
#: it failed because the result could not be judged (UNKNOWN is neither success nor failure).
STATUSES = ("SUCCESS", "FAILURE", "RUNNING", "UNKNOWN", "HALTED", "NOT_TICKED")
_CID = re.compile(r"^(?P<phase>[^/.]+)\.(?P<activation>\d+)/(?P<path>.*)#(?P<attempt>\d+)$")


@dataclass
class NodeState:
    """One node as the run left it."""

    status: str = "NOT_TICKED"
    outcome: str = ""  # why it failed: "failed: FORCED_FAILURE"
    command: str | None = None  # latest command id sent by this node
    command_state: str | None = None
    attempts: int = 0  # the attempt number of its latest command (a SkillAction)
    retries: int = 0  # retries granted from the budget (a retry / recover node)
    verdict: str | None = None  # Evaluate: the last verdict


@dataclass
class CommandInfo:
    command_id: str
    skill: str
    state: str
    reason: str
    phase: str
    node_path: str
    attempt: int


@dataclass
class Frame:
    """The run after event ``seq`` (tick ``tick``, run time ``mono`` seconds)."""

    seq: int = 0
    tick: int = 0
    mono: float = 0.0
    configuration: list[str] = field(default_factory=list)
    visited: list[str] = field(default_factory=list)
    activations: dict[str, int] = field(default_factory=dict)
    nodes: dict[str, dict[str, NodeState]] = field(default_factory=dict)  # phase -> path ->
    commands: dict[str, CommandInfo] = field(default_factory=dict)
    transitions: list[tuple[str, str, str]] = field(default_factory=list)  # event, src, tgt
    counters: dict[str, int] = field(default_factory=dict)
    blackboard: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)  # of this step
    result: dict[str, Any] | None = None

    def node(self, phase: str, path: str) -> NodeState:
        return self.nodes.get(phase, {}).get(path) or NodeState()


def summarize(event: dict[str, Any]) -> str:
    """One line for an event, as a replay lists it."""
    d = event.get("data", {})
    kind = event["kind"]
    cid = event.get("command_id")
    if kind == "command":
        text = f"{d.get('op')}: {d.get('state_before')} -> {d.get('state_after')}"
        return f"{cid} {text} ({d.get('reason')})"
    if kind == "status":
        changes = ", ".join(f"{p.rsplit('/', 1)[-1]} {a}->{b}"
                            for p, (a, b) in list(d.get("changes", {}).items())[:4])
        more = len(d.get("changes", {})) - 4
        return f"{d.get('phase')}: {changes}" + (f" (+{more})" if more > 0 else "")
    if kind == "chart":
        return f"{d.get('event')}: {d.get('source')} -> {d.get('target')}; now " \
               f"{', '.join(d.get('configuration', []))}"
    if kind == "failure":
        o = d.get("outcome", {})
        return f"{d.get('node_path')} {o.get('kind')} {o.get('reason')}"
    if kind == "verdict":
        return f"{cid} {d.get('verdict')} ({'; '.join(d.get('evidence', [])[:1])})"
    if kind == "budget":
        return f"{d.get('kind')} at {d.get('node_path')}: " + (
            "granted" if d.get("granted") else f"refused {d.get('refused')}")
    if kind in ("phase_enter", "phase_exit"):
        return str(d.get("phase"))
    if kind == "outcome":
        o = d.get("outcome", {})
        return f"{d.get('phase')} {o.get('kind')} {o.get('reason') or ''}".rstrip()
    if kind == "blackboard":
        return f"{d.get('key')} <- {d.get('writer')}"
    if kind == "run_end":
        return f"{d.get('outcome')} ({d.get('reason')})"
    if kind == "frame":
        shown = ", ".join(d.get("images") or {})
        return f"camera frames {shown} at step {d.get('timestep')} ({len(d.get('objects') or {})}" \
               " objects perceived)"
    if kind == "observation":
        return f"world v{d.get('world_version')}" + (
            f" {d['changed']}" if d.get("changed") else "")
    return ", ".join(f"{k}={v}" for k, v in list(d.items())[:3])


class FrameFolder:
    """Folds trace events, one at a time, into the :class:`Frame` they leave (the replay's
    frames and the live console's state alike)."""

    def __init__(self, structure: dict[str, Any]) -> None:
        self.frame = Frame()
        self.trees = structure.get("trees", {})
        self.run_id = ""
        for phase, nodes in self.trees.items():
            self.frame.nodes[phase] = {n["path"]: NodeState() for n in nodes}

    def _node(self, phase: str, path: str) -> NodeState:
        return self.frame.nodes.setdefault(phase, {}).setdefault(path, NodeState())

    def apply(self, e: dict[str, Any]) -> None:
        f = self.frame
        f.seq, f.tick, f.mono = e["seq"], e["tick"], e.get("mono", f.mono)
        f.events.append({"seq": e["seq"], "kind": e["kind"], "text": summarize(e)})
        self.run_id = e.get("run_id") or self.run_id
        d = e.get("data", {})
        kind = e["kind"]
        if kind == "phase_enter":
            phase = d["phase"]
            f.visited.append(phase)
            if phase not in f.configuration:
                f.configuration.append(phase)
            if d.get("tree") is not None:
                f.activations[phase] = d.get("activation", f.activations.get(phase, 0) + 1)
                f.nodes[phase] = {p: NodeState() for p in d["tree"]}
        elif kind == "phase_exit":
            phase = d["phase"]
            if phase in f.configuration:
                f.configuration.remove(phase)
            for node in f.nodes.get(phase, {}).values():
                if node.status == "RUNNING":
                    node.status = "HALTED"
        elif kind == "chart":
            f.configuration = list(d.get("configuration", []))
            if d.get("source") is not None:
                f.transitions.append((str(d.get("event")), str(d["source"]),
                                      str(d.get("target"))))
        elif kind == "status":
            for path, (_, new) in d.get("changes", {}).items():
                node = self._node(d["phase"], path)
                if new != "INVALID":
                    node.status = new
                    if new != "FAILURE":
                        node.outcome = ""
        elif kind == "failure":
            o = d.get("outcome", {})
            node = self._node(d["phase"], d.get("node_path", ""))
            node.outcome = f"{o.get('kind')}: {o.get('reason')}"
            if o.get("kind") == "unknown":
                node.status = "UNKNOWN"
        elif kind == "command":
            self._command(e, d)
        elif kind == "verdict":
            node = self._node(d.get("phase", ""), d.get("node_path", ""))
            node.verdict = d.get("verdict")
        elif kind == "budget":
            if d.get("granted"):
                f.counters[d["kind"]] = f.counters.get(d["kind"], 0) + 1
                if d.get("node_path"):  # budget events name no phase: an active one has it
                    for phase in f.configuration:
                        if d["node_path"] in f.nodes.get(phase, {}):
                            f.nodes[phase][d["node_path"]].retries += 1
        elif kind == "blackboard":
            f.blackboard[d["key"]] = d.get("value")
        elif kind == "run_end":
            f.result = d
        self._fix_unknown()

    def _command(self, e: dict[str, Any], d: dict[str, Any]) -> None:
        f = self.frame
        cid = e.get("command_id") or ""
        rest = cid[len(self.run_id) + 1:] if self.run_id and cid.startswith(self.run_id + "/") \
            else cid.split("/", 1)[-1]
        m = _CID.match(rest)
        phase, path, attempt = (m["phase"], m["path"], int(m["attempt"])) if m else ("", "", 0)
        info = f.commands.get(cid)
        if info is None:
            info = CommandInfo(cid, str(d.get("skill", "")), "", "", phase, path, attempt)
            f.commands[cid] = info
        info.state = str(d.get("state_after", info.state))
        info.reason = str(d.get("reason") or info.reason)
        if m and phase in f.nodes and path in f.nodes[phase]:
            node = f.nodes[phase][path]
            if attempt >= node.attempts:
                node.attempts = attempt
                node.command = cid
                node.command_state = info.state

    def _fix_unknown(self) -> None:
        """A node whose failure was an UNKNOWN stays UNKNOWN until it runs again."""
        for nodes in self.frame.nodes.values():
            for node in nodes.values():
                if node.status == "FAILURE" and node.outcome.startswith("unknown:"):
                    node.status = "UNKNOWN"

    def snapshot(self) -> Frame:
        out = copy.deepcopy(self.frame)
        self.frame.events = []
        return out


def _events(trace: TraceReader | Iterable[dict[str, Any]]) -> TraceReader:
    return trace if isinstance(trace, TraceReader) else TraceReader(list(trace))


def fold(trace: TraceReader | Iterable[dict[str, Any]], until: int | None = None) -> Frame:
    """The frame after event ``until`` (all of them when None); its ``events`` are all the
    events folded."""
    reader = _events(trace)
    folder = FrameFolder(reader.structure)
    for e in reader:
        if until is not None and e["seq"] > until:
            break
        folder.apply(e)
    return folder.frame


def frame_at(trace: TraceReader | Iterable[dict[str, Any]], seq: int | None = None) -> Frame:
    """The frame after ``seq`` (the end when None), with the events of its tick."""
    reader = _events(trace)
    frame = fold(reader, seq)
    frame.events = [ev for ev in frame.events if _tick_of(reader, ev["seq"]) == frame.tick]
    return frame


def _tick_of(reader: TraceReader, seq: int) -> int:
    return int(reader.events[seq - 1]["tick"]) if 0 < seq <= len(reader.events) and \
        reader.events[seq - 1]["seq"] == seq else -1


def frames(trace: TraceReader | Iterable[dict[str, Any]]) -> list[Frame]:
    """One frame per tick: the state after the tick's last event, with that tick's events."""
    reader = _events(trace)
    folder = FrameFolder(reader.structure)
    out: list[Frame] = []
    events = reader.events
    for i, e in enumerate(events):
        folder.apply(e)
        if i + 1 == len(events) or events[i + 1]["tick"] != e["tick"]:
            out.append(folder.snapshot())
    return out
