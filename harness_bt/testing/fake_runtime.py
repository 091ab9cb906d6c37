"""An in-memory runtime for tests: scripted executors, a scripted scene, injected faults.

:class:`FakeRuntime` implements :class:`~harness_bt.RuntimeBridge` for real: it keeps a
record per command id (dispatch is idempotent), runs each command by its :class:`Script` on the
injected clock (start delay, progress events, control done / aborted / silence / refusal),
applies the script's *effect* to a :class:`FakeScene` when the control action finishes, emits one
observation of the scene per poll, stops commands on cancel (after ``stop_delay_s``, or never
with ``confirm_stops=False``), and answers ``query`` from its own record, so a harness can
reconcile what it missed.

It keeps the contract of the real executor host (``runtime_bridge.host.ExecutorHost``; the
RuntimeBridge conformance suite holds both to it), with the host's reason codes: a resend
returns the original answer (``duplicate=True``), and a refusal is remembered, so a resend is
refused the same way;
the same id with other content is refused (``COMMAND_ID_CONFLICT``); once a command of a newer
control epoch was accepted, an older epoch's is refused (``STALE_EPOCH``); a cancel for an id
never seen burns it (``CANCELED_BEFORE_RECEIPT``: a late dispatch of it never runs); a cancel for
a finished command is refused (``ALREADY_FINISHED``); a query for an unknown id answers
NOT_FOUND (``UNKNOWN_COMMAND``). Event sequence numbers start at 1 per command.

Faults apply to delivery only (the runtime's own record stays complete, as a real runtime's
would): :meth:`FakeRuntime.drop` loses events, :meth:`FakeRuntime.duplicate` delivers them twice,
:meth:`FakeRuntime.delay` delivers them late (after later events). Time is the clock's: tests
advance a :class:`~harness_bt.clock.FakeClock` and never sleep.

>>> from harness_bt.clock import FakeClock
>>> rt = FakeRuntime(FakeClock())
>>> rt.script("grasp", Script(duration_s=0.2), Script(outcome="aborted", reason="IK_FAILED"))
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness_bt.clock import Clock
from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.ledger import Command, CommandEvent, EventKind
from harness_bt.runtime.bridge import Ack, BridgeNotice, PollResult, RuntimeState, RuntimeStatus
from harness_bt.runtime.observation import CameraFrame, EePose, Observation

__all__ = ["FakeRuntime", "FakeScene", "Script"]

_OUTCOMES = ("control_done", "aborted", "silent", "reject", "hang")


class FakeScene:
    """What the fake cameras see: objects (id -> dict with ``pose``, ``extent``, ``confidence``,
    ``relations``), the end-effector position and the gripper width (Panda: 0.08 open)."""

    def __init__(self, objects: Mapping[str, Mapping[str, Any]] | None = None, *,
                 ee_position: Iterable[float] = (0.3, 0.0, 0.5), gripper_width: float = 0.08):
        self.objects: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (objects or {}).items()}
        for oid, obj in self.objects.items():
            obj.setdefault("confidence", 1.0)
            obj.setdefault("relations", {})
            obj.setdefault("extent", [0.05, 0.05, 0.1])
            if "pose" not in obj:
                raise DefinitionError("INVALID_SCENE", f"object {oid!r} needs a pose")
        self.ee_position = [float(v) for v in ee_position]
        self.gripper_width = float(gripper_width)

    def set(self, oid: str, **fields: Any) -> None:
        self.objects.setdefault(oid, {"confidence": 1.0, "relations": {},
                                      "extent": [0.05, 0.05, 0.1]}).update(fields)

    def move(self, oid: str, pose: Iterable[float]) -> None:
        self.objects[oid]["pose"] = [float(v) for v in pose]

    def relate(self, oid: str, relation: str, target: str | None) -> None:
        self.objects[oid]["relations"][relation] = target  # None: no longer holds

    def occlude(self, oid: str, confidence: float = 0.1) -> None:
        self.objects[oid]["confidence"] = confidence

    def reveal(self, oid: str, confidence: float = 1.0) -> None:
        self.objects[oid]["confidence"] = confidence

    def snapshot(self) -> list[dict[str, Any]]:
        return [{"id": oid, **copy.deepcopy(obj)} for oid, obj in self.objects.items()]


Effect = Callable[[FakeScene, Command], None]


@dataclass(frozen=True)
class Script:
    """One execution of a skill.

    ``outcome``: ``control_done`` (finishes after ``duration_s``), ``aborted`` (gives up after
    ``duration_s`` with ``reason``), ``hang`` (runs and reports progress forever), ``silent``
    (accepted, then never a word), ``reject`` (refused at start with ``reason``).
    ``start_delay_s``: dispatch -> started. ``progress_every_s``: progress events while running.
    ``silent_after_s``: the executor goes quiet this long after starting (no event ever again).
    ``effect``: applied to the scene when the control action finishes (e.g. the object is now
    held); ``None`` changes nothing (a slip, a miss).
    """

    outcome: str = "control_done"
    duration_s: float = 0.1
    start_delay_s: float = 0.0
    progress_every_s: float | None = None
    silent_after_s: float | None = None
    reason: str = ""
    effect: Effect | None = None

    def __post_init__(self) -> None:
        if self.outcome not in _OUTCOMES:
            raise DefinitionError("INVALID_SCRIPT", f"outcome {self.outcome!r} must be one of "
                                  f"{list(_OUTCOMES)}")
        for name in ("duration_s", "start_delay_s"):
            if getattr(self, name) < 0:
                raise DefinitionError("INVALID_SCRIPT", f"{name} must be >= 0")
        if self.progress_every_s is not None and self.progress_every_s <= 0:
            raise DefinitionError("INVALID_SCRIPT", "progress_every_s must be positive")


@dataclass
class _Exec:
    """The record of one command id. ``command`` is None for a burnt id (cancelled before its
    dispatch arrived); ``script`` is None for a record that never runs (refused or burnt);
    ``accepted`` is the original answer to its dispatch."""

    command_id: str
    command: Command | None
    script: Script | None
    state: RuntimeState
    accepted_at: float
    start_deadline: float | None
    accepted: bool = True
    started_at: float | None = None
    next_progress: float | None = None
    stop_at: float | None = None
    reason: str = ""
    seq: int = 0
    events: list[CommandEvent] = field(default_factory=list)


@dataclass
class _Fault:
    kind: str
    skill: str | None
    event: str | None
    times: int
    by_s: float = 0.0

    def matches(self, skill: str, event: str) -> bool:
        return self.times > 0 and self.skill in (None, skill) and self.event in (None, event)


class FakeRuntime:
    """A real in-memory :class:`~harness_bt.RuntimeBridge` (see the module docstring).

    Records for assertions: ``dispatch_calls`` (every dispatch, resends included), ``received``
    (commands accepted, once per id), ``starts`` (executions started, per skill), ``effects``
    (command ids whose effect was applied), ``cancel_calls``.
    """

    def __init__(self, clock: Clock, *, scene: FakeScene | None = None,
                 stop_delay_s: float = 0.05, confirm_stops: bool = True,
                 observe: bool = True, camera: str = "front", worker_id: str = "0",
                 default: Script | None = None) -> None:
        self.clock = clock
        self.scene = scene or FakeScene()
        self.stop_delay_s = stop_delay_s
        self.confirm_stops = confirm_stops
        self.observe = observe
        self.camera = camera
        self.worker_id = worker_id
        self.default = default or Script()
        self.epoch = 0  # the newest control epoch accepted; older epochs are refused
        self.timestep = 0
        self.closed = False
        self.fail_transport = 0
        self._scripts: dict[str, list[Script]] = {}
        self._execs: dict[str, _Exec] = {}
        self._faults: list[_Fault] = []
        self._late: list[tuple[float, CommandEvent]] = []
        self._outbox: list[CommandEvent] = []
        self._timed: list[tuple[float, Callable[[FakeScene], None]]] = []
        self._notices: list[BridgeNotice] = []
        self.dispatch_calls: list[str] = []
        self.received: list[Command] = []
        self.starts: dict[str, int] = {}
        self.effects: list[str] = []
        self.cancel_calls: list[str] = []

    # ------------------------------------------------------------------ scripting

    def script(self, skill: str, *scripts: Script | str) -> None:
        """Queue executions for ``skill``, consumed one per new command; the last repeats."""
        if not scripts:
            raise DefinitionError("INVALID_SCRIPT", f"script({skill!r}) needs at least one")
        self._scripts[skill] = [s if isinstance(s, Script) else Script(outcome=s)
                                for s in scripts]

    def at(self, t: float, change: Callable[[FakeScene], None]) -> None:
        """Change the scene once the clock reaches ``t`` (before that poll's observation)."""
        self._timed.append((t, change))
        self._timed.sort(key=lambda x: x[0])

    def drop(self, *, event: str | None = None, skill: str | None = None, times: int = 1) -> None:
        """Lose the next ``times`` matching events (the runtime's record keeps them)."""
        self._faults.append(_Fault("drop", skill, event, times))

    def duplicate(self, *, event: str | None = None, skill: str | None = None,
                  times: int = 1) -> None:
        """Deliver the next ``times`` matching events twice."""
        self._faults.append(_Fault("duplicate", skill, event, times))

    def delay(self, *, by_s: float, event: str | None = None, skill: str | None = None,
              times: int = 1) -> None:
        """Deliver the next ``times`` matching events ``by_s`` late (after later ones)."""
        self._faults.append(_Fault("delay", skill, event, times, by_s))

    def notice(self, kind: str, **data: Any) -> None:
        self._notices.append(BridgeNotice(kind, self.worker_id, dict(data)))

    def state_of(self, command_id: str) -> RuntimeState:
        ex = self._execs.get(command_id)
        return RuntimeState.NOT_FOUND if ex is None else ex.state

    def running(self) -> list[str]:
        return [cid for cid, ex in self._execs.items()
                if ex.state in (RuntimeState.PENDING, RuntimeState.RUNNING, RuntimeState.STOPPING)]

    # ------------------------------------------------------------------ RuntimeBridge

    def _transport(self, route: str) -> None:
        if self.closed:
            raise BridgeError("CLOSED", f"fake runtime is closed ({route})", where=route)
        if self.fail_transport > 0:
            self.fail_transport -= 1
            raise BridgeError("TRANSPORT_FAILED", f"injected transport failure on {route}",
                              where=route)

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        self._transport("dispatch")
        now = self.clock.monotonic()
        cid = command.command_id
        self.dispatch_calls.append(cid)
        old = self._execs.get(cid)
        if old is not None:
            if old.command is not None and old.command.digest != command.digest:
                return Ack(cid, False, RuntimeState.REJECTED, f"COMMAND_ID_CONFLICT: id {cid!r} "
                           "is taken by a command of other content; a changed command needs a "
                           "new id")
            return Ack(cid, old.accepted, old.state, old.reason, duplicate=True)
        if command.epoch < self.epoch:
            return self._refuse(command, now, f"STALE_EPOCH: command epoch {command.epoch} is "
                                f"older than the runtime's epoch {self.epoch}; a newer "
                                "controller has taken over")
        self.epoch = command.epoch
        if start_budget_ms is not None and start_budget_ms <= 0:
            return self._refuse(command, now, "EXPIRED_COMMAND")
        queue = self._scripts.get(command.skill)
        script = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else self.default
        deadline = None if start_budget_ms is None else now + start_budget_ms / 1000.0
        self._execs[cid] = _Exec(cid, command, script, RuntimeState.PENDING, now, deadline)
        self.received.append(command)
        return Ack(cid, True, RuntimeState.PENDING)

    def _refuse(self, command: Command, now: float, reason: str) -> Ack:
        """Refuse ``command`` and remember it, so a resend is refused the same way."""
        cid = command.command_id
        self._execs[cid] = _Exec(cid, command, None, RuntimeState.REJECTED, now, None,
                                 accepted=False, reason=reason)
        return Ack(cid, False, RuntimeState.REJECTED, reason)

    def cancel(self, command_id: str) -> Ack:
        self._transport("cancel")
        now = self.clock.monotonic()
        self.cancel_calls.append(command_id)
        ex = self._execs.get(command_id)
        if ex is None:  # burn the id: a dispatch of it that arrives later never runs
            ex = _Exec(command_id, None, None, RuntimeState.STOPPED, now, None, accepted=False,
                       reason="CANCELED_BEFORE_RECEIPT")
            self._execs[command_id] = ex
            self._emit(ex, EventKind.STOPPED.value, ex.reason)
            return Ack(command_id, True, RuntimeState.STOPPED, ex.reason)
        if ex.state.finished:
            return Ack(command_id, False, ex.state, f"ALREADY_FINISHED: {ex.reason}")
        if ex.state is RuntimeState.STOPPING:
            return Ack(command_id, True, ex.state, ex.reason, duplicate=True)
        ex.state = RuntimeState.STOPPING
        ex.reason = "CANCEL_REQUESTED"
        ex.stop_at = now + self.stop_delay_s
        return Ack(command_id, True, ex.state, ex.reason)

    def query(self, command_id: str) -> RuntimeStatus:
        self._transport("query")
        ex = self._execs.get(command_id)
        if ex is None:
            return RuntimeStatus(command_id, RuntimeState.NOT_FOUND, "UNKNOWN_COMMAND")
        return RuntimeStatus(command_id, ex.state, ex.reason, ex.seq, tuple(ex.events))

    def poll(self) -> PollResult:
        self._transport("poll")
        now = self.clock.monotonic()
        while self._timed and self._timed[0][0] <= now:
            _, change = self._timed.pop(0)
            change(self.scene)
        for ex in list(self._execs.values()):
            self._advance(ex, now)
        due = [ev for t, ev in self._late if t <= now]
        self._late = [(t, ev) for t, ev in self._late if t > now]
        events = tuple(self._outbox + due)
        self._outbox = []
        observations: tuple[Observation, ...] = ()
        if self.observe:
            self.timestep += 1
            observations = (self.observation(),)
        notices = tuple(self._notices)
        self._notices = []
        return PollResult(events, observations, notices)

    def close(self) -> None:
        self.closed = True

    # ------------------------------------------------------------------ simulation

    def observation(self) -> Observation:
        w = self.scene.gripper_width / 2.0
        joints = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8, w, w])
        frame = CameraFrame(rgb=None, depth=None, intrinsics=np.eye(3),
                            position=np.array([1.0, 0.0, 1.0]),
                            quaternion_wxyz=np.array([1.0, 0.0, 0.0, 0.0]))
        ee = EePose(np.array(self.scene.ee_position), np.array([1.0, 0.0, 0.0, 0.0]))
        objects = self.scene.snapshot()
        for obj in objects:
            obj.setdefault("camera", self.camera)
        return Observation(cameras={self.camera: frame}, joint_positions=joints,
                           ee_poses=(ee,), instruction="", timestep=self.timestep, reset=False,
                           worker_id=self.worker_id, extras={"objects": objects})

    def _emit(self, ex: _Exec, kind: str, reason: str = "", progress: float | None = None
              ) -> None:
        ex.seq += 1
        ev = CommandEvent(ex.command_id, ex.seq, kind, reason=reason, progress=progress,
                          timestep=self.timestep)
        ex.events.append(ev)
        skill = "" if ex.command is None else ex.command.skill
        for fault in self._faults:
            if fault.matches(skill, kind):
                fault.times -= 1
                if fault.kind == "drop":
                    return
                if fault.kind == "duplicate":
                    self._outbox.extend([ev, ev])
                    return
                self._late.append((self.clock.monotonic() + fault.by_s, ev))
                return
        self._outbox.append(ev)

    def _advance(self, ex: _Exec, now: float) -> None:
        sc = ex.script
        if sc is None or ex.command is None or ex.state.finished:
            return
        if ex.state is RuntimeState.STOPPING:
            if self.confirm_stops and ex.stop_at is not None and now >= ex.stop_at:
                ex.state = RuntimeState.STOPPED
                self._emit(ex, EventKind.STOPPED.value, ex.reason)  # CANCEL_REQUESTED
            return
        if ex.state is RuntimeState.PENDING:
            if sc.outcome == "silent" or now < ex.accepted_at + sc.start_delay_s:
                return
            if sc.outcome == "reject" or (ex.start_deadline is not None
                                          and now > ex.start_deadline):
                ex.state = RuntimeState.REJECTED
                ex.reason = sc.reason or "EXPIRED_COMMAND"
                self._emit(ex, EventKind.REJECTED.value, ex.reason)
                return
            ex.state = RuntimeState.RUNNING
            ex.started_at = now
            self.starts[ex.command.skill] = self.starts.get(ex.command.skill, 0) + 1
            self._emit(ex, EventKind.STARTED.value)
            if sc.progress_every_s is not None:
                ex.next_progress = now + sc.progress_every_s
        if ex.state is not RuntimeState.RUNNING or ex.started_at is None:
            return
        if sc.silent_after_s is not None and now - ex.started_at >= sc.silent_after_s:
            return
        if ex.next_progress is not None and sc.progress_every_s is not None:
            while ex.next_progress <= now and (sc.outcome == "hang"
                                               or ex.next_progress < ex.started_at + sc.duration_s):
                done = min(1.0, (ex.next_progress - ex.started_at) / max(sc.duration_s, 1e-9))
                self._emit(ex, EventKind.PROGRESS.value, progress=round(done, 6))
                ex.next_progress += sc.progress_every_s
        if sc.outcome == "hang" or now < ex.started_at + sc.duration_s:
            return
        if sc.outcome == "aborted":
            ex.state = RuntimeState.ABORTED
            ex.reason = sc.reason or "ABORTED"
            self._emit(ex, EventKind.ABORTED.value, ex.reason)
            return
        if sc.effect is not None:
            sc.effect(self.scene, ex.command)
        self.effects.append(ex.command_id)
        ex.state = RuntimeState.CONTROL_DONE
        ex.reason = "CONTROL_DONE"
        self._emit(ex, EventKind.CONTROL_DONE.value, ex.reason)
