"""Steering a run from the console: pause / resume, single tick, breakpoints and the stop.

A :class:`RunControl` is a :class:`~harness_bt.run.episodes.RunWatch`: every request reaches
it from the console's thread through a queue and is applied on the run's own thread, at a safe
point (after a tick, or while the run is held before or after a node with a breakpoint), and
traced there as a ``control`` event with who asked and when. Nothing here can keep a run from
stopping: once a stop is asked for (or the run drains on its own) no breakpoint holds and no
pause waits; the stop itself is :meth:`~harness_bt.run.runner.TaskRunner.stop`, so it cancels
through the ledger like any other stop, and the console reports its stages from the trace.

Holding: while paused the run does not tick (against a step-driven simulator the simulation
waits too; a robot runtime keeps its own protection). A breakpoint *before* a node holds the
run inside the tick, just before that node ticks; *change* holds it right after the node
ticked, when its status differs from before. From a hold, ``step`` finishes the tick and
pauses before the next one; a stop asked for there takes effect when that tick ends.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import py_trees

from harness_bt.events import TraceKind
from harness_bt.nodes.base import iter_nodes
from harness_bt.run.loop import RunPhase
from harness_bt.run.runner import TaskRunner
from harness_bt.world import Perception

__all__ = ["Breakpoint", "Request", "RunControl"]

#: What a run stopped from the console ends with (outcome, reason).
STOPPED = ("aborted", "aborted_stopped")
#: The most requests waiting for the run at once (more are refused, see ``submit``).
MAX_QUEUED = 64


@dataclass(frozen=True)
class Breakpoint:
    """Hold the run at node ``path`` of phase ``phase``: before it ticks, and / or when a
    tick changes its status."""

    phase: str
    path: str
    before: bool = True
    change: bool = False

    @property
    def key(self) -> str:
        return f"{self.phase}:{self.path}"


@dataclass
class Request:
    """One control request: ``op`` (pause, resume, step, break, clear, stop), its
    ``breakpoint`` (break / clear), who asked (``who``: client, peer address, agent) and
    when (``received_wall``); ``reply`` is called (from the run's thread) with the answer."""

    op: str
    who: dict[str, Any] = field(default_factory=dict)
    breakpoint: Breakpoint | None = None
    id: Any = None
    received_wall: float = field(default_factory=time.time)
    reply: Callable[[dict[str, Any]], None] = lambda _: None


class RunControl:
    """The run-side half of the console (see the module docstring). ``start_paused``: hold
    the run after its first tick until someone resumes or steps it. ``on_change`` is called
    (from the run's thread) whenever :attr:`status` changed; ``perceive`` wraps the run's
    perception (the console's cameras)."""

    def __init__(self, *, start_paused: bool = False,
                 on_change: Callable[[dict[str, Any]], None] | None = None,
                 perceive: Callable[[Perception], Perception] | None = None) -> None:
        self.max_queued = MAX_QUEUED
        self._inbox: queue.Queue[Request] = queue.Queue(MAX_QUEUED)
        self._lock = threading.Lock()
        self._paused = start_paused
        self._stepping = False
        self._stop: Request | None = None
        self._breaks: dict[str, Breakpoint] = {}
        self._nodes: dict[str, py_trees.behaviour.Behaviour] = {}
        self._wrapped: set[str] = set()
        self._runner: TaskRunner | None = None
        self._closed = False
        self._on_change = on_change or (lambda _: None)
        self._perceive = perceive
        self.held_at: dict[str, Any] | None = None
        self.status: dict[str, Any] = {"paused": start_paused, "held": None, "breakpoints": [],
                                       "stop": None, "tick": 0}

    # ------------------------------------------------------------ from the console's thread

    def submit(self, request: Request) -> bool:
        """Queue a request for the run's thread (never blocks); False when ``MAX_QUEUED``
        requests already wait (the request is not queued)."""
        try:
            self._inbox.put_nowait(request)
        except queue.Full:
            return False
        return True

    def waiting(self) -> int:
        """How many requests wait for the run."""
        return self._inbox.qsize()

    def answer_waiting(self, why: str) -> None:
        """Answer every waiting request ``RUN_OVER`` (the run will not read them)."""
        while True:
            try:
                r = self._inbox.get_nowait()
            except queue.Empty:
                return
            r.reply({"type": "ack", "id": r.id, "op": r.op, "ok": False, "error": "RUN_OVER",
                     "message": f"cannot {r.op}: {why}"})

    def close(self) -> None:
        """Let go of a held run for good (the console is going away): it runs on unheld."""
        self._closed = True
        with contextlib.suppress(queue.Full):  # a held run also sees _closed within 0.5 s
            self._inbox.put_nowait(Request("resume", who={"client": "console",
                                                          "reason": "closed"}))

    # ------------------------------------------------------------ RunWatch (the run's thread)

    def perception(self, perceive: Perception) -> Perception:
        return perceive if self._perceive is None else self._perceive(perceive)

    def attach(self, runner: TaskRunner, index: int) -> None:
        """A new episode's runner: its nodes found by phase and path, breakpoints set."""
        self._runner = runner
        self._stop = None
        self._stepping = False
        self._wrapped.clear()
        self._nodes = {f"{pid}:{getattr(node, 'harness_path', node.name)}": node
                       for pid, root in runner.trees.items() for node in iter_nodes(root)}
        for key in self._breaks:
            self._wrap(key)
        self._publish(runner)

    def ticked(self, runner: TaskRunner) -> None:
        """After every tick: apply what was asked; hold while paused; stop when asked."""
        self._drain(runner)
        if self._stepping:
            self._stepping = False
            if self._live(runner):
                self._paused = True
                self._trace(runner, "paused", why="step done")
        while self._paused and self._live(runner) and self._stop is None and not self._closed:
            self._publish(runner)
            self._wait(runner)
        if self._stop is not None and runner.phase is RunPhase.RUNNING:
            self._stop_now(runner)
        self._publish(runner)

    # ------------------------------------------------------------ applying requests

    def _live(self, runner: TaskRunner) -> bool:
        return runner.phase.live

    def _drain(self, runner: TaskRunner) -> None:
        while True:
            try:
                request = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._apply(request, runner)

    def _wait(self, runner: TaskRunner) -> None:
        try:
            request = self._inbox.get(timeout=0.5)
        except queue.Empty:
            return
        self._apply(request, runner)
        self._drain(runner)

    def _apply(self, r: Request, runner: TaskRunner) -> None:
        answer: dict[str, Any] = {"type": "ack", "id": r.id, "op": r.op}
        if r.op == "pause":
            if self._paused or self._stop is not None or not self._live(runner):
                answer.update(ok=False, error="NOT_RUNNING" if not self._live(runner) else
                              "ALREADY_PAUSED", message=self._why_not(runner, "pause"))
            else:
                self._paused = True
                self._trace(runner, "pause", r)
        elif r.op == "resume":
            if not self._paused:
                answer.update(ok=False, error="NOT_PAUSED", message="the run is not paused")
            else:
                self._paused = self._stepping = False
                self.held_at = None
                self._trace(runner, "resume", r)
        elif r.op == "step":
            if not self._paused:
                answer.update(ok=False, error="NOT_PAUSED", message="a single tick needs a "
                              "paused run: pause it first")
            else:
                self._paused, self._stepping = False, True
                self._trace(runner, "step", r)
        elif r.op in ("break", "clear") and r.breakpoint is not None:
            bp = r.breakpoint
            if r.op == "break":
                self._breaks[bp.key] = bp
                self._wrap(bp.key)
            else:
                self._breaks.pop(bp.key, None)
            self._trace(runner, r.op, r, node=bp.key, before=bp.before, change=bp.change)
        elif r.op == "stop":
            if self._stop is not None or not runner.phase.live:
                answer.update(ok=False, error="ALREADY_STOPPING",
                              message=self._why_not(runner, "stop"))
            else:
                self._stop = r
                self._trace(runner, "stop", r, stage="requested")
        answer.setdefault("ok", True)
        answer["tick"] = runner.ticks
        self._publish(runner)
        r.reply(answer)

    def _why_not(self, runner: TaskRunner, op: str) -> str:
        if self._stop is not None:
            return f"cannot {op}: a stop was already asked for"
        if not runner.phase.live:
            state = "ending" if runner.phase is RunPhase.DRAINING else "over"
            return f"cannot {op}: the run is {state}"
        return f"cannot {op}: the run is already paused"

    def _stop_now(self, runner: TaskRunner) -> None:
        """The harness stops ticking: every active phase halted, open commands cancelled."""
        self._paused = self._stepping = False
        self.held_at = None
        asked = self._stop
        runner.stop(*STOPPED, by={"source": "console",
                                  "control": asked.op if asked is not None else "stop",
                                  **(dict(asked.who) if asked is not None else {})})
        self._trace(runner, "stopped", self._stop, stage="halted",
                    open=runner.open_commands())

    def _trace(self, runner: TaskRunner, op: str, r: Request | None = None, **data: Any) -> None:
        who = dict(r.who) if r is not None else {"client": "run"}
        when = r.received_wall if r is not None else None
        runner.note(TraceKind.CONTROL, op=op, who=who, received_wall=when, ticks=runner.ticks,
                    **data)

    def _publish(self, runner: TaskRunner) -> None:
        with self._lock:
            status = {"paused": self._paused and self._stop is None, "held": self.held_at,
                      "breakpoints": sorted(self._breaks), "tick": runner.ticks,
                      "stepping": self._stepping,
                      "stop": None if self._stop is None else "requested",
                      "phase": runner.phase.value}
            if status != self.status:
                self.status = status
                self._on_change(status)

    # ------------------------------------------------------------ breakpoints

    def _wrap(self, key: str) -> None:
        node = self._nodes.get(key)
        if node is None or key in self._wrapped:
            return
        self._wrapped.add(key)
        original = type(node).tick.__get__(node)

        def tick() -> Iterator[py_trees.behaviour.Behaviour]:
            bp = self._breaks.get(key)
            if bp is not None and bp.before:
                self._hold(key, "before", node)
            before = node.status
            for ticked in original():
                if ticked is node and bp is not None and bp.change and node.status != before \
                        and key in self._breaks:
                    self._hold(key, "change", node, before=before.value)
                yield ticked

        node.tick = tick  # type: ignore[method-assign]

    def _hold(self, key: str, when: str, node: py_trees.behaviour.Behaviour,
              **data: Any) -> None:
        runner = self._runner
        if runner is None or runner.phase is not RunPhase.RUNNING or self._stop is not None \
                or self._closed:
            return
        self.held_at = {"node": key, "when": when, "status": node.status.value, **data}
        self._paused, self._stepping = True, False
        self._trace(runner, "breakpoint", None, node=key, when=when, status=node.status.value,
                    **data)
        while self._paused and self._stop is None and not self._closed:
            self._publish(runner)
            self._wait(runner)
        self.held_at = None
        self._publish(runner)
