"""The run's trace: one JSON object per line, every change with its causal ids
(docs/architecture.md, "Traces").

Every event has ``seq`` (1, 2, ... per run), ``kind``, ``task_id``, ``run_id``, ``command_id``
(or null), ``plan_version``, ``tick``, ``mono`` (monotonic seconds of the run's clock) and
``wall`` (wall-clock seconds), plus kind-specific fields under ``data``. The first event
(``task``) carries the whole task structure (phases, transitions, trees with node paths, kinds
and params), so replay and drawings work from the trace file alone.

Kinds: ``task``, ``run_start``, ``resumed`` (open commands adopted from the ledger),
``observation``, ``command`` (every ledger history entry), ``dispatch``, ``cancel``,
``cancel_sent``, ``adopted`` (a step already journaled), ``status`` (tick-status changes of one
phase's tree), ``phase_enter``, ``phase_exit``, ``handover``, ``chart`` (a transition, with the
configuration after), ``outcome`` (a tree ended), ``unhandled`` (no transition took it),
``failure`` (why a node failed), ``budget`` (a retry / recovery draw, or the task time running
out), ``breaker``, ``verdict`` (with evidence), ``recovery``, ``waiting`` (for a resource),
``blackboard`` (a write), ``reconcile``, ``latency`` (``which`` = ``decision`` or
``protection``), ``notice``, ``orphan_event``, ``error``, ``stop``, ``stalled``, ``draining``,
``drain_timeout``, ``frame`` (camera frames recorded beside the trace:
:mod:`harness_bt.recording`), ``control`` (a request from the live console: pause, resume,
step, a breakpoint set, reached or cleared, a stop; who asked and when:
:mod:`harness_bt.console`), ``planner`` (a planner call that chose the task, or refused:
:mod:`harness_bt.planner.engage`), ``run_end`` (the result).

Each kind is a :class:`~harness_bt.events.TraceKind` with its own typed record in
:mod:`harness_bt.events` (:func:`~harness_bt.events.parse_event`): readers match records,
never the kind's string or the data's keys.

``Trace.listeners`` are called with every event as it is written (the live console reads
the run from there); a listener must return at once.

:class:`TraceReader` rebuilds the state at any ``seq``: chart configuration, node statuses,
command states, world version, counters.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness_bt.clock import Clock
from harness_bt.errors import DefinitionError
from harness_bt.events import (
    BlackboardEvent,
    BudgetEvent,
    ChartEvent,
    CommandEvent,
    Event,
    LatencyEvent,
    ObservationEvent,
    PhaseEnterEvent,
    PhaseExitEvent,
    RunEndEvent,
    StatusEvent,
    TaskEvent,
    TraceKind,
    VerdictEvent,
    parse_event,
)

__all__ = ["Trace", "TraceReader", "TraceState"]


def jsonable(value: Any) -> Any:
    """A JSON-ready copy (non-finite floats become strings, unknown objects their str)."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    if hasattr(value, "value") and isinstance(value.value, str):
        return value.value
    return str(value)


class Trace:
    """Writes trace events (to a JSONL file when ``path`` is given) and keeps them in memory
    (``keep=True``) for the result and for tests."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, clock: Clock,
                 task_id: str = "", run_id: str = "", keep: bool = True) -> None:
        self.path = None if path is None else Path(path)
        self.clock = clock
        self.task_id = task_id
        self.run_id = run_id
        self.keep = keep
        self.events: list[dict[str, Any]] = []
        self.seq = 0
        self.tick = 0
        self.plan_version: Callable[[], int] = lambda: 0
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self._fh: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("w", encoding="utf-8")

    def emit(self, kind: TraceKind, /, *, command_id: str | None = None,
             **data: Any) -> dict[str, Any]:
        """Write one event (its record type: :data:`harness_bt.events.RECORDS`)."""
        self.seq += 1
        event = {
            "seq": self.seq,
            "kind": str(kind),
            "task_id": self.task_id,
            "run_id": self.run_id,
            "command_id": command_id,
            "plan_version": self.plan_version(),
            "tick": self.tick,
            "mono": self.clock.monotonic(),
            "wall": self.clock.wall(),
            "data": jsonable(data),
        }
        if self.keep:
            self.events.append(event)
        if self._fh is not None:
            self._fh.write(json.dumps(event, separators=(",", ":")) + "\n")
        for listener in self.listeners:
            listener(event)
        return event

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] in kinds]


@dataclass
class TraceState:
    """The run as it stood after one event."""

    seq: int = 0
    tick: int = 0
    configuration: list[str] = field(default_factory=list)
    statuses: dict[str, dict[str, str]] = field(default_factory=dict)  # phase -> path -> status
    commands: dict[str, str] = field(default_factory=dict)  # command id -> state
    world_version: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    phases_visited: list[str] = field(default_factory=list)
    blackboard: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None


class TraceReader:
    """Reads a trace (a file or a list of events) and rebuilds the state at any seq."""

    def __init__(self, events: Iterable[dict[str, Any]]) -> None:
        self.events = sorted(events, key=lambda e: e["seq"])
        self._records: list[Event] | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> TraceReader:
        """Read a JSONL trace; a line that is not an event is refused with its number."""
        events = []
        with open(path, encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError as exc:
                    event = exc
                if not isinstance(event, dict) or "seq" not in event or "kind" not in event:
                    raise DefinitionError(
                        "INVALID_TRACE", f"{path}:{number}: not a trace event ({event})"
                        if isinstance(event, Exception) else
                        f"{path}:{number}: not a trace event (no seq and kind)",
                        fix="give a JSONL trace written by a TaskRunner (a run that died may "
                            "leave a cut last line: delete it)")
                events.append(event)
        return cls(events)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    @property
    def structure(self) -> dict[str, Any]:
        """The task structure from the first event."""
        first = parse_event(self.events[0]) if self.events else None
        if not isinstance(first, TaskEvent):
            raise DefinitionError("INVALID_TRACE", "the trace does not start with a 'task' event",
                                  fix="give a trace written by a TaskRunner (its first event "
                                      "holds the task)")
        return dict(first.data)

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] in kinds]

    def for_command(self, command_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["command_id"] == command_id]

    @property
    def records(self) -> list[Event]:
        """The events as typed records (:func:`harness_bt.events.parse_event`), parsed once."""
        if self._records is None:
            self._records = [parse_event(e) for e in self.events]
        return self._records

    def latencies(self, which: str) -> list[float | None]:
        return [e.seconds for e in self.records if isinstance(e, LatencyEvent)
                and e.which == which]

    def state_at(self, seq: int | None = None) -> TraceState:
        """Fold every event with ``seq <= seq`` (all of them when None)."""
        st = TraceState()
        for e in self.records:
            if seq is not None and e.seq > seq:
                break
            st.seq = e.seq
            st.tick = e.tick
            match e:
                case ChartEvent():
                    st.configuration = list(e.configuration)
                case PhaseEnterEvent():
                    st.phases_visited.append(e.phase)
                    if e.phase not in st.configuration:
                        st.configuration.append(e.phase)
                    if e.tree:
                        st.statuses[e.phase] = {p: "INVALID" for p in e.tree}
                case PhaseExitEvent():
                    if e.phase in st.configuration:
                        st.configuration.remove(e.phase)
                    if e.phase in st.statuses:
                        st.statuses[e.phase] = {p: "INVALID" for p in st.statuses[e.phase]}
                case StatusEvent():
                    phase = st.statuses.setdefault(e.phase, {})
                    for path, (_, new) in e.changes.items():
                        phase[path] = new
                case CommandEvent():
                    st.commands[str(e.command_id)] = e.state_after
                case ObservationEvent():
                    st.world_version = e.world_version
                case BudgetEvent(granted=True):
                    st.counters[e.draw] = st.counters.get(e.draw, 0) + 1
                case VerdictEvent():
                    st.verdicts.setdefault(str(e.command_id), []).append(
                        {"verdict": e.verdict, "evidence": list(e.evidence), "final": e.final})
                case BlackboardEvent():
                    st.blackboard[e.key] = e.value
                case RunEndEvent():
                    st.result = e.result
        return st
