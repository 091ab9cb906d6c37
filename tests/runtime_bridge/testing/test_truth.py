"""The chaos audit finds what it is there to find: a command started twice, a dispatched
command the runtime never recorded, a terminal state that changed."""

from __future__ import annotations

from harness_bt.ledger import Command, CommandEvent, EventKind, Ledger
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.host.record import RuntimeRecord
from runtime_bridge.host.record_store import SqliteRuntimeJournal
from runtime_bridge.testing.chaos import audit, read_exec_log


def _command(cid: str) -> Command:
    return Command(command_id=cid, skill="wait", params={}, resources=(), start_within_ms=5000,
                   execution_timeout_ms=5000)


def _runtime(path, *records: RuntimeRecord) -> None:
    journal = SqliteRuntimeJournal(path)
    journal.write(records)
    journal.close()


def _record(cid: str, *kinds: EventKind) -> RuntimeRecord:
    rec = RuntimeRecord(cid, _command(cid), True, RuntimeState.CONTROL_DONE, "CONTROL_DONE", 1.0,
                        2.0)
    for seq, kind in enumerate(kinds, 1):
        rec.add_event(CommandEvent(cid, seq, kind))
    rec.last_seq = len(kinds)
    return rec


def test_a_command_started_twice_is_a_double_execution(tmp_path):
    log = tmp_path / "exec.log"
    log.write_text("a 1 0.1\nb 1 0.2\na 2 0.9\n")
    _runtime(tmp_path / "rt.db", _record("a", EventKind.STARTED, EventKind.CONTROL_DONE),
             _record("b", EventKind.STARTED, EventKind.CONTROL_DONE))
    truth = audit(runtime_journal=tmp_path / "rt.db", exec_log=log, ledgers=[])
    assert read_exec_log(log) == {"a": 2, "b": 1}
    assert (truth.double_executions, truth.lost, truth.regressions) == (["a"], [], [])


def test_a_dispatched_command_the_runtime_never_recorded_is_lost(tmp_path):
    ledger = Ledger.open(tmp_path / "h.db")
    for cid in ("sent", "refused"):
        ledger.submit(_command(cid), now=0.0)
        ledger.dispatch(cid, now=0.1)
    ledger.apply(CommandEvent("refused", 0, "rejected", reason="BUSY"), now=0.2)
    ledger.close()
    _runtime(tmp_path / "rt.db")
    truth = audit(runtime_journal=tmp_path / "rt.db", exec_log=tmp_path / "none.log",
                  ledgers=[tmp_path / "h.db"])
    assert truth.dispatched == 2
    assert truth.lost == ["sent (UNKNOWN: RESTARTED)"]  # open when the harness stopped


def test_a_lifecycle_event_after_the_final_one_is_a_regression(tmp_path):
    _runtime(tmp_path / "rt.db", _record("r", EventKind.STARTED, EventKind.CONTROL_DONE,
                                         EventKind.ABORTED))
    truth = audit(runtime_journal=tmp_path / "rt.db", exec_log=tmp_path / "none.log",
                  ledgers=[])
    assert truth.regressions == ["runtime r: control_done (seq 2) then aborted (seq 3)"]


class _Harness:
    """A harness process stand-in that runs until told it exited."""

    def __init__(self) -> None:
        self.returncode: int | None = None
        self.proc = self

    def poll(self) -> int | None:
        return self.returncode


def test_a_cut_is_made_again_on_the_next_command_until_it_bites(tmp_path):
    """A command may end before its lease runs out: the partition then cuts the next one, up
    to its tries, and stops cutting once the harness has exited."""
    from runtime_bridge.testing.chaos.processes import Run, Workload
    from runtime_bridge.testing.chaos.scenarios import _cut_mid_command

    run = Run(Workload(task="t", backend="kinematic", lease_ms=0.0, settle_s=0.0, kill_at=2,
                       max_time_s=0.5), tmp_path, seed=0)
    log = run.exec_log
    log.write_text("a 1 0.1\nb 1 0.2\n")
    harness, cuts = _Harness(), []
    run.start_harness = lambda endpoint: harness  # type: ignore[method-assign]

    def bites_at(n: int):
        def until() -> bool:
            if len(cuts) >= 2 * n:
                return True
            with log.open("a") as f:  # it did not: the harness goes on to its next command
                f.write(f"c{len(cuts)} 1 0.3\n")
            return False
        return until

    got, made = _cut_mid_command(run, "tcp://x", cuts.append, tries=5, until=bites_at(2))
    assert got is harness and made == 2 and cuts == [True, False, True, False]

    cuts.clear()
    got, made = _cut_mid_command(run, "tcp://x", cuts.append, tries=3, until=bites_at(9))
    assert made == 3 and cuts == [True, False] * 3  # at most its tries

    cuts.clear()
    harness.returncode = 0  # the task ended: nothing left to cut
    got, made = _cut_mid_command(run, "tcp://x", cuts.append, tries=3, until=bites_at(9))
    assert made == 0 and cuts == []
