"""The executor host: idempotent submits, the control step, local protection, durability."""

from __future__ import annotations

import numpy as np
import pytest

from harness_bt.clock import FakeClock
from harness_bt.ledger import EventKind
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import ExecutorHost
from runtime_bridge.host.merge import HOLD_EE_DELTA
from tests.runtime_bridge.conftest import DT
from tests.runtime_bridge.executors import STARTS, command

HOLD_ARM = (list(HOLD_EE_DELTA[:3]), list(HOLD_EE_DELTA[3:]))


def run(host: ExecutorHost, clock: FakeClock, steps: int) -> list:
    out = []
    for _ in range(steps):
        clock.advance(DT)
        out.append(host.step())
    return out


def kinds(host: ExecutorHost, cid: str) -> list[tuple[int, str, str]]:
    return [(e.seq, str(e.kind), e.reason) for e in host.query(cid).events]


def test_move_to_runs_to_control_done_with_increasing_seq(make_host, clock, backend):
    host = make_host()
    ack = host.submit(command("m1", "move_to", target=[0.43, 0.0, 0.4], max_step=0.01))
    assert (ack.accepted, ack.state, ack.duplicate) == (True, RuntimeState.PENDING, False)
    results = run(host, clock, 5)
    np.testing.assert_allclose(backend.position, [0.43, 0.0, 0.4], atol=1e-12)
    status = host.query("m1")
    assert (status.state, status.reason) == (RuntimeState.CONTROL_DONE, "CONTROL_DONE")
    seqs = [e.seq for r in results for e in r.events]
    assert seqs == list(range(1, len(seqs) + 1))  # a command's events are numbered from 1
    assert [str(e.kind) for e in status.events] == ["started", "progress", "control_done"]
    assert status.last_seq == seqs[-1]
    assert STARTS["m1"] == 1


def test_resend_returns_the_original_state_and_never_runs_again(make_host, clock):
    host = make_host()
    host.submit(command("w1", "wait", steps=2))
    again = host.submit(command("w1", "wait", steps=2))
    assert (again.accepted, again.state, again.duplicate) == (True, RuntimeState.PENDING, True)
    run(host, clock, 4)
    late = host.submit(command("w1", "wait", steps=2))
    assert (late.accepted, late.state, late.duplicate) == (True, RuntimeState.CONTROL_DONE, True)
    run(host, clock, 2)
    assert STARTS["w1"] == 1
    assert host.active() == {}


def test_same_id_with_other_content_is_refused_without_touching_the_record(make_host):
    host = make_host()
    host.submit(command("c1", "wait", steps=5))
    ack = host.submit(command("c1", "wait", steps=6))
    assert (ack.accepted, ack.state, ack.duplicate) == (False, RuntimeState.REJECTED, False)
    assert ack.reason.startswith("COMMAND_ID_CONFLICT: id 'c1' is taken by a command of other")
    assert host.query("c1").state is RuntimeState.PENDING


def test_expired_start_budget_is_refused_and_the_refusal_is_remembered(make_host, clock):
    host = make_host()
    ack = host.submit(command("e1"), start_budget_ms=0.0)
    assert (ack.accepted, ack.state) == (False, RuntimeState.REJECTED)
    assert ack.reason.startswith("EXPIRED_COMMAND: start budget 0.0 ms left")
    again = host.submit(command("e1"), start_budget_ms=1000.0)
    assert (again.accepted, again.state, again.duplicate) == (False, RuntimeState.REJECTED, True)
    run(host, clock, 2)
    assert STARTS["e1"] == 0
    assert kinds(host, "e1") == [(1, "rejected", ack.reason)]


def test_start_budget_running_out_before_the_first_step_rejects(make_host, clock):
    host = make_host()
    host.submit(command("e2"), start_budget_ms=10.0)
    clock.advance(0.011)
    host.step()
    status = host.query("e2")
    assert status.state is RuntimeState.REJECTED
    assert status.reason.startswith("EXPIRED_COMMAND")
    assert STARTS["e2"] == 0


def test_busy_resource_is_refused_until_the_holder_finishes(make_host, clock):
    host = make_host()
    host.submit(command("a1", "wait", steps=1, resources=("arm",)))
    busy = host.submit(command("a2", "wait", resources=("arm",)))
    assert (busy.accepted, busy.state) == (False, RuntimeState.REJECTED)
    assert busy.reason == ("RESOURCE_BUSY: resource 'arm' is held by command 'a1' (PENDING); "
                           "wait until it finishes")
    run(host, clock, 3)
    assert host.submit(command("a3", "wait", resources=("arm",))).accepted


def test_newer_epoch_takes_over_and_older_commands_cancels_heartbeats_are_refused(make_host):
    host = make_host()
    assert host.submit(command("n1", "wait", steps=100, epoch=1)).accepted
    assert host.submit(command("n2", "wait", steps=100, epoch=2)).accepted
    assert host.epoch == 2
    old = host.submit(command("o1", "wait", epoch=1))
    assert (old.accepted, old.state) == (False, RuntimeState.REJECTED)
    assert old.reason == ("STALE_EPOCH: command epoch 1 is older than the runtime's epoch 2; "
                          "a newer controller has taken over")
    cancel = host.cancel("n1", epoch=1)
    assert (cancel.accepted, cancel.state) == (False, RuntimeState.PENDING)
    assert cancel.reason == "STALE_EPOCH: cancel from epoch 1, the runtime is at epoch 2"
    beat = host.heartbeat(["n1"], epoch=1)
    assert (beat.accepted, beat.renewed) == (False, ())
    adopted = host.heartbeat(["n1", "n2", "zz"], epoch=2)
    assert adopted.accepted and adopted.renewed == ("n1", "n2")
    assert adopted.states == {"n1": RuntimeState.PENDING, "n2": RuntimeState.PENDING,
                              "zz": RuntimeState.NOT_FOUND}
    assert host.cancel("n1", epoch=2).state is RuntimeState.STOPPED


def test_lease_expiry_holds_within_one_control_period(make_host, clock, backend):
    host = make_host(lease_s=0.2)
    host.submit(command("ns", "never_stops"))
    run(host, clock, 3)  # 0.1 s: moving
    assert host.query("ns").state is RuntimeState.RUNNING
    moved = backend.position[0]
    results = run(host, clock, 4)  # the lease ran out at 0.2 s, between steps 6 and 7
    status = host.query("ns")
    assert (status.state, status.reason) == (RuntimeState.STOPPED, "LEASE_EXPIRED")
    stop = status.events[-1]
    assert stop.kind is EventKind.STOPPED
    assert stop.data["held"] is True
    assert 0.0 <= stop.data["protection_latency_s"] <= DT
    held_from = next(i for i, r in enumerate(results) if r.events)
    assert all(r.action["action"][:2] == HOLD_ARM for r in results[held_from:])
    assert all(r.action["action"][:2] != HOLD_ARM for r in results[:held_from])
    assert backend.position[0] == pytest.approx(moved + 0.001 * held_from)


def test_the_last_action_a_lease_allows_is_the_one_sent_before_it_ends(make_host, clock):
    """An action holds until the next step: a lease ending before then ends the command at this
    step, so the robot never moves on an expired lease; a late step holds at once."""
    host = make_host(lease_s=0.21)  # submitted at t = 0; steps at t = k / 30 s
    host.submit(command("ns", "never_stops"))
    run(host, clock, 5)  # t = 0.167: its action lasts until 0.2, inside the lease
    assert host.query("ns").state is RuntimeState.RUNNING
    held = run(host, clock, 1)[0]  # t = 0.2: an action now would last until 0.233
    status = host.query("ns")
    assert (status.state, status.reason) == (RuntimeState.STOPPED, "LEASE_EXPIRED")
    assert held.action["action"][:2] == HOLD_ARM
    assert status.events[-1].data == {"held": True, "protection_latency_s": 0.0}

    host.submit(command("late", "never_stops"))  # lease until t + 0.21
    run(host, clock, 1)  # t + 1/30: started
    clock.advance(0.3)  # the loop fell behind: the next step comes after the lease ended
    host.step()
    stop = host.query("late").events[-1]
    # recorded to the microsecond
    assert stop.data["protection_latency_s"] == pytest.approx(DT + 0.3 - 0.21, abs=1e-6)


def test_heartbeats_keep_a_lease_alive(make_host, clock):
    host = make_host(lease_s=0.2)
    host.submit(command("hb", "never_stops"))
    for _ in range(30):
        run(host, clock, 3)
        assert host.heartbeat(["hb"]).renewed == ("hb",)
    assert host.query("hb").state is RuntimeState.RUNNING


def test_cancel_running_command_stops_through_the_executor(make_host, clock):
    host = make_host()
    host.submit(command("c", "wait", steps=100))
    run(host, clock, 2)
    ack = host.cancel("c")
    assert (ack.accepted, ack.state) == (True, RuntimeState.STOPPING)
    assert host.cancel("c").duplicate
    run(host, clock, 1)
    status = host.query("c")
    assert (status.state, status.reason) == (RuntimeState.STOPPED, "CANCEL_REQUESTED")
    assert kinds(host, "c")[-1] == (status.last_seq, "stopped", "CANCEL_REQUESTED")
    finished = host.cancel("c")
    assert (finished.accepted, finished.reason) == (False, "ALREADY_FINISHED: CANCEL_REQUESTED")


def test_executor_that_ignores_a_stop_is_held_by_force(make_host, clock, backend):
    host = make_host(stop_timeout_s=0.1)
    host.submit(command("ns", "never_stops"))
    run(host, clock, 1)
    host.cancel("ns")
    results = run(host, clock, 6)
    status = host.query("ns")
    assert (status.state, status.reason) == (RuntimeState.STOPPED, "STOP_FORCED: CANCEL_REQUESTED")
    assert results[-1].action["action"][:2] == HOLD_ARM


def test_cancel_before_start_and_before_receipt(make_host, clock):
    host = make_host()
    host.submit(command("p", "wait"))
    assert host.cancel("p").state is RuntimeState.STOPPED
    burnt = host.cancel("late")
    assert (burnt.accepted, burnt.state, burnt.reason) == (True, RuntimeState.STOPPED,
                                                           "CANCELED_BEFORE_RECEIPT")
    late = host.submit(command("late", "wait"))
    assert (late.accepted, late.state, late.duplicate) == (False, RuntimeState.STOPPED, True)
    run(host, clock, 3)
    assert STARTS["p"] == STARTS["late"] == 0


def test_gripper_is_held_at_its_last_target_while_the_arm_moves(make_host, clock, backend):
    host = make_host()
    host.submit(command("g", "grip", width=0.02))
    run(host, clock, 1)
    host.submit(command("m", "move_to", target=[0.45, 0.0, 0.4], max_step=0.01))
    results = run(host, clock, 3)
    assert [r.action["action"][2] for r in results] == [[0.01, 0.01]] * 3
    np.testing.assert_allclose(backend.fingers, [0.01, 0.01])


def test_two_executors_driving_the_arm_abort_the_later_one(make_host, clock):
    host = make_host()
    host.submit(command("first", "never_stops"))
    host.submit(command("second", "move_to", target=[1.0, 0.0, 0.4]))
    run(host, clock, 1)
    status = host.query("second")
    assert status.state is RuntimeState.ABORTED
    assert status.reason == ("ACTION_CONFLICT: the arm is already driven this step by command "
                             "'first'")
    assert host.query("first").state is RuntimeState.RUNNING


def test_executor_errors_and_refusals_are_reported_not_raised(make_host, clock):
    host = make_host()
    refused = host.submit(command("u", "teleport"))
    assert (refused.accepted, refused.state) == (False, RuntimeState.REJECTED)
    assert refused.reason.startswith("EXECUTOR_REFUSED: UNKNOWN_SKILL: no executor for skill "
                                     "'teleport'")
    host.submit(command("x", "explode"))
    host.submit(command("ab", "abort_after", steps=1, reason="IK_FAILED"))
    run(host, clock, 2)
    assert host.query("x").reason == "EXECUTOR_ERROR: RuntimeError('boom')"
    assert (host.query("ab").state, host.query("ab").reason) == (RuntimeState.ABORTED, "IK_FAILED")


def test_execution_timeout_stops_the_command(make_host, clock):
    host = make_host()
    host.submit(command("t", "wait", steps=1000, execution_timeout_ms=100))
    run(host, clock, 5)
    status = host.query("t")
    assert (status.state, status.reason) == (RuntimeState.STOPPED, "EXECUTION_TIMEOUT")


def test_restarted_host_aborts_what_was_active_and_never_reruns_it(make_host, clock, backend,
                                                                    tmp_path):
    host = make_host()
    host.submit(command("done", "wait", steps=1, epoch=3))
    host.submit(command("live", "wait", steps=1000, epoch=3))
    run(host, clock, 4)
    last = host.query("live").last_seq
    host.close()  # the process dies here: nothing else is written

    again = make_host()
    assert again.restarted == ("live",)
    assert again.epoch == 3
    status = again.query("live")
    assert (status.state, status.reason) == (RuntimeState.ABORTED, "RUNTIME_RESTARTED")
    assert status.last_seq == last + 1
    assert status.events[-1].data == {"was": "RUNNING"}
    assert again.query("done").state is RuntimeState.CONTROL_DONE
    resent = again.submit(command("live", "wait", steps=1000, epoch=3))
    assert (resent.accepted, resent.state, resent.duplicate) == (True, RuntimeState.ABORTED, True)
    batch = again.events_since(0)
    assert [(e.command_id, str(e.kind)) for e in batch.events] == [("live", "aborted")]
    assert batch.boot_id != host.boot_id
    run(again, clock, 3)
    assert dict(STARTS) == {"done": 1, "live": 1}


def test_finished_records_are_read_back_from_the_journal_and_purged_after_retention(
        make_host, clock):
    host = make_host(cache_size=1, retention_s=10.0, purge_interval_s=1.0)
    for i in range(3):
        host.submit(command(f"r{i}", "wait", steps=0))
    run(host, clock, 1)
    assert [host.query(f"r{i}").state for i in range(3)] == [RuntimeState.CONTROL_DONE] * 3
    clock.advance(10.5)
    host.step()
    assert host.query("r0").state is RuntimeState.NOT_FOUND


def test_events_since_reports_gaps(make_host, clock):
    host = make_host(event_log_size=3)
    for i in range(3):
        host.submit(command(f"q{i}", "wait", steps=0))
    run(host, clock, 1)  # 6 events: started + control_done each
    batch = host.events_since(0)
    assert batch.gap and [str(e.kind) for e in batch.events] == ["control_done"] * 3
    assert batch.next_cursor == 6
    assert host.events_since(6) == type(batch)(host.boot_id, (), 6, False)
    assert host.events_since(4).events == batch.events[1:]


def test_host_without_journal_keeps_records_in_memory(clock):
    from tests.runtime_bridge.executors import factory

    host = ExecutorHost(KinematicBackend(), factory, clock=clock)
    host.submit(command("mem", "wait", steps=0))
    clock.advance(DT)
    host.step()
    assert host.query("mem").state is RuntimeState.CONTROL_DONE
    host.close()


def _recording_host(backend, clock, tmp_path, on_first):  # type: ignore[no-untyped-def]
    """A host whose ``record`` executors log their steps and call ``on_first(host)`` while
    the step runs the command named ``first``."""
    from harness_bt.runtime.executor import ExecutorStatus, ExecutorStep
    from runtime_bridge.host.record_log import LoggedRuntimeJournal
    from tests.runtime_bridge.executors import factory

    order: list[str] = []

    class Recorder:
        def __init__(self, cmd):  # type: ignore[no-untyped-def]
            self.cid = cmd.command_id

        def step(self, observation):  # type: ignore[no-untyped-def]
            if self.cid == "first":
                on_first(host, order)
            order.append(f"{self.cid} stepped")
            return ExecutorStep(ExecutorStatus.CONTROL_DONE)

        def request_stop(self) -> None:
            pass

    host = ExecutorHost(backend, lambda cmd: Recorder(cmd) if cmd.skill == "record"
                        else factory(cmd), journal=LoggedRuntimeJournal(tmp_path / "r.db"),
                        clock=clock)
    return host, order


def test_a_long_step_lets_a_waiting_submit_in_between_two_commands(clock, backend, tmp_path):
    import threading

    late: list[threading.Thread] = []

    def dispatch_arrives(host, order):  # type: ignore[no-untyped-def]
        thread = threading.Thread(target=lambda: order.append(
            f"late {host.submit(command('late', 'wait', steps=0)).state.value}"))
        late.append(thread)
        thread.start()
        while not host._lock.contended:
            thread.join(0.001)

    host, order = _recording_host(backend, clock, tmp_path, dispatch_arrives)
    host.scheduler.SHARE_S = 0.0
    host.submit(command("first", "record"))
    host.submit(command("second", "record"))
    clock.advance(DT)
    events = host.step().events
    late[0].join()
    assert order == ["first stepped", "late PENDING", "second stepped"]
    assert [(e.command_id, str(e.kind)) for e in events] == [
        ("first", "started"), ("second", "started"), ("first", "control_done"),
        ("second", "control_done")]
    # journaled, stepped from the next step on
    assert host.query("late").state is RuntimeState.PENDING
    host.close()


def test_a_step_steps_aside_while_an_answer_is_made_and_resumes_when_it_has_left(
        clock, backend, tmp_path):
    import threading

    began = threading.Event()
    threads: list[threading.Thread] = []

    def answer(host, order):  # type: ignore[no-untyped-def]
        def serve() -> None:
            with host.answering():
                began.set()
                order.append(f"answer {host.submit(command('late', 'wait', steps=0)).state}")
                order.append("answer left")
        threads.append(threading.Thread(target=serve))
        threads[0].start()
        began.wait(5)  # the answer is under way while the step runs "first"

    host, order = _recording_host(backend, clock, tmp_path, answer)
    host.submit(command("first", "record"))
    host.submit(command("second", "record"))
    clock.advance(DT)
    host.step()
    threads[0].join(5)
    # the step parked before "second" until the answer had left; the answer got the lock at
    # once (it never waited for the step) and its submit is journaled like any other
    assert order == ["first stepped", "answer PENDING", "answer left", "second stepped"]
    assert host.query("late").state is RuntimeState.PENDING
    # journaled before the step parked
    assert host.query("first").state is RuntimeState.CONTROL_DONE
    host.close()


def test_a_step_gives_way_for_a_bounded_time_only(clock, backend, tmp_path):
    import threading

    release = threading.Event()
    inside = threading.Event()
    threads: list[threading.Thread] = []

    def endless_answer(host, order):  # type: ignore[no-untyped-def]
        def serve() -> None:
            with host.answering():  # an answer that does not leave while the step runs
                inside.set()
                release.wait(10)
        threads.append(threading.Thread(target=serve))
        threads[0].start()
        inside.wait(5)

    host, order = _recording_host(backend, clock, tmp_path, endless_answer)
    for cid in ("first", "second", "third"):
        host.submit(command(cid, "record"))
    clock.advance(DT)
    host.step()  # returns: the step waited out its yield budget, then went on
    assert order == ["first stepped", "second stepped", "third stepped"]
    assert host.scheduler.yield_left <= 0 < host.scheduler.YIELD_SHARE * backend.control_period_s
    release.set()
    threads[0].join(5)
    host.close()


def test_a_submit_that_cannot_be_journaled_never_runs_and_a_resend_is_judged_afresh(
        make_host, clock, monkeypatch):
    from harness_bt.errors import BridgeError

    host = make_host()
    journal = host._journal

    def full_disk(records, meta=None):  # type: ignore[no-untyped-def]
        raise BridgeError("JOURNAL_FAILED", "cannot append to the runtime journal: disk full")

    monkeypatch.setattr(journal, "write", full_disk)
    with pytest.raises(BridgeError, match="disk full"):
        host.submit(command("lost", "wait", steps=0))
    assert host.active() == {} and host.query("lost").state is RuntimeState.NOT_FOUND
    run(host, clock, 2)  # nothing runs what was never recorded
    assert STARTS["lost"] == 0
    monkeypatch.undo()
    ack = host.submit(command("lost", "wait", steps=0))
    assert (ack.accepted, ack.duplicate) == (True, False)
    run(host, clock, 2)
    assert host.query("lost").state is RuntimeState.CONTROL_DONE and STARTS["lost"] == 1


class _Queued:
    """A give-way whose requests are callables queued by the test; ``answered`` collects what
    they returned."""

    def __init__(self, when=lambda: True) -> None:  # type: ignore[no-untyped-def]
        self.queue: list = []
        self.answered: list = []
        self.when = when

    def pending(self) -> bool:
        return bool(self.queue) and self.when()

    def answer(self) -> None:
        self.answered.append(self.queue.pop(0)())


class _WriteLog:
    """Wraps a journal's ``write`` to keep the ids and states of each write, in order."""

    def __init__(self, host: ExecutorHost) -> None:
        self.writes: list[list[tuple[str, str]]] = []
        inner = host._journal.write

        def write(records, meta):  # type: ignore[no-untyped-def]
            inner(records, meta)
            self.writes.append([(r.command_id, r.state.value) for r in records])
        host._journal.write = write  # type: ignore[method-assign]


def test_a_step_planned_through_a_give_way_answers_a_submit_between_two_commands(
        clock, backend, tmp_path):
    gw = _Queued()

    def dispatch_arrives(host, order):  # type: ignore[no-untyped-def]
        gw.queue.append(lambda: order.append(
            f"late {host.submit(command('late', 'wait', steps=0)).state.value}"))

    host, order = _recording_host(backend, clock, tmp_path, dispatch_arrives)
    host.scheduler.LOOK_S = 0.0  # look at every command
    host.submit(command("first", "record"))
    host.submit(command("second", "record"))
    log = _WriteLog(host)
    clock.advance(DT)
    events = host.step(plan_on=lambda plan: plan(gw)).events
    assert order == ["first stepped", "late PENDING", "second stepped"]
    # the submit journaled its own record only: the step's changes in hand were not its to wait
    # for; the step journaled them all at its end, and reports all its events
    assert log.writes[0] == [("late", "PENDING")]
    assert sorted(log.writes[1]) == [("first", "CONTROL_DONE"), ("second", "CONTROL_DONE")]
    assert [(e.command_id, str(e.kind)) for e in events] == [
        ("first", "started"), ("second", "started"), ("first", "control_done"),
        ("second", "control_done")]
    assert host.query("late").state is RuntimeState.PENDING
    host.close()


def test_an_answer_inside_a_step_journals_what_it_tells_before_it_tells_it(
        clock, backend, tmp_path):
    host, _ = _recording_host(backend, clock, tmp_path, lambda host, order: None)
    host.scheduler.LOOK_S = 0.0
    gw = _Queued(when=lambda: "first" not in host._active)  # once "first" has finished
    gw.queue += [lambda: host.query("first").state, lambda: host.query("second").state]
    host.submit(command("first", "record"))
    host.submit(command("second", "record"))
    log = _WriteLog(host)
    clock.advance(DT)
    events = host.step(plan_on=lambda plan: plan(gw)).events
    # both queries came after "first" settled, before "second" did: the first one journaled
    # the step's changes so far (a crash after the answer cannot take CONTROL_DONE back); the
    # second had nothing new to journal
    assert gw.answered == [RuntimeState.CONTROL_DONE, RuntimeState.RUNNING]
    assert sorted(log.writes[0]) == [("first", "CONTROL_DONE"), ("second", "RUNNING")]
    assert log.writes[1:] == [[("second", "CONTROL_DONE")]]
    assert [(e.command_id, str(e.kind)) for e in events] == [  # none lost by the early flush
        ("first", "started"), ("second", "started"), ("first", "control_done"),
        ("second", "control_done")]
    host.close()


def test_a_step_answers_through_a_give_way_for_a_bounded_time_only(clock, backend, tmp_path):
    import time

    host, order = _recording_host(backend, clock, tmp_path, lambda host, order: None)
    host.scheduler.LOOK_S = 0.0
    budget = host.scheduler.YIELD_SHARE * backend.control_period_s
    gw = _Queued()
    gw.queue += [lambda: time.sleep(budget / 4)] * 100  # a flood of slow requests
    for cid in ("first", "second", "third"):
        host.submit(command(cid, "record"))
    clock.advance(DT)
    host.step(plan_on=lambda plan: plan(gw))
    assert order == ["first stepped", "second stepped", "third stepped"]
    assert 1 <= len(gw.answered) <= 4  # the budget's worth at most, then the step went on
    assert host.scheduler.yield_left <= 0
    host.close()


def test_a_submit_inside_a_step_that_preempts_a_command_journals_both(clock, backend, tmp_path):
    host, _ = _recording_host(backend, clock, tmp_path, lambda host, order: None)
    host.scheduler.LOOK_S = 0.0
    host.submit(command("old", "never_stops", resources=("arm",)))
    clock.advance(DT)
    host.step()
    gw = _Queued()
    gw.queue.append(lambda: host.submit(command("new", "wait", steps=0, resources=("arm",),
                                                epoch=1)).state)
    log = _WriteLog(host)
    clock.advance(DT)
    host.step(plan_on=lambda plan: plan(gw))
    assert gw.answered == [RuntimeState.PENDING]
    # the answer tells of "new" only, but the preemption it caused is journaled with it
    assert sorted(log.writes[0]) == [("new", "PENDING"), ("old", "STOPPED")]
    assert host.query("old").reason.startswith("EPOCH_PREEMPTED")
    host.close()


def _chunking_host(clock, backend, tmp_path, ids):  # type: ignore[no-untyped-def]
    """A host journaling a step's changes two records per write, ``ids`` submitted."""
    host, _ = _recording_host(backend, clock, tmp_path, lambda host, order: None)
    host.scheduler.LOOK_S = 0.0
    host._batch.FLUSH_CHUNK = 2
    for cid in ids:
        host.submit(command(cid, "record"))
    return host


def test_a_step_journals_many_changes_a_few_at_a_time_giving_way_between(
        clock, backend, tmp_path):
    ids = [f"c{i}" for i in range(5)]
    host = _chunking_host(clock, backend, tmp_path, ids)
    log = _WriteLog(host)
    # a query between two writes, once the settling is over: it reports c4, still in hand
    gw = _Queued(when=lambda: len(log.writes) == 1)
    gw.queue.append(lambda: (host.events_since(0).events, host.query("c4").state,
                             host.events_since(0).events))
    clock.advance(DT)
    events = host.step(plan_on=lambda plan: plan(gw)).events
    # one write of two records, then the answer journaled the three in hand before it told
    assert [len(w) for w in log.writes] == [2, 3]
    assert {cid for w in log.writes for cid, _ in w} == set(ids)
    assert all(state == "CONTROL_DONE" for w in log.writes for _, state in w)
    before, state, after = gw.answered[0]
    assert state is RuntimeState.CONTROL_DONE
    # no event of the step went out before every record was journaled; then all of them did
    assert [str(e.kind) for e in before] == []
    assert [e.command_id for e in after if e.kind is EventKind.CONTROL_DONE] == ids
    assert sorted((e.command_id, str(e.kind)) for e in events) == sorted(
        [(cid, "started") for cid in ids] + [(cid, "control_done") for cid in ids])
    host.close()


def test_a_step_journals_its_changes_in_chunks_without_an_answer_too(clock, backend, tmp_path):
    host = _chunking_host(clock, backend, tmp_path, [f"c{i}" for i in range(5)])
    log = _WriteLog(host)
    clock.advance(DT)
    host.step(plan_on=lambda plan: plan(_Queued()))
    assert [len(w) for w in log.writes] == [2, 2, 1]
    assert host.events_since(0).events[-1].kind is EventKind.CONTROL_DONE
    for i in range(5, 10):
        host.submit(command(f"c{i}", "record"))
    log.writes.clear()
    clock.advance(DT)
    host.step()  # no give-way (the threaded path): one write
    assert [len(w) for w in log.writes] == [5]
    host.close()


def test_a_chunk_that_cannot_be_journaled_leaves_its_records_in_hand(clock, backend, tmp_path):
    from harness_bt.errors import BridgeError

    host = _chunking_host(clock, backend, tmp_path, [f"c{i}" for i in range(5)])
    inner, calls = host._journal.write, []

    def second_fails(records, meta):  # type: ignore[no-untyped-def]
        calls.append([r.command_id for r in records])
        if len(calls) == 2:
            raise BridgeError("JOURNAL_FAILED", "cannot append to the journal: disk full")
        inner(records, meta)

    host._journal.write = second_fails  # type: ignore[method-assign]
    clock.advance(DT)
    with pytest.raises(BridgeError, match="disk full"):
        host.step(plan_on=lambda plan: plan(_Queued()))
    assert sorted(host._batch.dirty) == ["c2", "c3", "c4"]  # the first chunk alone was journaled
    assert not host.events_since(0).events  # and nothing was told
    host._journal.write = inner  # type: ignore[method-assign]
    host._batch.flush()
    assert {host._journal.get(f"c{i}").state for i in range(5)} == {RuntimeState.CONTROL_DONE}
    host.close()


class _Idle:
    """A give-way no request ever waits on; counts the looks."""

    def __init__(self) -> None:
        self.looks = 0

    def pending(self) -> bool:
        self.looks += 1
        return False

    def answer(self) -> None:
        raise AssertionError("nothing waits")


@pytest.mark.parametrize(("offer_s", "offers_every_look"), [(0.0, True), (1e9, False)])
def test_a_step_looks_for_requests_more_often_than_it_offers_the_cpu(
        clock, backend, tmp_path, monkeypatch, offer_s, offers_every_look):
    import os

    yields: list[int] = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1))
    host, order = _recording_host(backend, clock, tmp_path, lambda host, order: None)
    host.scheduler.LOOK_S = 0.0  # a look between every two commands
    host.scheduler.OFFER_S = offer_s
    for i in range(4):
        host.submit(command(f"c{i}", "record"))
    gw = _Idle()
    clock.advance(DT)
    host.step(plan_on=lambda plan: plan(gw))
    assert len(order) == 4 and gw.looks >= 4  # every command stepped, a look after each
    # an offer at every look when due at once; none within an offer period that never ends
    assert len(yields) == (gw.looks if offers_every_look else 0)
    host.close()
