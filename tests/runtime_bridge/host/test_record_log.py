"""The logged runtime journal: a commit is one append; folds move it into SQLite; a killed
process loses nothing it acknowledged; a torn tail is dropped and corruption is refused."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from harness_bt.errors import BridgeError
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.host.record import RuntimeRecord
from runtime_bridge.host.record_log import SEGMENT_MAGIC, LoggedRuntimeJournal, read_rows, segments
from runtime_bridge.host.record_store import SqliteRuntimeJournal
from tests.runtime_bridge.executors import command

ROOT = Path(__file__).resolve().parents[3]


def record(cid: str, state: RuntimeState = RuntimeState.PENDING, *,
           finished: float | None = None) -> RuntimeRecord:
    return RuntimeRecord(cid, command(cid, "wait", steps=0), True, state, state.value, 1.0,
                         finished)


def sqlite_ids(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {r[0] for r in db.execute("SELECT command_id FROM runtime_commands")}
    finally:
        db.close()


def _as_if_killed(journal: LoggedRuntimeJournal) -> None:
    """Drop the journal without folding or closing its segment, as a killed process would."""
    journal._closed = True
    os.close(journal._fd)
    journal._db.close()


def test_a_write_is_an_append_readable_at_once_and_a_fold_moves_it_into_sqlite(tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("a"), record("b")], {"epoch": "3"})
    assert sqlite_ids(path) == set()  # not in SQLite yet ...
    assert journal.get("a").state is RuntimeState.PENDING  # ... but answered from memory
    assert journal.meta("epoch") == "3"
    assert read_rows(path)["b"][0] == "b"  # and another process sees it in the log
    [first] = segments(path)

    assert journal.fold() == 2
    assert sqlite_ids(path) == {"a", "b"}
    assert first not in segments(path) and len(segments(path)) == 1  # a fresh, empty one
    assert journal.get("a").command_id == "a" and journal.meta("epoch") == "3"
    assert journal.fold() == 0  # nothing new
    journal.close()
    assert segments(path) == []  # closing folds what is left and removes the empty segment


@pytest.mark.parametrize("folds", [1, 2])
def test_a_reader_never_misses_a_row_folded_while_it_reads(tmp_path, monkeypatch, folds):
    """The writer folds between the reader's SQLite read and its segment reads (the segment
    it would have read is gone, or a new one started): the reader reads again rather than
    return the state from before the fold."""
    import runtime_bridge.host.record_log as record_log

    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("c")])
    journal.fold()
    journal.write([record("c", RuntimeState.CONTROL_DONE, finished=2.0), record("d")])
    read = record_log._sqlite_rows
    calls = []

    def fold_after_reading(p):
        rows = read(p)
        calls.append(len(rows))
        if len(calls) <= folds:  # the writer folds (and writes again) right after this read
            journal.fold()
            journal.write([record(f"e{len(calls)}")])
        return rows

    monkeypatch.setattr(record_log, "_sqlite_rows", fold_after_reading)
    rows = read_rows(path)
    assert rows["c"][3] == "CONTROL_DONE" and "d" in rows
    assert {f"e{i}" for i in range(1, folds + 1)} <= set(rows)
    assert len(calls) == folds + 1  # one read spoilt by each fold, then a clean one
    journal.close()


def test_a_reader_gives_up_with_a_clear_error_on_a_journal_that_never_holds_still(
        tmp_path, monkeypatch):
    import runtime_bridge.host.record_log as record_log

    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    read = record_log._sqlite_rows

    def fold_every_time(p):
        rows = read(p)
        journal.write([record(f"x{len(rows)}")])
        journal.fold()
        return rows

    monkeypatch.setattr(record_log, "_sqlite_rows", fold_every_time)
    monkeypatch.setattr(record_log, "_READ_ATTEMPTS", 5)
    with pytest.raises(BridgeError, match="changed under every one of 5 reads"):
        read_rows(path)
    journal.close()


def test_the_latest_row_wins_across_folds_and_reopening(tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("c")])
    journal.fold()
    journal.write([record("c", RuntimeState.RUNNING)])
    journal.write([record("c", RuntimeState.CONTROL_DONE, finished=2.0)])
    assert journal.get("c").state is RuntimeState.CONTROL_DONE
    assert read_rows(path)["c"][3] == "CONTROL_DONE"
    journal.close()
    again = LoggedRuntimeJournal(path)
    assert again.get("c").state is RuntimeState.CONTROL_DONE
    assert again.unfinished() == []
    again.close()


def test_a_purged_record_does_not_come_back_from_a_segment(tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("old", RuntimeState.CONTROL_DONE, finished=5.0), record("kept")])
    assert journal.purge(finished_before_wall=10.0) == 1  # folds first
    assert journal.get("old") is None
    journal.write([record("new")])
    assert sorted(journal.command_ids()) == ["kept", "new"]
    journal.close()
    assert set(read_rows(path)) == {"kept", "new"}


WRITER = """
import os, sys, time
sys.path.insert(0, sys.argv[2])
from runtime_bridge.host.record_log import LoggedRuntimeJournal
from runtime_bridge.host.record import RuntimeRecord
from harness_bt.runtime.bridge import RuntimeState
from tests.runtime_bridge.executors import command
journal = LoggedRuntimeJournal(sys.argv[1])
for i in range(int(sys.argv[3])):
    cid = f"k{i}"
    journal.write([RuntimeRecord(cid, command(cid, "wait", steps=0), True,
                                 RuntimeState.PENDING, "ACCEPTED", time.time())])
    if i % 50 == 49:
        journal.fold()
    print(cid, flush=True)  # acknowledged: the record is durable
print("waiting", flush=True)
time.sleep(60)  # killed here, its last 27 records in the log only
"""


def test_a_killed_writer_loses_no_acknowledged_record(tmp_path):
    path = tmp_path / "runtime.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(ROOT), "377"],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    acked = []
    try:
        for line in proc.stdout:
            if line.strip() == "waiting":
                os.kill(proc.pid, signal.SIGKILL)
                break
            acked.append(line.strip())
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
    assert len(acked) == 377
    assert len(segments(path)) == 1  # the killed process left its current segment behind
    assert set(acked) == set(read_rows(path))
    assert len(sqlite_ids(path)) == 350  # seven folds reached SQLite
    journal = LoggedRuntimeJournal(path)
    assert journal.recovered == 27
    assert segments(path) == [journal._segment]  # the old one replayed and gone; a fresh one
    assert all(journal.get(cid) is not None for cid in acked)
    assert set(acked) == sqlite_ids(path)
    journal.close()


def test_a_torn_last_frame_is_dropped_and_the_rest_replayed(tmp_path, caplog):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("whole")])
    seg = segments(path)[-1]
    _as_if_killed(journal)
    with open(seg, "ab") as fh:
        fh.write(b"\x40\x00\x00\x00\x00\x00\x00\x00{\"cut")  # a frame header promising 64 bytes
    assert set(read_rows(path)) == {"whole"}
    again = LoggedRuntimeJournal(path)
    assert again.get("whole") is not None and again.recovered == 1
    assert "a write the runtime died in" in caplog.text
    again.close()


def test_a_bad_frame_before_the_end_is_corruption_and_opening_refuses(tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("one")])
    journal.write([record("two")])
    seg = segments(path)[-1]
    _as_if_killed(journal)
    data = bytearray(seg.read_bytes())
    data[len(SEGMENT_MAGIC) + 12] ^= 0xFF  # inside the first frame's payload
    seg.write_bytes(bytes(data))
    with pytest.raises(BridgeError) as err:
        LoggedRuntimeJournal(path)
    assert err.value.code == "JOURNAL_FAILED"
    assert str(seg) in err.value.message and f"offset {len(SEGMENT_MAGIC)}" in err.value.message
    assert "checksum" in err.value.message and err.value.fix
    assert seg.exists()  # kept for inspection


def test_a_file_that_is_not_a_segment_is_refused(tmp_path):
    path = tmp_path / "runtime.db"
    Path(f"{path}-hbtlog.000001").write_bytes(b"something else entirely")
    Path(f"{path}-hbtlog.000002").write_bytes(SEGMENT_MAGIC)
    with pytest.raises(BridgeError, match="does not start with"):
        LoggedRuntimeJournal(path)


def test_a_failed_fold_keeps_the_rows_and_the_segment_and_the_next_fold_finishes(
        tmp_path, monkeypatch):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("x")])
    first = segments(path)[0]

    def broken(rows, meta=None):  # type: ignore[no-untyped-def]
        raise BridgeError("JOURNAL_FAILED", "disk full")

    monkeypatch.setattr(journal._db, "write_rows", broken)
    with pytest.raises(BridgeError, match="disk full"):
        journal.fold()
    assert journal.get("x") is not None and first.exists()
    journal.write([record("x", RuntimeState.RUNNING)])  # newer than the row the fold gave back
    monkeypatch.undo()
    assert journal.fold() == 1
    assert not first.exists() and journal.get("x").state is RuntimeState.RUNNING
    journal.close()
    assert sqlite_ids(path) == {"x"}


def test_a_record_that_cannot_be_stored_is_refused_at_write_and_nothing_is_appended(
        tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    size = segments(path)[-1].stat().st_size
    rec = RuntimeRecord("odd-\ud800-id", None, False, RuntimeState.STOPPED,
                        "CANCELED_BEFORE_RECEIPT",
                        1.0, 2.0)  # a lone surrogate: SQLite could not store it either
    with pytest.raises(BridgeError, match="cannot be journaled") as err:
        journal.write([rec])
    assert err.value.code == "JOURNAL_FAILED" and err.value.fix
    assert segments(path)[-1].stat().st_size == size
    journal.write([record("fine")])
    journal.close()
    assert set(read_rows(path)) == {"fine"}


def test_a_frame_is_length_and_checksum_then_json(tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("f")], {"epoch": "1"})
    data = segments(path)[-1].read_bytes()[len(SEGMENT_MAGIC):]
    size = int.from_bytes(data[:4], "little")
    assert int.from_bytes(data[4:8], "little") == zlib.crc32(data[8:8 + size])
    rows, meta = json.loads(data[8:8 + size])
    assert rows[0][0] == "f" and meta == {"epoch": "1"}
    journal.close()


def test_the_sqlite_journal_underneath_stays_readable_on_its_own(tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("s")])
    journal.close()
    plain = SqliteRuntimeJournal(path)
    assert plain.get("s").command_id == "s"
    plain.close()


def test_a_write_during_a_fold_lands_in_the_new_segment_and_wins_after_a_crash(tmp_path):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("x")])
    write_rows = journal._db.write_rows

    def slow_fold(rows, meta=None):  # type: ignore[no-untyped-def]
        journal.write([record("x", RuntimeState.RUNNING)])  # a step's change while SQLite is busy
        assert journal.get("x").state is RuntimeState.RUNNING  # the newest row answers at once
        write_rows(rows, meta)

    journal._db.write_rows = slow_fold  # type: ignore[method-assign]
    assert journal.fold() == 1
    journal._db.write_rows = write_rows  # type: ignore[method-assign]
    assert journal.get("x").state is RuntimeState.RUNNING
    assert read_rows(path)["x"][3] == "RUNNING"
    _as_if_killed(journal)
    again = LoggedRuntimeJournal(path)  # SQLite has PENDING, the new segment RUNNING
    assert again.get("x").state is RuntimeState.RUNNING
    again.close()


def test_segments_left_after_a_committed_fold_replay_to_the_same_state(tmp_path, monkeypatch):
    path = tmp_path / "runtime.db"
    journal = LoggedRuntimeJournal(path)
    journal.write([record("y"), record("z", RuntimeState.CONTROL_DONE, finished=3.0)])
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: None)  # dies before
    journal.fold()  # SQLite committed, the old segment still there
    monkeypatch.undo()
    assert len(segments(path)) == 2
    _as_if_killed(journal)
    again = LoggedRuntimeJournal(path)
    assert (again.get("y").state, again.get("z").state) == (
        RuntimeState.PENDING, RuntimeState.CONTROL_DONE)
    assert len(segments(path)) == 1 and again.recovered == 2
    again.close()
