"""What the nodes of one run share, and what one phase activation owns.

:class:`RunContext` is injected into every node by ``setup(context=..., scope=...)``: the ledger,
the bridge, the clock, the world model, the registries, the task budget, the breakers, the
blackboard and the trace. :class:`PhaseScope` belongs to one atomic phase state: its activation
number (part of every command id), the commands its tree created, and the failure outcomes its
nodes recorded (so a tree's FAILURE becomes ``failed``, ``unknown`` or ``budget_exhausted``).

The blackboard is per run (py_trees' own blackboard is process-global, which would let two runs
in one process see each other's keys).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from harness_bt.budget import BreakerBoard, TaskBudget
from harness_bt.clock import Clock
from harness_bt.errors import BridgeError, HarnessError
from harness_bt.evaluation import EvaluatorRegistry
from harness_bt.events import TraceKind
from harness_bt.ledger import CommandRecord, CommandState, HistoryEntry, Ledger
from harness_bt.runtime.bridge import Ack, RuntimeBridge
from harness_bt.skill import SkillRegistry
from harness_bt.world import WorldModel

if TYPE_CHECKING:
    from harness_bt.trace import Trace

__all__ = ["Blackboard", "GuardContext", "Outcome", "OutcomeKind", "PhaseScope", "RunContext",
           "RunIds", "RunServices"]


class OutcomeKind(StrEnum):
    """How a tree (or a node) ended. The values are the chart event names a phase raises."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNKNOWN = "unknown"
    BUDGET_EXHAUSTED = "budget_exhausted"


@dataclass(frozen=True, slots=True)
class Outcome:
    """Why a node failed (or how a tree ended): kind, a named reason, where, and whether a retry
    may help. ``cause`` is the outcome this one wraps (the last attempt's failure behind an
    exhausted budget)."""

    kind: OutcomeKind
    reason: str = ""
    node_path: str = ""
    retryable: bool = True
    command_id: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    cause: Outcome | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind.value, "reason": self.reason, "node_path": self.node_path,
            "retryable": self.retryable,
        }
        if self.command_id:
            out["command_id"] = self.command_id
        if self.details:
            out["details"] = dict(self.details)
        if self.cause is not None:
            out["cause"] = self.cause.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class GuardContext:
    """What a transition guard sees: the outcome that raised the event, the run's blackboard
    and a view of the world."""

    outcome: Outcome
    blackboard: Any
    world: Any

class Blackboard:
    """The run's key-value board. Writes are traced (key, writer, value summary)."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.on_write: Callable[[str, Any, str], None] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def set(self, key: str, value: Any, *, writer: str = "") -> None:
        self._data[key] = value
        if self.on_write is not None:
            self.on_write(key, value, writer)

    def unset(self, key: str) -> None:
        self._data.pop(key, None)

    def as_dict(self) -> dict[str, Any]:
        return dict(self._data)


class PhaseScope:
    """One atomic phase state's binding to its tree, for the whole run.

    ``activation`` counts entries (1 on the first); ``commands`` lists the command ids its tree
    created in the current activation; ``handover`` the ones a later phase will settle.
    """

    def __init__(self, phase: str, context: RunContext) -> None:
        self.phase = phase
        self.context = context
        self.activation = 0
        self.commands: list[str] = []
        self.handover: set[str] = set()
        self.last_failure: Outcome | None = None
        self.last_failure_tick = -1
        self.node_attempts: dict[str, int] = {}

    def enter(self) -> None:
        self.activation += 1
        self.commands = []
        self.handover = set()
        self.last_failure = None
        self.last_failure_tick = -1
        self.node_attempts = {}

    def next_attempt(self, node_path: str) -> int:
        n = self.node_attempts.get(node_path, 0) + 1
        self.node_attempts[node_path] = n
        return n

    def command_id(self, node_path: str, attempt: int) -> str:
        """Deterministic from run, phase, activation, node path and attempt."""
        return f"{self.context.run_id}/{self.phase}.{self.activation}/{node_path}#{attempt}"

    def record(self, outcome: Outcome, *, emit: bool = True) -> Outcome:
        """Remember why a node failed this tick (the most recent record explains the tree)."""
        self.last_failure = outcome
        self.last_failure_tick = self.context.tick
        if emit:
            self.context.emit(TraceKind.FAILURE, phase=self.phase, node_path=outcome.node_path,
                              command_id=outcome.command_id, outcome=outcome.to_dict())
        return outcome

    def failure_this_tick(self) -> Outcome | None:
        if self.last_failure_tick == self.context.tick:
            return self.last_failure
        return None


@dataclass(frozen=True, slots=True)
class RunIds:
    """Who a run is: the task, the run, the robot it commands, and the seed of its randomness
    (every command and trace event carries them)."""

    task_id: str
    run_id: str
    robot_id: str = ""
    seed: int = 0


@dataclass(frozen=True, slots=True)
class RunServices:
    """What the nodes of one run call: the ledger, the runtime, the clock, the world model,
    the skill and evaluator registries, the circuit breakers."""

    ledger: Ledger
    bridge: RuntimeBridge
    clock: Clock
    world: WorldModel
    skills: SkillRegistry
    evaluators: EvaluatorRegistry
    breakers: BreakerBoard


class RunContext:
    """Everything the nodes of one run share. Built by :class:`harness_bt.TaskRunner`."""

    def __init__(self, ids: RunIds, services: RunServices, *, budget: TaskBudget,
                 trace: Trace) -> None:
        self.ids = ids
        self.task_id = ids.task_id
        self.run_id = ids.run_id
        self.robot_id = ids.robot_id
        self.seed = ids.seed
        self.ledger = services.ledger
        self.bridge = services.bridge
        self.clock = services.clock
        self.world = services.world
        self.skills = services.skills
        self.evaluators = services.evaluators
        self.breakers = services.breakers
        self.budget = budget
        self.trace = trace
        self.blackboard = Blackboard()
        self.tick = 0
        self.plan_version = 0
        self.now = self.clock.monotonic()
        self.counters: dict[str, int] = {"retries": 0, "recoveries": 0, "replans": 0,
                                         "unknown_verdicts": 0}
        self.cancel_requested_at: dict[str, float] = {}
        self.control_done_step: dict[str, int] = {}  # command id -> runtime timestep
        self.command_phase: dict[str, str] = {}
        self.command_node: dict[str, str] = {}  # command id -> the path of the node that sent it
        #: why a node wants the run journaled after this tick (a for_each froze its items)
        self.checkpoint_wanted: str | None = None

    def emit(self, kind: TraceKind, /, **fields: Any) -> None:
        self.trace.emit(kind, **fields)

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    # ------------------------------------------------------------------ bridge calls

    def send(self, command_id: str) -> Ack | None:
        """Send an ACCEPTED, dispatched command to the runtime (idempotent per id: a resend after a
        transport failure is safe). Returns the ack, or None when the transport failed."""
        rec = self.ledger.get(command_id)
        breaker = self.breakers.get("bridge")
        if not breaker.allow(self.now):
            self.emit(TraceKind.DISPATCH, command_id=command_id, sent=False,
                      reason="CIRCUIT_OPEN:bridge")
            return None
        self.ledger.flush()  # durable before the runtime may act on it (Ledger.group)
        try:
            ack = self.bridge.dispatch(rec.command,
                                       start_budget_ms=rec.start_budget_left_ms(self.now))
        except BridgeError as exc:
            breaker.record(False, self.now)
            self.emit(TraceKind.DISPATCH, command_id=command_id, sent=False, error=exc.to_dict())
            return None
        breaker.record(True, self.now)
        self.emit(TraceKind.DISPATCH, command_id=command_id, sent=True, accepted=ack.accepted,
                  duplicate=ack.duplicate, runtime_state=ack.state.value, reason=ack.reason,
                  start_budget_ms=rec.start_budget_left_ms(self.now))
        return ack

    def cancel(self, command_id: str, *, why: str, stop_timeout_s: float | None = None) -> None:
        """Ask for a stop through the ledger, and tell the runtime when the ledger says so. The
        resource stays held until the stop is confirmed (or the command is reconciled)."""
        rec = self.ledger.find(command_id)
        if rec is None or rec.terminal:
            return
        before = rec.state
        rec = self.ledger.cancel(command_id, now=self.now, stop_timeout_s=stop_timeout_s)
        self.emit(TraceKind.CANCEL, command_id=command_id, why=why, state_before=before.value,
                  state_after=rec.state.value)
        if rec.state is CommandState.CANCELING:
            self.cancel_requested_at.setdefault(command_id, self.now)
            self.send_cancel(command_id)

    def send_cancel(self, command_id: str) -> None:
        self.ledger.flush()  # the cancel is journaled before the runtime is told
        try:
            ack = self.bridge.cancel(command_id)
        except BridgeError as exc:
            self.breakers.get("bridge").record(False, self.now)
            self.emit(TraceKind.CANCEL_SENT, command_id=command_id, sent=False, error=exc.to_dict())
            return
        self.emit(TraceKind.CANCEL_SENT, command_id=command_id, sent=True, accepted=ack.accepted,
                  runtime_state=ack.state.value, reason=ack.reason)

    def latency(self, which: str, seconds: float | None, **fields: Any) -> None:
        """Record a decision latency (observation in -> command out) or a protection latency
        (stop requested -> stop confirmed); the two are kept apart."""
        value = None if seconds is None or not math.isfinite(seconds) else seconds
        self.emit(TraceKind.LATENCY, which=which, seconds=value, **fields)

    def error(self, where: str, exc: HarnessError) -> None:
        self.emit(TraceKind.ERROR, where=where, error=exc.to_dict())

    def trace_command(self, rec: CommandRecord, h: HistoryEntry) -> bool:
        """Trace one ledger history entry (``command``), and measure protection latency: from
        the stop request to the stop's confirmation (or to UNKNOWN, unconfirmed). True when
        the ledger itself moved the command to CANCELING (a deadline passed): the runtime must
        be told to stop it."""
        data: dict[str, Any] = {
            "op": h.op, "state_before": h.state_before.value if h.state_before else None,
            "state_after": h.state_after.value, "reason": h.reason, "applied": h.applied,
            "ledger_seq": h.seq, "skill": rec.command.skill,
        }
        if h.runtime_seq is not None:
            data["runtime_seq"] = h.runtime_seq
        if h.evidence:
            data["evidence"] = list(h.evidence)
        if h.detail:
            data["detail"] = h.detail
        if h.op == "submit":
            data["command"] = rec.command.to_wire()
        cid = rec.command_id
        self.emit(TraceKind.COMMAND, command_id=cid, **data)
        stop = h.state_after is CommandState.CANCELING and h.op == "tick"
        if stop:
            self.cancel_requested_at.setdefault(cid, h.mono)
        requested = self.cancel_requested_at.get(cid)
        if requested is not None and h.state_before is not h.state_after:
            if h.state_after is CommandState.CANCELED:
                self.latency("protection", h.mono - requested, command_id=cid, confirmed=True,
                             reason=h.reason)
                self.cancel_requested_at.pop(cid, None)
            elif h.state_after is CommandState.UNKNOWN and h.state_before is CommandState.CANCELING:
                self.latency("protection", None, command_id=cid, confirmed=False,
                             reason=h.reason)
        return stop
