"""The run record (checkpoints beside the ledger) and resuming a run at phase granularity."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness_bt import FakeClock, Ledger, TaskRunner
from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.ledger import Command, CommandState
from harness_bt.run.resume import open_durable, start_durable
from harness_bt.run.run_record import (
    FORMAT_VERSION,
    RunCheckpoint,
    RunHeader,
    RunRecord,
    journalable,
)
from harness_bt.run.settings import RunParts
from harness_bt.runtime.bridge import Ack
from harness_bt.runtime.episodes import RunOptions
from harness_bt.testing import FakeRuntime, Script
from harness_bt.testing.example import (
    example_runtime,
    example_skills,
    fetch_cup_task,
    grasp_effect,
)
from tests.harness_bt.helpers import run_to_end

CLOSE = "r1/grasp.1/pick/steps/close#1"


def header(**kw: object) -> RunHeader:
    data: dict[str, object] = {"task_file": "/x/task.yaml", "task_digest": "0" * 64,
                               "task_name": "fetch_cup", "run_id": "r1", "bridge": "fake"}
    data.update(kw)
    return RunHeader(**data)  # type: ignore[arg-type]


def first_run(journal_path: Path, clock: FakeClock, rt: FakeRuntime,
              until: str = CLOSE, state: CommandState = CommandState.RUNNING) -> None:
    """Run the example with a journal until ``until`` is in ``state``, then drop everything (a
    SIGKILL: nothing is closed cleanly beyond what was committed)."""
    runner, ledger, journal = new_runner(journal_path, clock, rt)
    while not (until in ledger and ledger.get(until).state is state):
        runner.tick()
        clock.advance(0.05)
        assert runner.phase == "running", runner.result
    runner.close()
    ledger.close()
    journal.close()


def new_runner(journal_path: Path, clock: FakeClock, rt: FakeRuntime, *, resume: bool = False
               ) -> tuple[TaskRunner, Ledger, RunRecord]:
    """The example task's runner on a new journal, or (``resume``) on an existing one from its
    latest checkpoint."""
    journal = RunRecord.open(journal_path) if resume else RunRecord.create(journal_path,
                                                                              header())
    ledger = Ledger.open(journal_path, wall_clock=clock.wall, now=clock.monotonic())
    runner = TaskRunner(
        fetch_cup_task(),
        bridge=rt,
        clock=clock,
        skills=example_skills(),
        run_id="r1",
        parts=RunParts(ledger=ledger, run_record=journal,
                       resume=journal.latest() if resume else None),
    )
    return runner, ledger, journal


def resumed_runner(journal_path: Path, clock: FakeClock, rt: FakeRuntime
                   ) -> tuple[TaskRunner, Ledger, RunRecord]:
    return new_runner(journal_path, clock, rt, resume=True)


# ---------------------------------------------------------------------- resuming


def test_a_resumed_run_reenters_the_active_phase_and_repeats_no_command(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    first_run(path, clock, rt)
    clock.advance(1.0)  # the runtime finishes the grasp while no harness is alive

    runner, ledger, journal = resumed_runner(path, clock, rt)
    cp = runner.resumed_from
    assert cp is not None and cp.configuration == ("pick", "grasp", "watch")
    assert dict(cp.activations) == {"navigate": 1, "grasp": 1, "watch": 1, "evaluate": 0,
                                    "place": 0}
    assert ledger.restarted == [CLOSE]
    run_to_end(runner, clock)
    res = runner.result
    assert res is not None and res.succeeded
    assert rt.starts == {"navigate": 1, "align": 1, "approach": 1, "grasp": 1, "place": 1}
    assert len(set(rt.dispatch_calls)) == len(rt.received) == 5
    sent_again = [e["command_id"] for e in runner.trace.of_kind("dispatch")
                  if e["command_id"] in cp_commands(journal, ledger, before=CLOSE)]
    assert sent_again == []
    resume = runner.trace.of_kind("resume")[0]["data"]
    assert resume["configuration"] == ["pick", "grasp", "watch"]
    assert resume["restarted"] == [CLOSE]
    # the phase was entered again with the activation it had: same command ids
    enters = [(e["data"]["phase"], e["data"].get("activation"))
              for e in runner.trace.of_kind("phase_enter")]
    assert enters[:3] == [("pick", None), ("grasp", 1), ("watch", 1)]
    assert set(res.commands) == {r.command_id for r in ledger if r.command_id.startswith("r1/")}
    assert journal.status == "finished"
    assert journal.result()["outcome"] == "succeeded"  # type: ignore[index]
    assert [c.configuration[-1] for c in journal.checkpoints()][-1] == "done"
    ledger.close()
    journal.close()


def cp_commands(journal: RunRecord, ledger: Ledger, *, before: str) -> set[str]:
    """Command ids that existed when ``before`` was submitted (the first run's)."""
    first_seq = ledger.get(before).events[0].seq
    return {r.command_id for r in ledger if r.events[0].seq <= first_seq}


def test_a_command_still_running_at_resume_is_followed_to_its_end(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=1.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    first_run(path, clock, rt)
    clock.advance(0.1)  # the grasp is still running when the harness comes back

    runner, ledger, journal = resumed_runner(path, clock, rt)
    runner.tick()
    assert ledger.get(CLOSE).state is CommandState.RECONCILING  # followed, not failed, not re-sent
    assert [e["data"]["action"] for e in runner.trace.of_kind("reconcile")] == ["following"]
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.succeeded
    assert rt.starts["grasp"] == 1
    states = [h.state_after.value for h in ledger.get(CLOSE).events
              if h.state_before is not h.state_after]
    assert states[-4:] == ["RUNNING", "UNKNOWN", "RECONCILING", "SUCCEEDED"]
    ledger.close()
    journal.close()


class _LosesDispatch:
    """Passes everything through, except that the dispatch of ``lost`` never arrives."""

    def __init__(self, inner: FakeRuntime, lost: str) -> None:
        self.inner = inner
        self.lost = lost

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        if command.command_id == self.lost:
            raise BridgeError("NO_REPLY", "lost on the way", command_id=command.command_id)
        return self.inner.dispatch(command, start_budget_ms=start_budget_ms)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_a_step_the_runtime_never_received_is_issued_again_under_the_next_attempt(
        tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    first_run(path, clock, _LosesDispatch(rt, CLOSE), state=CommandState.ACCEPTED)  # type: ignore[arg-type]
    assert "grasp" not in rt.starts

    runner, ledger, journal = resumed_runner(path, clock, rt)
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.succeeded
    assert ledger.get(CLOSE).state is CommandState.CANCELED  # proven never started, then closed
    assert ledger.get(CLOSE.replace("#1", "#2")).state is CommandState.SUCCEEDED
    assert rt.starts["grasp"] == 1
    assert [e["command_id"] for e in runner.trace.of_kind("reissue")] == [CLOSE]
    ledger.close()
    journal.close()


def test_checkpoints_keep_plain_blackboard_values_and_list_the_others(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    runner, ledger, journal = new_runner(path, clock, rt)
    runner.tick()
    runner.blackboard.set("snapshot", object(), writer="test")  # not plain data
    while runner.configuration[0] == "navigate":
        clock.advance(0.05)
        runner.tick()
    cp = journal.latest()
    assert cp is not None and cp.configuration == ("pick", "grasp", "watch")
    assert all(journalable(v) for v in cp.blackboard.values())
    assert cp.dropped == ("snapshot",)  # the phase that needs such a value re-observes
    assert cp.blackboard["go.cmd"] == "r1/navigate.1/go/go.act#1"
    assert cp.blackboard["go.check.verdict"]["verdict"] == "SUCCEEDED"
    assert [c.reason for c in journal.checkpoints()] == ["start", "transition"]
    runner.close()
    ledger.close()
    journal.close()


def test_journalable_accepts_plain_json_only() -> None:
    assert journalable({"a": [1, 2.5, "x", None, True, (1, 2)]})
    assert not journalable({"a": float("nan")})
    assert not journalable({1: "x"})
    assert not journalable(object())


# ---------------------------------------------------------------------- errors


def test_opening_a_missing_journal_says_where_and_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"RUN_JOURNAL_MISSING: no run journal at "
                       r".*nope\.db.*harness run --journal") as info:
        RunRecord.open(tmp_path / "nope.db")
    assert info.value.where == str(tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()  # nothing created by looking


def test_a_corrupt_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    path.write_bytes(b"this is not a database, just bytes " * 200)
    with pytest.raises(DefinitionError, match="RUN_JOURNAL_CORRUPT") as info:
        RunRecord.open(path)
    assert info.value.code == "RUN_JOURNAL_CORRUPT"


def test_a_damaged_header_is_refused_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    RunRecord.create(path, header()).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE run_meta SET value='{not json' WHERE key='header'")
    with pytest.raises(DefinitionError, match=r"RUN_JOURNAL_CORRUPT: .* cannot be read"):
        RunRecord.open(path)


def test_a_journal_of_another_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    RunRecord.create(path, header()).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE run_meta SET value='99' WHERE key='format'")
    with pytest.raises(DefinitionError, match=rf"RUN_JOURNAL_VERSION: .* format 99; this "
                       rf"harness-bt reads format {FORMAT_VERSION}.*version that wrote it"):
        RunRecord.open(path)


@pytest.mark.parametrize(("make", "what"), [
    (lambda p: Ledger.open(p).close(), "a ledger journal without a run"),
    (lambda p: sqlite3.connect(p).execute("CREATE TABLE runtime_commands (x)"),
     "a runtime journal"),
])
def test_a_file_that_is_not_a_run_journal_is_named_for_what_it_is(tmp_path: Path, make,  # type: ignore[no-untyped-def]
                                                                  what: str) -> None:
    path = tmp_path / "other.db"
    make(path)
    with pytest.raises(DefinitionError, match=f"RUN_JOURNAL_INVALID: .* is {what}, not the "
                       "journal of a harness run"):
        RunRecord.open(path)


def test_a_new_run_refuses_an_existing_journal(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    RunRecord.create(path, header()).close()
    with pytest.raises(DefinitionError, match=r"RUN_JOURNAL_EXISTS: .* already exists.*"
                       r"harness resume"):
        RunRecord.create(path, header())


def test_resume_refuses_a_finished_run_and_a_changed_task_file(tmp_path: Path) -> None:
    task = tmp_path / "task.yaml"
    task.write_text("name: t\n")
    path = tmp_path / "run.db"
    durable = start_durable(path, task_file=task, options=RunOptions(
        task="t", bridge="zmq", runtime_url="tcp://127.0.0.1:5555"))
    durable.close()
    task.write_text("name: t2\n")
    with pytest.raises(DefinitionError, match=r"TASK_CHANGED: the task file .*task.yaml "
                       "changed since the run started"):
        open_durable(path)
    task.write_text("name: t\n")
    durable = open_durable(path)
    assert durable.checkpoint is None and durable.header.runtime_url == "tcp://127.0.0.1:5555"
    durable.record.finish({"outcome": "succeeded", "reason": "done"})
    durable.close()
    with pytest.raises(DefinitionError, match=r"RUN_FINISHED: .* already finished: "
                       r"succeeded \(done\); nothing to resume"):
        open_durable(path)


def test_the_journal_keeps_the_runs_parameter_values_and_scene(tmp_path: Path) -> None:
    task = tmp_path / "task.yaml"
    task.write_text("name: t\n")
    path = tmp_path / "run.db"
    durable = start_durable(path, task_file=task, options=RunOptions(
        task="t", bridge="zmq", runtime_url="tcp://127.0.0.1:5555", scene="pick_cube",
        params={"target": "green_cube", "height": 0.1}))
    durable.close()
    durable = open_durable(path)  # what harness resume builds the task with again
    assert (dict(durable.header.params), durable.header.scene) == (
        {"target": "green_cube", "height": 0.1}, "pick_cube")
    durable.close()


def test_checkpoints_round_trip_and_fold_in_the_latest_time_used(tmp_path: Path) -> None:
    journal = RunRecord.create(tmp_path / "run.db", header())
    cp = RunCheckpoint(configuration=("a",), activations={"a": 2}, blackboard={"k": [1]},
                       retries_used=3, counters={"retries": 3}, plan_version=4,
                       visited=("a", "a"), epoch=5, elapsed_s=1.5, ticks=30,
                       history={"c": ["a"]}, dropped=("plan",))
    seq = journal.checkpoint(cp, wall=0.0)
    journal.progress_update(elapsed_s=2.5, ticks=50, epoch=5)
    back = journal.latest()
    assert back is not None and back.seq == seq
    assert json.dumps(back.to_dict(), sort_keys=True) == json.dumps(
        {**cp.to_dict(), "elapsed_s": 2.5}, sort_keys=True)
    journal.close()


def test_a_run_killed_twice_resumes_twice(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    first_run(path, clock, rt)
    runner, ledger, journal = resumed_runner(path, clock, rt)
    for _ in range(400):  # dies again, in a later phase (a compound's child)
        runner.tick()
        clock.advance(0.05)
        if "place" in runner.configuration:
            break
    assert runner.configuration == ("deliver", "place")
    runner.close()
    ledger.close()
    journal.close()

    runner, ledger, journal = resumed_runner(path, clock, rt)
    assert runner.resumed_from is not None
    assert runner.resumed_from.configuration == ("deliver", "place")
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.succeeded
    assert rt.starts == {"navigate": 1, "align": 1, "approach": 1, "grasp": 1, "place": 1}
    ledger.close()
    journal.close()


def test_a_run_resumed_in_its_final_state_ends_at_once(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    runner, ledger, journal = new_runner(path, clock, rt)
    run_to_end(runner, clock)
    assert runner.result is not None and runner.result.succeeded
    ledger.close()
    with sqlite3.connect(path) as db:  # as if killed after the last checkpoint, before the end
        db.execute("UPDATE run_meta SET value='running' WHERE key='status'")
    journal.close()

    runner, ledger, journal = resumed_runner(path, clock, rt)
    assert runner.resumed_from is not None and runner.resumed_from.configuration == ("done",)
    run_to_end(runner, clock, max_ticks=3)
    assert runner.result is not None and (runner.result.outcome, runner.result.reason) == (
        "succeeded", "done")
    assert sum(rt.starts.values()) == 5
    ledger.close()
    journal.close()


def test_resume_refuses_a_run_whose_harness_is_still_alive(tmp_path: Path) -> None:
    import subprocess
    import sys

    task = tmp_path / "task.yaml"
    task.write_text("name: t\n")
    path = tmp_path / "run.db"
    start_durable(path, task_file=task, options=RunOptions(
        task="t", bridge="zmq", runtime_url="tcp://127.0.0.1:5555")).close()
    alive = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); "
                              "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert alive.stdout is not None and alive.stdout.readline() == "up\n"  # exec'd: its
        cmd = Path(f"/proc/{alive.pid}/cmdline").read_bytes().decode()  # own command line
        with sqlite3.connect(path) as db:  # as if that process were the harness of this run
            db.execute("UPDATE run_meta SET value=? WHERE key='owner'", (json.dumps(
                {"pid": alive.pid, "host": __import__("socket").gethostname(), "cmd": cmd}),))
        with pytest.raises(DefinitionError, match=rf"RUN_STILL_ALIVE: the harness running "
                           rf".* is still alive \(pid {alive.pid}\).*kill {alive.pid}"):
            open_durable(path)
    finally:
        alive.kill()
        alive.wait()
        assert alive.stdout is not None
        alive.stdout.close()
    open_durable(path).close()  # once it is gone, the run can be resumed
