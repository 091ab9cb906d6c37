"""The runtime journal: ids it knows without asking SQLite, and checkpoints off the writer."""

from __future__ import annotations

import sqlite3

from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.host.record import RuntimeRecord
from runtime_bridge.host.record_store import SqliteRuntimeJournal
from tests.runtime_bridge.executors import command


def record(cid: str, *, finished: float | None = None) -> RuntimeRecord:
    return RuntimeRecord(cid, command(cid, "wait", steps=0), True,
                         RuntimeState.PENDING if finished is None else RuntimeState.CONTROL_DONE,
                         "ACCEPTED", 1.0, finished)


def test_a_reopened_journal_knows_every_id_and_a_purged_one_is_gone(tmp_path):
    path = tmp_path / "runtime.db"
    first = SqliteRuntimeJournal(path)
    first.write([record("old", finished=5.0), record("kept")])
    first.close()

    again = SqliteRuntimeJournal(path)
    assert again.get("new") is None
    assert (again.get("old").command_id, again.get("kept").command_id) == ("old", "kept")
    assert again.purge(finished_before_wall=10.0) == 1
    assert (again.get("old"), again.get("kept").command_id) == (None, "kept")
    again.write([record("old")])  # an id purged after its retention may come back
    assert again.get("old").state is RuntimeState.PENDING
    again.close()


def test_without_autocheckpoint_the_log_waits_for_checkpoint_and_commits_stay_readable(
        tmp_path):
    journal = SqliteRuntimeJournal(tmp_path / "runtime.db", autocheckpoint=False)
    for i in range(300):
        journal.write([record(f"c{i}")])
    logged, copied = journal.checkpoint()
    assert logged >= 300 and copied == logged
    other = sqlite3.connect(tmp_path / "runtime.db")  # what a restarted runtime would read
    assert other.execute("SELECT COUNT(*) FROM runtime_commands").fetchone() == (300,)
    other.close()
    assert journal.commits == 301  # the format row, then one commit per write
    journal.close()


def test_only_finished_rows_are_indexed_and_an_older_journals_full_index_is_replaced(tmp_path):
    path = tmp_path / "runtime.db"
    SqliteRuntimeJournal(path).close()
    older = sqlite3.connect(path)  # the index an older version made: every row, finished or not
    older.execute("DROP INDEX runtime_commands_finished_only")
    older.execute("CREATE INDEX runtime_commands_finished ON runtime_commands(finished_wall)")
    older.close()

    journal = SqliteRuntimeJournal(path)
    journal.write([record("done", finished=5.0), record("pending")])
    db = sqlite3.connect(path)
    indexes = {name: sql for name, sql in db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL")}
    assert list(indexes) == ["runtime_commands_finished_only"]
    assert "WHERE finished_wall IS NOT NULL" in indexes["runtime_commands_finished_only"]
    plan = db.execute("EXPLAIN QUERY PLAN DELETE FROM runtime_commands WHERE finished_wall "
                      "IS NOT NULL AND finished_wall < ?", (10.0,)).fetchall()
    assert "runtime_commands_finished_only" in str(plan)
    db.close()
    assert [r.command_id for r in journal.unfinished()] == ["pending"]
    assert journal.purge(finished_before_wall=10.0) == 1
    journal.close()
