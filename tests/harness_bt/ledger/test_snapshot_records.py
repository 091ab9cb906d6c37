"""Snapshot records are built lazily: a reopen reads the header and splits the lines; a record
is built (its command validated) the first time it is read, and an unread record's line is
copied into the next snapshot as it is. Commands carry their journal text (``wire_text``)."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3

import pytest

from harness_bt.ledger import CommandEvent, Ledger, LedgerError, snapshot
from harness_bt.ledger.snapshot import SnapshotRecord
from harness_bt.ledger.states import CommandState


def _finished(path, cmd, ids=("nav-1", "nav-2")) -> Ledger:
    led = Ledger.open(path, now=0.0, wall_clock=lambda: 1e9)
    for i, cid in enumerate(ids):
        led.submit(cmd(cid, world_version=0, resources=(f"r{i}",)), now=0.0)
        led.dispatch(cid, now=0.1)
        led.apply(CommandEvent(cid, 1, "started"), now=0.2)
        led.apply(CommandEvent(cid, 2, "control_done"), now=0.3)
        led.verdict(cid, "SUCCEEDED", evidence=[{"gap_m": 0.04}], now=0.4)
    return led


def _snapshot(path) -> tuple[int, str, str]:
    """The newest snapshot as one text: its header, then its record lines (chunk by chunk)."""
    db = sqlite3.connect(path)
    seq, head, sha = db.execute("SELECT seq, body, sha256 FROM ledger_snapshots").fetchone()
    chunks = dict(db.execute("SELECT id, body FROM ledger_snapshot_chunks"))
    db.close()
    return seq, "\n".join([head, *(chunks[c] for c in json.loads(head)["chunks"])]), sha


def _replace_snapshot(path, body: str) -> None:
    """Store ``body`` (a header line, then record lines) as the snapshot: the lines in one
    chunk, the header naming it, each with its own sha256."""
    head, _, lines = body.partition("\n")
    data = json.loads(head)
    db = sqlite3.connect(path)
    db.execute("DELETE FROM ledger_snapshot_chunks")
    if lines:
        db.execute("INSERT INTO ledger_snapshot_chunks(id, sha256, body) VALUES (7, ?, ?)",
                   (hashlib.sha256(lines.encode()).hexdigest(), lines))
        head = json.dumps(data | {"chunks": [7]})
    db.execute("UPDATE ledger_snapshots SET body = ?, sha256 = ?",
               (head, hashlib.sha256(head.encode()).hexdigest()))
    db.commit()
    db.close()


def _edit_first_command(path, edit) -> None:
    """Replace the command of the snapshot's first record line by ``edit(command)``."""
    _, body, _ = _snapshot(path)
    head, line1, line2 = body.split("\n")
    row = json.loads(line1)
    row[0] = edit(row[0])
    _replace_snapshot(path, "\n".join([head, json.dumps(row), line2]))


def test_a_record_from_a_snapshot_is_built_when_first_read_and_equals_the_one_written(
        journal_path, cmd):
    led = _finished(journal_path, cmd)
    before = led.get("nav-1")
    written = (before.command, before.state, before.reason, before.evidence, before.events)
    led.close()
    again = Ledger.open(journal_path, now=1.0)
    rec = again.find("nav-1")
    assert type(rec) is SnapshotRecord and rec._line is not None  # not built yet
    assert (rec.command, rec.state, rec.reason, rec.evidence, rec.events) == written
    assert rec._line is None  # built by the first read
    again.close()


def test_a_snapshot_copies_an_unread_record_line_as_it_is_and_encodes_a_changed_one(
        journal_path, cmd):
    _finished(journal_path, cmd).close()
    _, first, _ = _snapshot(journal_path)
    again = Ledger.open(journal_path, now=1.0)
    again.apply(CommandEvent("nav-2", 3, "progress"), now=1.0)  # a late event: noted on nav-2
    again.close()
    _, second, _ = _snapshot(journal_path)
    old, new = first.split("\n"), second.split("\n")
    assert new[1] == old[1]  # nav-1, never read: the same line
    assert new[2] != old[2] and '"LATE_AFTER_SUCCEEDED"' in new[2]
    third = Ledger.open(journal_path, now=2.0)
    assert [h.reason for h in third.get("nav-2").events][-1] == "LATE_AFTER_SUCCEEDED"
    third.close()


def test_a_snapshot_line_that_does_not_read_back_is_a_journal_failed_error_when_read(
        journal_path, cmd):
    _finished(journal_path, cmd).close()
    _edit_first_command(journal_path, lambda c: {**c, "start_within_ms": "soon"})  # not a number
    again = Ledger.open(journal_path, now=1.0)  # terminal records are not read at open
    assert again.get("nav-2").state is CommandState.SUCCEEDED
    with pytest.raises(LedgerError) as e:
        _ = again.get("nav-1").state
    assert e.value.code == "JOURNAL_FAILED"
    assert "start_within_ms" in str(e.value) and "DELETE FROM ledger_snapshots" in e.value.fix
    again._journal.close()  # type: ignore[union-attr]
    again._journal = None


def test_a_snapshot_whose_lines_do_not_match_its_ids_is_ignored_and_the_journal_replayed(
        journal_path, cmd, caplog):
    _finished(journal_path, cmd).close()
    _, body, _ = _snapshot(journal_path)
    _replace_snapshot(journal_path, body.rsplit("\n", 1)[0])  # the last record's line lost
    with caplog.at_level(logging.WARNING, logger="harness_bt.ledger.recovery"):
        again = Ledger.open(journal_path, now=1.0)
    assert "2 ids and 1 record lines" in caplog.text
    assert {r.command_id: r.state for r in again.records()} == {
        "nav-1": CommandState.SUCCEEDED, "nav-2": CommandState.SUCCEEDED}
    again.close()


def test_a_snapshot_of_the_previous_format_is_ignored_and_the_journal_replayed(
        journal_path, cmd, caplog):
    _finished(journal_path, cmd).close()
    _replace_snapshot(journal_path, json.dumps({"format": 1, "seq": 10, "records": []}))
    with caplog.at_level(logging.WARNING, logger="harness_bt.ledger.recovery"):
        again = Ledger.open(journal_path, now=1.0)
    assert "it is of format 1, this version reads 3" in caplog.text
    assert again.get("nav-2").state is CommandState.SUCCEEDED
    again.close()


@pytest.mark.parametrize("params", [
    {"x_m": 1.5, "path": [[0, 1], (2, 3)], "frame": None},
    {"ticks": 2**70 + 1},  # past 64 bits: written by json from the wire form
    {"gap": float("nan")},  # written as null, as the wire form has it
])
def test_a_commands_journal_text_reads_back_as_its_wire_form(cmd, params):
    command = cmd("nav-1", params=params)
    assert json.loads(command.wire_text) == command.wire


def test_threads_reading_one_unbuilt_record_at_once_all_see_it_built_once(journal_path, cmd):
    import threading

    _finished(journal_path, cmd, ids=tuple(f"nav-{i}" for i in range(200))).close()
    again = Ledger.open(journal_path, now=1.0)
    records = again.records()
    seen: list[object] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for rec in records:
                seen.append((rec.state, rec.command.command_id, len(rec.events)))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(seen) == 800 and {s for s in seen} == {
        (CommandState.SUCCEEDED, f"nav-{i}", 5) for i in range(200)}
    assert not hasattr(records[0], "no_such_field")
    again.close()


def test_a_snapshot_line_whose_command_is_not_an_object_is_a_journal_failed_error_when_read(
        journal_path, cmd):
    _finished(journal_path, cmd).close()
    _edit_first_command(journal_path, lambda c: list(c.values()))  # the previous format's array
    again = Ledger.open(journal_path, now=1.0)
    with pytest.raises(LedgerError) as e:
        _ = again.get("nav-1").state
    assert e.value.code == "JOURNAL_FAILED" and "not an object" in str(e.value)
    assert again.get("nav-2").state is CommandState.SUCCEEDED
    again._journal.close()  # type: ignore[union-attr]
    again._journal = None


def _chunk_rows(path) -> dict[int, str]:
    db = sqlite3.connect(path)
    rows = dict(db.execute("SELECT id, body FROM ledger_snapshot_chunks"))
    db.close()
    return rows


def test_a_snapshot_stores_again_only_the_chunks_whose_lines_changed(
        journal_path, cmd, monkeypatch):
    monkeypatch.setattr(snapshot, "CHUNK_RECORDS", 2)
    ids = [f"nav-{i}" for i in range(5)]
    led = _finished(journal_path, cmd, ids)
    written = {r.command_id: (r.state, r.events) for r in led.records()}
    led.close()
    first = _chunk_rows(journal_path)
    assert len(first) == 3  # 2 + 2 + 1 records
    again = Ledger.open(journal_path, now=1.0)
    again.apply(CommandEvent("nav-2", 3, "progress"), now=1.0)  # a late event: chunk 2 changes
    again.close()
    second = _chunk_rows(journal_path)
    head = json.loads(_snapshot(journal_path)[1].split("\n")[0])
    old = sorted(first)
    assert head["chunks"] == [old[0], max(second), old[2]]  # the first and last kept as stored
    assert set(second) == set(head["chunks"])  # the replaced chunk dropped
    assert second[old[0]] == first[old[0]] and second[old[2]] == first[old[2]]
    third = Ledger.open(journal_path, now=2.0)
    assert {r.command_id: r.state for r in third.records()} == {
        cid: state for cid, (state, _) in written.items()}
    assert third.get("nav-2").events[-1].reason == "LATE_AFTER_SUCCEEDED"
    assert third.get("nav-4").events == written["nav-4"][1]
    third.close()


@pytest.mark.parametrize("damage", ["changed", "missing"])
def test_a_snapshot_with_a_damaged_or_missing_chunk_is_ignored_and_the_journal_replayed(
        journal_path, cmd, monkeypatch, caplog, damage):
    monkeypatch.setattr(snapshot, "CHUNK_RECORDS", 1)
    _finished(journal_path, cmd).close()
    second = max(_chunk_rows(journal_path))
    db = sqlite3.connect(journal_path)
    if damage == "changed":
        db.execute("UPDATE ledger_snapshot_chunks SET body = replace(body, 'SUCCEEDED', "
                   "'FAILED') WHERE id = ?", (second,))
    else:
        db.execute("DELETE FROM ledger_snapshot_chunks WHERE id = ?", (second,))
    db.commit()
    db.close()
    with caplog.at_level(logging.WARNING, logger="harness_bt.ledger.recovery"):
        again = Ledger.open(journal_path, now=1.0)
    why = (f"the sha256 of its chunk {second} does not match its content" if damage == "changed"
           else f"its chunk {second} is not in the file")
    assert why in caplog.text and "replaying the whole journal" in caplog.text
    assert {r.command_id: r.state for r in again.records()} == {
        "nav-1": CommandState.SUCCEEDED, "nav-2": CommandState.SUCCEEDED}
    again.close()  # a whole new snapshot replaces the damaged one
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="harness_bt.ledger.recovery"):
        third = Ledger.open(journal_path, now=2.0)
    assert not caplog.records and type(third.find("nav-2")) is SnapshotRecord
    assert third.get("nav-2").state is CommandState.SUCCEEDED
    third.close()
