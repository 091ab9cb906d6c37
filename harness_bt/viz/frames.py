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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness_bt.events import (
    BlackboardEvent,
    BudgetEvent,
    ChartEvent,
    CommandEvent,
    Event,
    FailureEvent,
    FrameEvent,
    IterationEvent,
    ObservationEvent,
    OutcomeEvent,
    PhaseEnterEvent,
    PhaseExitEvent,
    RunEndEvent,
    StatusEvent,
    VerdictEvent,
    parse_event,
)
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
    item: str = ""  # a for_each: the item it runs ("#2 obj=red_cube run 1"), or "done"


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


def summarize(event: Event | Mapping[str, Any]) -> str:
    """One line for an event, as a replay lists it."""
    e = parse_event(event)
    cid = e.command_id
    match e:
        case CommandEvent():
            return f"{cid} {e.op}: {e.state_before} -> {e.state_after} ({e.reason})"
        case StatusEvent():
            changes = ", ".join(f"{p.rsplit('/', 1)[-1]} {a}->{b}"
                                for p, (a, b) in list(e.changes.items())[:4])
            more = len(e.changes) - 4
            return f"{e.phase}: {changes}" + (f" (+{more})" if more > 0 else "")
        case ChartEvent():
            return f"{e.event}: {e.source} -> {e.target}; now {', '.join(e.configuration)}"
        case FailureEvent():
            return f"{e.node_path} {e.outcome.kind} {e.outcome.reason}"
        case VerdictEvent():
            return f"{cid} {e.verdict} ({'; '.join(e.evidence[:1])})"
        case BudgetEvent():
            return f"{e.draw} at {e.node_path}: " + (
                "granted" if e.granted else f"refused {e.refused}")
        case IterationEvent(stage="done"):
            return f"{e.node_path}: " + (f"items left {', '.join(e.left)}" if e.left
                                         else "no item left")
        case IterationEvent(stage="domain"):
            return f"{e.node_path} over {e.over}: {', '.join(e.left) or 'no item'}"
        case IterationEvent():
            return f"{e.node_path} #{e.index} {e.item} (run {e.run}) {e.stage}" + (
                f" {e.status}" if e.status else "")
        case PhaseEnterEvent() | PhaseExitEvent():
            return e.phase
        case OutcomeEvent():
            return f"{e.phase} {e.outcome.kind} {e.outcome.reason}".rstrip()
        case BlackboardEvent():
            return f"{e.key} <- {e.writer}"
        case RunEndEvent():
            return f"{e.outcome} ({e.reason})"
        case FrameEvent():
            return f"camera frames {', '.join(e.images)} at step {e.timestep} " \
                   f"({len(e.objects)} objects perceived)"
        case ObservationEvent():
            return f"world v{e.world_version}" + (f" {e.changed}" if e.changed else "")
    return ", ".join(f"{k}={v}" for k, v in list(e.data.items())[:3])


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

    def apply(self, event: Event | Mapping[str, Any]) -> None:
        """Fold one event (a record, or the dict the trace holds)."""
        e = parse_event(event)
        f = self.frame
        f.seq, f.tick, f.mono = e.seq, e.tick, e.mono
        f.events.append({"seq": e.seq, "kind": str(e.kind), "text": summarize(e)})
        self.run_id = e.run_id or self.run_id
        match e:
            case PhaseEnterEvent(phase=phase):
                f.visited.append(phase)
                if phase not in f.configuration:
                    f.configuration.append(phase)
                if e.tree is not None:
                    f.activations[phase] = e.activation if e.activation is not None else \
                        f.activations.get(phase, 0) + 1
                    f.nodes[phase] = {p: NodeState() for p in e.tree}
            case PhaseExitEvent(phase=phase):
                if phase in f.configuration:
                    f.configuration.remove(phase)
                for node in f.nodes.get(phase, {}).values():
                    if node.status == "RUNNING":
                        node.status = "HALTED"
            case ChartEvent():
                f.configuration = list(e.configuration)
                if e.source is not None:
                    f.transitions.append((e.event, e.source, str(e.target)))
            case StatusEvent():
                for path, (_, new) in e.changes.items():
                    node = self._node(e.phase, path)
                    if new != "INVALID":
                        node.status = new
                        if new != "FAILURE":
                            node.outcome = ""
            case FailureEvent(outcome=o):
                node = self._node(e.phase, e.node_path)
                node.outcome = f"{o.kind}: {o.reason}"
                if o.kind == "unknown":
                    node.status = "UNKNOWN"
            case CommandEvent():
                self._command(e)
            case VerdictEvent():
                self._node(e.phase, e.node_path).verdict = e.verdict
            case IterationEvent(stage="done"):
                self._node(e.phase, e.node_path).item = \
                    f"left: {', '.join(e.left)}" if e.left else f"done in {e.index} run(s)"
            case IterationEvent(stage="domain"):
                self._node(e.phase, e.node_path).item = f"items: {', '.join(e.left) or '-'}"
            case IterationEvent():
                self._node(e.phase, e.node_path).item = f"#{e.index} {e.item} run {e.run}" + (
                    f" {e.status}" if e.status else "")
            case BudgetEvent(granted=True):
                f.counters[e.draw] = f.counters.get(e.draw, 0) + 1
                if e.node_path:  # budget events name no phase: an active one has it
                    for phase in f.configuration:
                        if e.node_path in f.nodes.get(phase, {}):
                            f.nodes[phase][e.node_path].retries += 1
            case BlackboardEvent():
                f.blackboard[e.key] = e.value
            case RunEndEvent():
                f.result = e.result
        self._fix_unknown()

    def _command(self, e: CommandEvent) -> None:
        f = self.frame
        cid = e.command_id or ""
        rest = cid[len(self.run_id) + 1:] if self.run_id and cid.startswith(self.run_id + "/") \
            else cid.split("/", 1)[-1]
        m = _CID.match(rest)
        phase, path, attempt = (m["phase"], m["path"], int(m["attempt"])) if m else ("", "", 0)
        info = f.commands.get(cid)
        if info is None:
            info = CommandInfo(cid, e.skill, "", "", phase, path, attempt)
            f.commands[cid] = info
        info.state = e.state_after
        info.reason = e.reason or info.reason
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
    for e in reader.records:
        if until is not None and e.seq > until:
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
    events = reader.records
    for i, e in enumerate(events):
        folder.apply(e)
        if i + 1 == len(events) or events[i + 1].tick != e.tick:
            out.append(folder.snapshot())
    return out
