"""The chaos audit finds what it is there to find: a command started twice, a dispatched
command the runtime never recorded, a terminal state that changed."""

from __future__ import annotations

from harness_bt.bridge import RuntimeState
from harness_bt.ledger import Command, CommandEvent, EventKind, Ledger
from runtime_bridge.chaos import audit, read_exec_log
from runtime_bridge.journal import SqliteRuntimeJournal
from runtime_bridge.record import RuntimeRecord


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
