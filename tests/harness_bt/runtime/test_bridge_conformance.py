"""The RuntimeBridge contract, held against every runtime the harness talks to.

Each test runs three times, once per implementation of
:class:`harness_bt.runtime.bridge.RuntimeBridge`:

- ``fake``: :class:`harness_bt.testing.FakeRuntime` on a :class:`FakeClock`;
- ``inproc``: :class:`runtime_bridge.inproc.InProcRuntime` over a :class:`KinematicBackend`
  (its :class:`SimClock` advanced one control period per poll);
- ``zmq``: :class:`runtime_bridge.zmq.ZmqBridge` to a real :class:`RuntimeServer` on loopback
  (random ports, a fresh ``zmq.Context`` that must terminate, real time: waits are bounded).

A small :class:`Rig` drives each the same way: it builds the command for a *job* (``short``
finishes by itself, ``endless`` runs until cancelled, ``failing`` gives up with ``IK_FAILED``),
advances one control period per poll, keeps what ``poll()`` delivered, and counts executions.
Reason codes are compared as codes: the text before the first ``:``.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import zmq

from harness_bt.clock import FakeClock
from harness_bt.errors import reason_code
from harness_bt.ledger import Command, CommandEvent, CommandState, EventKind, Ledger
from harness_bt.runtime.bridge import PollResult, RuntimeBridge, RuntimeState, RuntimeStatus
from harness_bt.testing import FakeRuntime, Script
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import HostConfig
from runtime_bridge.host.record import RuntimeReason
from runtime_bridge.inproc import InProcRuntime
from runtime_bridge.zmq import RuntimeServer, RuntimeServerConfig, ZmqBridge, ZmqBridgeConfig
from tests.runtime_bridge import executors

DT = 0.01  # one control period (s), on every runtime
LOOPBACK = "tcp://127.0.0.1"
MAX_POLLS = 150  # per wait: a few control periods are enough; the ZeroMQ rig sleeps DT per poll
TERMINAL = frozenset({EventKind.CONTROL_DONE, EventKind.ABORTED, EventKind.STOPPED,
                      EventKind.REJECTED})
LIFECYCLE = frozenset(EventKind) - {EventKind.PROGRESS}

#: what the host-based runtimes run for each job (skill and params of tests/runtime_bridge's
#: tiny executors) and what FakeRuntime is scripted to do for it (its scripts go by skill name)
HOST_JOBS: dict[str, tuple[str, dict[str, Any]]] = {
    "short": ("wait", {"steps": 3}),
    "endless": ("wait", {"steps": 1_000_000}),
    "failing": ("abort_after", {"steps": 2, "reason": "IK_FAILED"}),
}
FAKE_SCRIPTS = {
    "short": Script(duration_s=3 * DT, progress_every_s=DT),
    "endless": Script(outcome="hang", progress_every_s=DT),
    "failing": Script(outcome="aborted", duration_s=2 * DT, reason="IK_FAILED"),
}


# ---------------------------------------------------------------------------------- the rigs


@dataclass
class Rig:
    """One runtime under test, driven the same way whatever it is."""

    name: str
    bridge: RuntimeBridge
    tick: Callable[[], object]  # let one control period pass
    job: Callable[[str], tuple[str, dict[str, Any]]]  # job -> (skill, params)
    executions: Callable[[str], int]  # how many times the runtime set out to run a command id
    lose_everything: Callable[[], None] = lambda: None  # make the runtime lose its deliveries
    delivered: list[CommandEvent] = field(default_factory=list)

    def command(self, cid: str, job: str = "short", *, epoch: int = 0,
                resources: tuple[str, ...] = ("arm",), variant: int = 0) -> Command:
        skill, params = self.job(job)
        if variant:
            params = {**params, "variant": variant}
        return Command(command_id=cid, task_id="conformance", robot_id="panda", skill=skill,
                       params=params, resources=resources, world_version=1,
                       start_within_ms=5_000, execution_timeout_ms=60_000, epoch=epoch)

    def poll(self, *, lose: bool = False) -> PollResult:
        """One control period, then one poll; its events are kept unless ``lose``."""
        self.tick()
        got = self.bridge.poll()
        if not lose:
            self.delivered.extend(got.events)
        return got

    def poll_until(self, done: Callable[[], bool], *, lose: bool = False,
                   max_polls: int = MAX_POLLS) -> None:
        for _ in range(max_polls):
            if done():
                return
            self.poll(lose=lose)
        if not done():
            raise AssertionError(f"{self.name}: still waiting after {max_polls} polls")

    def polls(self, n: int) -> None:
        for _ in range(n):
            self.poll()

    def finished(self, cid: str) -> bool:
        return self.bridge.query(cid).state.finished

    def delivered_for(self, cid: str) -> list[CommandEvent]:
        return [e for e in self.delivered if e.command_id == cid]

    def delivered_kind(self, cid: str, kind: EventKind) -> bool:
        return any(e.kind is kind for e in self.delivered_for(cid))


@contextmanager
def fake_rig() -> Iterator[Rig]:
    clock = FakeClock()
    rt = FakeRuntime(clock, observe=False, stop_delay_s=DT)
    for job, script in FAKE_SCRIPTS.items():
        rt.script(job, script)
    try:
        yield Rig("fake", rt, lambda: clock.advance(DT), lambda job: (job, {}),
                  lambda cid: sum(c.command_id == cid for c in rt.received),
                  lambda: rt.drop(times=1_000_000))
    finally:
        rt.close()


@contextmanager
def inproc_rig() -> Iterator[Rig]:
    rt = InProcRuntime(KinematicBackend(dt=DT), executors.factory)
    try:
        rt.start_episode()
        rt.poll()  # delivers the reset observation; each later poll steps once
        yield Rig("inproc", rt, rt.clock.step, HOST_JOBS.__getitem__,
                  lambda cid: executors.STARTS[cid])
    finally:
        rt.close()


@contextmanager
def zmq_rig() -> Iterator[Rig]:
    ctx = zmq.Context()
    try:
        server = RuntimeServer(
            KinematicBackend(dt=DT), executors.factory,
            RuntimeServerConfig(bind=f"{LOOPBACK}:*", telemetry=f"{LOOPBACK}:*", journal=None,
                                host=HostConfig(lease_s=None)),
            context=ctx)
        try:
            endpoints = server.start()
            bridge = ZmqBridge(ZmqBridgeConfig(endpoint=endpoints["bind"]), context=ctx)
            try:
                yield Rig("zmq", bridge, lambda: time.sleep(DT), HOST_JOBS.__getitem__,
                          lambda cid: executors.STARTS[cid])
            finally:
                bridge.close()
        finally:
            server.stop()
    finally:
        terminating = threading.Thread(target=ctx.term, daemon=True)
        terminating.start()
        terminating.join(5.0)
        assert not terminating.is_alive(), "the zmq context did not terminate: a socket is open"


RIGS = {"fake": fake_rig, "inproc": inproc_rig, "zmq": zmq_rig}


@pytest.fixture(params=list(RIGS))
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    executors.STARTS.clear()
    with RIGS[request.param]() as made:
        yield made


# Where ExecutorHost (and so InProcRuntime and ZmqBridge) differs from the protocol.
def seqs_of(events: list[CommandEvent] | tuple[CommandEvent, ...]) -> list[int]:
    return [e.seq for e in events]


def strictly_increasing(values: list[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


# ---------------------------------------------------------------------------------- dispatch


def test_a_resent_dispatch_returns_the_original_answer_marked_duplicate_and_runs_once(
        rig: Rig) -> None:
    cmd = rig.command("c1")
    first = rig.bridge.dispatch(cmd)
    assert (first.command_id, first.accepted, first.state, first.duplicate) == (
        "c1", True, RuntimeState.PENDING, False)
    again = rig.bridge.dispatch(cmd)
    assert (again.command_id, again.accepted, again.duplicate) == ("c1", True, True)

    rig.poll_until(lambda: rig.finished("c1"))
    late = rig.bridge.dispatch(cmd)
    assert (late.accepted, late.state, late.duplicate) == (True, RuntimeState.CONTROL_DONE, True)
    rig.polls(3)
    assert rig.executions("c1") == 1
    record = rig.bridge.query("c1")
    assert [str(e.kind) for e in record.events if e.kind in LIFECYCLE] == [
        "started", "control_done"]


def test_a_resent_refused_dispatch_is_refused_the_same_way_and_never_runs(rig: Rig) -> None:
    cmd = rig.command("late")
    refused = rig.bridge.dispatch(cmd, start_budget_ms=0)
    assert (refused.accepted, refused.state, reason_code(refused.reason), refused.duplicate) == (
        False, RuntimeState.REJECTED, RuntimeReason.EXPIRED_COMMAND, False)
    again = rig.bridge.dispatch(cmd, start_budget_ms=5_000)  # a fresh budget changes nothing
    assert (again.accepted, again.state, reason_code(again.reason), again.duplicate) == (
        False, RuntimeState.REJECTED, RuntimeReason.EXPIRED_COMMAND, True)
    rig.polls(5)
    status = rig.bridge.query("late")
    assert (status.state, reason_code(status.reason)) == (
        RuntimeState.REJECTED, RuntimeReason.EXPIRED_COMMAND)
    assert rig.executions("late") == 0


@pytest.mark.parametrize("rig", ["fake", "inproc", pytest.param("zmq", marks=pytest.mark.skip(
    reason="in real time, a start budget cannot be made to run out before the server's next "
    "control step deterministically"))], indirect=True)
def test_a_resend_after_the_start_budget_ran_out_answers_the_original_acceptance(
        rig: Rig) -> None:
    cmd = rig.command("slow")
    assert rig.bridge.dispatch(cmd, start_budget_ms=DT * 1000 / 2).accepted
    rig.poll_until(lambda: rig.delivered_kind("slow", EventKind.REJECTED))
    resend = rig.bridge.dispatch(cmd)
    assert (resend.accepted, resend.state, reason_code(resend.reason), resend.duplicate) == (
        True, RuntimeState.REJECTED, RuntimeReason.EXPIRED_COMMAND, True)
    status = rig.bridge.query("slow")
    assert [str(e.kind) for e in status.events] == ["rejected"]


def test_the_same_id_with_other_content_is_refused_as_a_command_id_conflict(rig: Rig) -> None:
    original = rig.command("c1")
    assert rig.bridge.dispatch(original).accepted
    other = rig.command("c1", variant=2)
    assert other.digest != original.digest
    conflict = rig.bridge.dispatch(other)
    assert (conflict.command_id, conflict.accepted, reason_code(conflict.reason)) == (
        "c1", False, RuntimeReason.COMMAND_ID_CONFLICT)
    assert conflict.duplicate is False

    rig.poll_until(lambda: rig.finished("c1"))  # the original runs on, untouched
    assert rig.bridge.query("c1").state is RuntimeState.CONTROL_DONE
    assert rig.executions("c1") == 1
    resend = rig.bridge.dispatch(original)
    assert (resend.accepted, resend.duplicate) == (True, True)


def test_a_command_of_an_older_epoch_is_refused_once_a_newer_epoch_was_accepted(
        rig: Rig) -> None:
    assert rig.bridge.dispatch(rig.command("new", epoch=2)).accepted
    stale = rig.bridge.dispatch(rig.command("old", epoch=1, resources=("gripper",)))
    assert (stale.command_id, stale.accepted, stale.state, reason_code(stale.reason)) == (
        "old", False, RuntimeState.REJECTED, RuntimeReason.STALE_EPOCH)
    same = rig.bridge.dispatch(rig.command("same", epoch=2, resources=("base",)))
    assert same.accepted  # the newest epoch still commands

    rig.poll_until(lambda: rig.finished("new") and rig.finished("same"))
    status = rig.bridge.query("old")
    assert (status.state, reason_code(status.reason)) == (
        RuntimeState.REJECTED, RuntimeReason.STALE_EPOCH)
    assert [rig.executions(cid) for cid in ("new", "old", "same")] == [1, 0, 1]
    resend = rig.bridge.dispatch(rig.command("old", epoch=1, resources=("gripper",)))
    assert (resend.accepted, reason_code(resend.reason)) == (False, RuntimeReason.STALE_EPOCH)


# ---------------------------------------------------------------------------------- events


def test_event_sequence_numbers_of_a_command_start_at_1(rig: Rig) -> None:
    assert rig.bridge.dispatch(rig.command("c1")).accepted
    rig.poll_until(lambda: rig.delivered_kind("c1", EventKind.CONTROL_DONE))
    first = rig.bridge.query("c1").events[0]
    assert (str(first.kind), first.seq) == ("started", 1)
    assert min(seqs_of(rig.delivered_for("c1"))) == 1


def test_delivered_event_sequence_numbers_are_per_command_and_strictly_increasing(
        rig: Rig) -> None:
    jobs = {"a": ("short", ("arm",)), "b": ("failing", ("gripper",)), "c": ("short", ("base",))}
    for cid, (job, resources) in jobs.items():
        assert rig.bridge.dispatch(rig.command(cid, job, resources=resources)).accepted
    rig.poll_until(lambda: all(any(e.kind in TERMINAL for e in rig.delivered_for(cid))
                               for cid in jobs))
    rig.polls(3)  # nothing more may come

    for cid in jobs:
        seqs = seqs_of(rig.delivered_for(cid))
        assert strictly_increasing(seqs), f"{cid}: {seqs}"
        last = rig.delivered_for(cid)[-1]
        assert last.kind in TERMINAL and last.seq == rig.bridge.query(cid).last_seq
    every = [(e.command_id, e.seq) for e in rig.delivered]
    assert len(every) == len(set(every)), "an event was delivered twice"


# ---------------------------------------------------------------------------------- cancel


def test_cancelling_a_running_command_is_confirmed_by_a_stopped_event(rig: Rig) -> None:
    assert rig.bridge.dispatch(rig.command("c1", "endless")).accepted
    rig.poll_until(lambda: rig.bridge.query("c1").state is RuntimeState.RUNNING)
    ack = rig.bridge.cancel("c1")
    assert (ack.command_id, ack.accepted, ack.state, reason_code(ack.reason)) == (
        "c1", True, RuntimeState.STOPPING, RuntimeReason.CANCEL_REQUESTED)

    rig.poll_until(lambda: rig.delivered_kind("c1", EventKind.STOPPED))
    stopped = rig.delivered_for("c1")[-1]
    assert (stopped.kind, reason_code(stopped.reason)) == (
        EventKind.STOPPED, RuntimeReason.CANCEL_REQUESTED)
    status = rig.bridge.query("c1")
    assert (status.state, reason_code(status.reason)) == (
        RuntimeState.STOPPED, RuntimeReason.CANCEL_REQUESTED)
    assert (status.events[-1].kind, status.events[-1].seq) == (EventKind.STOPPED, stopped.seq)


def test_cancelling_an_unknown_id_burns_it_so_a_late_dispatch_never_runs(rig: Rig) -> None:
    ack = rig.bridge.cancel("ghost")
    assert (ack.command_id, ack.accepted, ack.state, reason_code(ack.reason)) == (
        "ghost", True, RuntimeState.STOPPED, RuntimeReason.CANCELED_BEFORE_RECEIPT)
    late = rig.bridge.dispatch(rig.command("ghost"))
    assert (late.accepted, late.state, reason_code(late.reason), late.duplicate) == (
        False, RuntimeState.STOPPED, RuntimeReason.CANCELED_BEFORE_RECEIPT, True)

    rig.poll_until(lambda: rig.delivered_kind("ghost", EventKind.STOPPED))
    rig.polls(5)
    assert rig.executions("ghost") == 0
    status = rig.bridge.query("ghost")
    assert (status.state, reason_code(status.reason)) == (
        RuntimeState.STOPPED, RuntimeReason.CANCELED_BEFORE_RECEIPT)
    assert [str(e.kind) for e in status.events] == ["stopped"]


def test_cancelling_a_finished_command_is_refused_as_already_finished(rig: Rig) -> None:
    assert rig.bridge.dispatch(rig.command("c1")).accepted
    rig.poll_until(lambda: rig.finished("c1"))
    before = rig.bridge.query("c1")
    ack = rig.bridge.cancel("c1")
    assert (ack.accepted, ack.state, reason_code(ack.reason)) == (
        False, RuntimeState.CONTROL_DONE, RuntimeReason.ALREADY_FINISHED)
    rig.polls(3)
    assert rig.bridge.query("c1") == before


# ---------------------------------------------------------------------------------- query


def test_a_query_changes_nothing_and_reports_an_unknown_id_as_not_found(rig: Rig) -> None:
    unknown = rig.bridge.query("nobody")
    assert (unknown.command_id, unknown.state, reason_code(unknown.reason), unknown.events) == (
        "nobody", RuntimeState.NOT_FOUND, RuntimeReason.UNKNOWN_COMMAND, ())
    assert rig.bridge.query("nobody") == unknown
    rig.polls(2)
    assert rig.delivered_for("nobody") == []

    ack = rig.bridge.dispatch(rig.command("nobody"))  # the queries left no record behind
    assert (ack.accepted, ack.duplicate) == (True, False)
    rig.poll_until(lambda: rig.delivered_kind("nobody", EventKind.CONTROL_DONE))
    final = rig.bridge.query("nobody")
    seen = len(rig.delivered)
    assert [rig.bridge.query("nobody") for _ in range(3)] == [final] * 3
    rig.polls(3)
    assert rig.delivered[seen:] == [], "a query made the runtime report something"
    assert rig.executions("nobody") == 1


@pytest.mark.parametrize(("job", "state", "reason", "terminal"), [
    ("short", RuntimeState.CONTROL_DONE, "CONTROL_DONE", EventKind.CONTROL_DONE),
    ("failing", RuntimeState.ABORTED, "IK_FAILED", EventKind.ABORTED),
])
def test_a_finished_command_s_query_returns_its_final_state_reason_and_events(
        rig: Rig, job: str, state: RuntimeState, reason: str, terminal: EventKind) -> None:
    assert rig.bridge.dispatch(rig.command("c1", job)).accepted
    rig.poll_until(lambda: rig.delivered_kind("c1", terminal))
    status = rig.bridge.query("c1")
    assert (status.state, reason_code(status.reason)) == (state, reason)
    assert_replayable(status, terminal)
    kept = {(e.seq, e.kind) for e in status.events}
    missing = [e for e in rig.delivered_for("c1") if e.kind in LIFECYCLE
               and (e.seq, e.kind) not in kept]
    assert missing == [], "query must replay every lifecycle event poll delivered"


def assert_replayable(status: RuntimeStatus, terminal: EventKind) -> None:
    """What reconciliation needs from a finished command's record: its lifecycle from start to
    end, in sequence order, ending at ``last_seq``."""
    assert [e.kind for e in status.events if e.kind in LIFECYCLE] == [EventKind.STARTED,
                                                                       terminal]
    assert strictly_increasing(seqs_of(status.events))
    assert status.events[-1].seq == status.last_seq
    assert {e.command_id for e in status.events} == {status.command_id}


@pytest.mark.parametrize(("job", "state", "reason", "ledger_state"), [
    ("short", RuntimeState.CONTROL_DONE, "CONTROL_DONE", CommandState.EVALUATING),
    ("failing", RuntimeState.ABORTED, "IK_FAILED", CommandState.FAILED),
])
def test_a_harness_that_lost_every_event_learns_the_outcome_from_query_alone(
        rig: Rig, job: str, state: RuntimeState, reason: str, ledger_state: CommandState
) -> None:
    ledger = Ledger()
    cmd = rig.command("lost", job)
    ledger.submit(cmd, now=0.0)
    ledger.dispatch("lost", now=0.0)
    rig.lose_everything()
    assert rig.bridge.dispatch(cmd).accepted
    rig.poll_until(lambda: rig.finished("lost"), lose=True)
    for _ in range(3):  # whatever was still on its way is lost too: the harness heard nothing
        rig.poll(lose=True)

    status = rig.bridge.query("lost")
    assert (status.state, reason_code(status.reason)) == (state, reason)
    terminal = EventKind.CONTROL_DONE if job == "short" else EventKind.ABORTED
    assert_replayable(status, terminal)
    for event in status.events:
        ledger.apply(event, now=0.0)
    assert ledger.get("lost").state is ledger_state
