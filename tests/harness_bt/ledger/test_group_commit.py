"""Group commit: a group's calls take effect at once and reach the disk together, a flush makes
them durable before anything outside acts on them, and a crash loses only what nothing acted
on. Snapshots: a reopen from the newest snapshot plus the tail is the ledger a full replay
gives."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness_bt.ledger import Command, CommandEvent, CommandState, Ledger, LedgerError

GROUP_WRITER = Path(__file__).with_name("crash_group_writer.py")


def rows_on_disk(path: Path) -> list[int]:
    """The journal's seqs as another process would read them."""
    db = sqlite3.connect(path)
    try:
        return [s for (s,) in db.execute("SELECT seq FROM ledger_journal ORDER BY seq")]
    finally:
        db.close()


def test_calls_in_a_group_take_effect_at_once_and_reach_the_disk_together(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    with led.group():
        rec = led.submit(cmd("nav-1", world_version=0), now=0.0)
        led.dispatch("nav-1", now=0.1)
        assert rec.state is CommandState.ACCEPTED and rec.dispatched_at == 0.1
        assert led.durable_seq == 0 and rows_on_disk(journal_path) == []
    assert led.durable_seq == 2 and rows_on_disk(journal_path) == [1, 2]
    led.close()


def test_flush_commits_what_the_group_holds_and_later_calls_wait_for_the_end(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    with led.group():
        led.submit(cmd("nav-1", world_version=0), now=0.0)
        led.dispatch("nav-1", now=0.1)
        assert led.flush() == 2
        assert rows_on_disk(journal_path) == [1, 2]
        led.apply(CommandEvent("nav-1", 1, "started"), now=0.2)
        assert (led.durable_seq, rows_on_disk(journal_path)) == (2, [1, 2])
    assert (led.durable_seq, rows_on_disk(journal_path)) == (3, [1, 2, 3])
    led.close()


def test_groups_nest_and_only_the_outermost_end_commits(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    with led.group():
        with led.group():
            led.submit(cmd("nav-1", world_version=0), now=0.0)
        assert rows_on_disk(journal_path) == []
        led.dispatch("nav-1", now=0.1)
    assert rows_on_disk(journal_path) == [1, 2]
    led.close()


def test_an_in_memory_ledger_takes_groups_and_flushes_as_no_ops(cmd):
    led = Ledger()
    with led.group():
        led.submit(cmd("nav-1", world_version=0), now=0.0)
        assert led.flush() == led.durable_seq == 1


def test_another_threads_call_during_a_group_is_on_disk_when_it_returns(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    with led.group():
        led.submit(cmd("nav-1", world_version=0), now=0.0)
        worker = threading.Thread(
            target=led.submit, args=(cmd("grip-1", world_version=0, resources=("gripper",)),),
            kwargs={"now": 0.1})
        worker.start()
        worker.join()
        # the other thread's entry, and the held one before it, in journal order
        assert rows_on_disk(journal_path) == [1, 2]
    led.close()


def test_a_group_cannot_open_in_a_second_thread_while_one_is_open(journal_path):
    led = Ledger.open(journal_path, now=0.0)
    errors: list[LedgerError] = []

    def other() -> None:
        try:
            with led.group():
                pass
        except LedgerError as exc:
            errors.append(exc)

    with led.group():
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert [(e.code, e.message) for e in errors] == [
        ("INVALID_TRANSITION", "a ledger group is already open in another thread")]
    led.close()


class _FailingDb:
    """A connection whose writes fail (a full disk), reads pass through."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __getattr__(self, name: str):
        return getattr(self._db, name)

    def execute(self, sql: str, *args):
        if sql.startswith(("INSERT", "BEGIN")):
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)


def test_a_failed_group_commit_refuses_every_later_call_until_reopened(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    led.submit(cmd("nav-1", world_version=0), now=0.0)
    journal = led._journal
    assert journal is not None
    real = journal._db
    with pytest.raises(LedgerError, match=r"disk is full; entries 2\.\.3 took effect in "
                       r"memory but are not on disk") as failed, led.group():
        led.dispatch("nav-1", now=0.1)
        led.apply(CommandEvent("nav-1", 1, "started"), now=0.2)
        journal._db = _FailingDb(real)  # type: ignore[assignment]
    assert failed.value.code == "JOURNAL_FAILED"
    assert "open the journal again" in (failed.value.fix or "")
    journal._db = real
    with pytest.raises(LedgerError, match="took effect in memory"):
        led.cancel("nav-1", now=0.3)
    led.close()  # closes without writing anything more

    again = Ledger.open(journal_path, now=1.0)
    rec = again.get("nav-1")  # what is on disk: accepted, never dispatched
    assert (rec.state, rec.dispatched_at, again.restarted) == (
        CommandState.UNKNOWN, None, ["nav-1"])
    again.close()


@pytest.mark.parametrize("seed", range(4))
def test_a_crash_between_a_ticks_events_and_its_commit_loses_no_acknowledged_effect(
        tmp_path, seed):
    path = tmp_path / f"crash-{seed}.db"
    kill_after = random.Random(seed).randrange(3, 200)
    proc = subprocess.Popen([sys.executable, str(GROUP_WRITER), str(path), str(seed)],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    acked: list[dict] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            acked.append(json.loads(line))
            if len(acked) >= kill_after:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert len(acked) >= min(kill_after, 3), "the writer died before it acknowledged anything"

    seqs = rows_on_disk(path)
    assert seqs == list(range(1, len(seqs) + 1)), "the journal on disk is not a prefix"
    led = Ledger.open(path, now=1e6)
    try:
        for ack in acked:
            rec = led.get(ack["id"])
            assert ack["seq"] <= ack["durable"] <= seqs[-1]
            assert rec.dispatched_at is not None, f"acknowledged dispatch {ack} was lost"
        assert all(r.terminal or r.state is CommandState.UNKNOWN for r in led.records())
    finally:
        led.close()


def random_ledger(path: Path, seed: int, *, calls: int, snapshot_every: int | None) -> Ledger:
    """A ledger driven through every kind of call, left open (some commands non-terminal)."""
    rng = random.Random(seed)
    led = Ledger.open(path, now=0.0, snapshot_every=snapshot_every, wall_clock=lambda: 1e9)
    now = 0.0
    for n in range(calls):
        now += 0.05
        cid = f"c{n}"
        res = rng.choice(["arm", "gripper", "base", "head"])
        holder = led.holder(res)
        if holder is not None:
            if holder.state is CommandState.UNKNOWN:
                led.reconcile(holder.command_id, now=now)
                led.verdict(holder.command_id, "FAILED", evidence=[{"why": "gone"}], now=now)
            else:
                led.cancel(holder.command_id, now=now)
                led.apply(CommandEvent(holder.command_id, 7, "stopped"), now=now)
        with led.group():
            led.submit(Command(command_id=cid, skill="s", params={"k": n, "xs": [n, 0.5]},
                               world_version=led.world_version,
                               resources=(res,), start_within_ms=rng.choice([20, 10_000]),
                               execution_timeout_ms=200), now=now)
            if rng.random() < 0.8:
                led.dispatch(cid, now=now)
            for seq, kind in enumerate(("started", "progress", "control_done")[
                    :rng.randrange(4)], start=1):
                led.apply(CommandEvent(cid, seq, kind, progress=0.5 if seq == 2 else None),
                          now=now)
            if led.get(cid).state is CommandState.EVALUATING and rng.random() < 0.7:
                led.verdict(cid, rng.choice(["SUCCEEDED", "FAILED", "UNKNOWN"]),
                            evidence=["seen"], now=now)
            led.tick(now=now + rng.choice([0.0, 0.5]))
        if rng.random() < 0.1:
            led.world_version = n
    return led


def full_state(led: Ledger) -> dict:
    return {"snapshot": led.snapshot(), "restarted": led.restarted,
            "records": [(r.command, r.state, r.reason, r.accepted_at, r.start_deadline,
                         r.dispatched_at, r.started_at, r.exec_deadline, r.stop_requested,
                         r.stop_deadline, r.terminal_at, r.last_seq, r.progress,
                         r.last_progress_at, r.control_done_seen, r.prior_state, r.evidence,
                         r.events) for r in led.records()]}


@pytest.mark.parametrize("seed", range(3))
def test_reopen_from_the_newest_snapshot_and_the_tail_equals_a_full_replay(tmp_path, seed):
    path = tmp_path / "run.db"
    led = random_ledger(path, seed, calls=60, snapshot_every=40)
    journal = led._journal
    assert journal is not None and 0 < journal.snapshot_seq < journal.last_seq  # a real tail
    led._journal = None  # the process dies: no flush, no snapshot on close
    journal.close()
    plain = tmp_path / "plain.db"
    src, dst = sqlite3.connect(path), sqlite3.connect(plain)
    src.backup(dst)
    dst.execute("DELETE FROM ledger_snapshots")
    dst.commit()
    src.close()
    dst.close()

    from_snapshot = Ledger.open(path, now=100.0, wall_clock=lambda: 2e9)
    replayed = Ledger.open(plain, now=100.0, wall_clock=lambda: 2e9)
    assert full_state(from_snapshot) == full_state(replayed)
    assert from_snapshot.restarted  # some were open
    for led in (from_snapshot, replayed):
        led.close()
    # closed cleanly: the next reopen reads a snapshot with no tail, to the same state
    again = Ledger.open(path, now=200.0, wall_clock=lambda: 3e9)
    plain_again = Ledger.open(plain, now=200.0, wall_clock=lambda: 3e9)
    assert full_state(again) == full_state(plain_again)
    again.close()
    plain_again.close()


def test_a_snapshot_is_written_every_snapshot_every_entries_and_on_close(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0, snapshot_every=4)
    for i in range(5):  # two entries each
        led.submit(cmd(f"c{i}", world_version=0, resources=(f"r{i}",)), now=0.0)
        led.dispatch(f"c{i}", now=0.0)
    journal = led._journal
    assert journal is not None and (journal.snapshot_seq, journal.last_seq) == (8, 10)
    led.close()
    db = sqlite3.connect(journal_path)
    assert db.execute("SELECT seq FROM ledger_snapshots").fetchall() == [(10,)]  # newest only
    db.close()


def test_a_damaged_snapshot_is_ignored_with_a_warning_and_the_journal_replayed(
        journal_path, cmd, caplog):
    led = Ledger.open(journal_path, now=0.0)
    led.submit(cmd("nav-1", world_version=0), now=0.0)
    led.close()
    db = sqlite3.connect(journal_path)
    db.execute("UPDATE ledger_snapshots SET body = replace(body, 'nav-1', 'nav-9')")
    db.commit()
    db.close()
    with caplog.at_level(logging.WARNING, logger="harness_bt.ledger.recovery"):
        again = Ledger.open(journal_path, now=1.0)
    assert again.get("nav-1").state is CommandState.UNKNOWN and "nav-9" not in again
    assert [r.getMessage() for r in caplog.records] == [
        f"{journal_path}: ignoring the ledger snapshot (its sha256 does not match its "
        "content); replaying the whole journal"]
    again.close()


@pytest.mark.parametrize("bad", [0, -5, 2.5, "10"])
def test_snapshot_every_must_be_a_positive_int_or_none(journal_path, bad):
    with pytest.raises(LedgerError, match=rf"snapshot_every={bad!r} must be a positive int "
                       "or None") as e:
        Ledger.open(journal_path, snapshot_every=bad)
    assert (e.value.code, e.value.field) == ("INVALID_COMMAND", "snapshot_every")


@pytest.mark.parametrize("snapshot", [True, False])
def test_non_finite_evidence_and_a_huge_int_param_read_back_equal(journal_path, cmd, snapshot):
    led = Ledger.open(journal_path, now=0.0)
    led.submit(cmd("nav-1", world_version=0, params={"ticks": 2**70 + 1}), now=0.0)
    led.dispatch("nav-1", now=0.1)
    led.apply(CommandEvent("nav-1", 1, "control_done"), now=0.2)
    led.verdict("nav-1", "FAILED", evidence=[{"gap_m": float("nan"), "far": float("inf")}],
                now=0.3)
    before = led.get("nav-1")
    if snapshot:
        led.close()
    else:  # killed: no snapshot
        assert led._journal is not None
        led._journal.close()
        led._journal = None
    again = Ledger.open(journal_path, now=1.0)
    rec = again.get("nav-1")
    assert rec.command == before.command and rec.command.params["ticks"] == 2**70 + 1
    (ev,) = rec.evidence
    assert ev["gap_m"] != ev["gap_m"] and ev["far"] == float("inf")  # NaN stays NaN
    assert [h.to_dict()["seq"] for h in rec.events] == [1, 2, 3, 4]
    again.close()
