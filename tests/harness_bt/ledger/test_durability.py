"""The SQLite journal: reopening recovers, non-terminals come back UNKNOWN, corrupt files fail
clearly, and a writer killed with SIGKILL at any moment leaves every returned call on disk."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness_bt.ledger import CommandEvent, CommandState, Ledger, LedgerError

WRITER = Path(__file__).with_name("crash_writer.py")


def test_reopen_recovers_records_meta_and_history(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    led.world_version = 7
    led.epoch = 2
    led.submit(cmd("done", epoch=2), now=0.0)
    led.dispatch("done", now=0.1)
    led.apply(CommandEvent("done", 1, "started"), now=0.2)
    led.apply(CommandEvent("done", 2, "control_done"), now=0.3)
    led.verdict("done", "SUCCEEDED", evidence=["seen at goal"], now=0.4)
    before = led.snapshot()
    history = [h.to_dict() for h in led.get("done").events]
    led.close()

    again = Ledger.open(journal_path, now=5.0)
    assert again.snapshot() == before
    assert [h.to_dict() for h in again.get("done").events] == history
    assert (again.world_version, again.epoch) == (7, 2)
    assert again.restarted == []
    again.close()


def test_reopen_turns_non_terminals_unknown_and_keeps_their_resources(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    led.world_version = 7
    led.submit(cmd("nav-1"), now=0.0)
    led.dispatch("nav-1", now=0.1)
    led.apply(CommandEvent("nav-1", 1, "started"), now=0.2)
    led.submit(cmd("grip-1", resources=("gripper",)), now=0.3)
    led.close()

    again = Ledger.open(journal_path, now=10.0)
    for cid, prior in (("nav-1", CommandState.RUNNING), ("grip-1", CommandState.ACCEPTED)):
        rec = again.get(cid)
        assert (rec.state, rec.reason, rec.prior_state) == (
            CommandState.UNKNOWN, "RESTARTED", prior)
    assert sorted(again.restarted) == ["grip-1", "nav-1"]
    assert again.held_resources() == {"base": "nav-1", "gripper": "grip-1"}
    with pytest.raises(LedgerError) as e:
        again.submit(cmd("nav-2"), now=10.1)
    assert e.value.code == "RESOURCE_BUSY"
    # a resend after the restart is still deduplicated, not re-executed
    assert again.submit(cmd("nav-1"), now=10.2).state is CommandState.UNKNOWN
    again.reconcile("nav-1", now=10.3)
    again.verdict("nav-1", "FAILED", evidence=["runtime: never finished"], now=10.4)
    again.close()

    third = Ledger.open(journal_path, now=20.0)
    assert third.get("nav-1").state is CommandState.FAILED
    assert third.get("grip-1").state is CommandState.UNKNOWN
    assert third.restarted == ["grip-1"]
    third.close()


def test_a_file_that_is_not_a_journal_fails_clearly(tmp_path):
    bogus = tmp_path / "notes.db"
    bogus.write_bytes(b"this is not an sqlite database at all" * 100)
    with pytest.raises(LedgerError, match="cannot open the journal") as e:
        Ledger.open(bogus)
    assert e.value.code == "JOURNAL_FAILED"
    assert "harness-bt journal" in (e.value.fix or "")


def test_a_journal_with_a_corrupt_entry_fails_clearly(journal_path, cmd):
    led = Ledger.open(journal_path, now=0.0)
    led.submit(cmd(world_version=0), now=0.0)
    led.close()
    import sqlite3

    db = sqlite3.connect(journal_path)
    db.execute("UPDATE ledger_journal SET body = '{not json' WHERE seq = 1")
    db.execute("DELETE FROM ledger_snapshots")  # else the reopen never reads entry 1
    db.commit()
    db.close()
    with pytest.raises(LedgerError, match="cannot read the journal") as e:
        Ledger.open(journal_path)
    assert e.value.code == "JOURNAL_FAILED"


def test_a_journal_of_another_format_is_refused(journal_path):
    Ledger.open(journal_path).close()
    import sqlite3

    db = sqlite3.connect(journal_path)
    db.execute("UPDATE ledger_info SET value = '99' WHERE key = 'format'")
    db.commit()
    db.close()
    with pytest.raises(LedgerError, match="format 99") as e:
        Ledger.open(journal_path)
    assert e.value.code == "JOURNAL_FAILED"


@pytest.mark.parametrize("seed", range(6))
def test_sigkill_at_any_moment_leaves_every_returned_call_in_the_journal(tmp_path, seed):
    path = tmp_path / f"crash-{seed}.db"
    rng = random.Random(seed)
    kill_after = rng.randrange(5, 400)
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(path), str(seed)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    returned: list[dict] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            returned.append(json.loads(line))
            if len(returned) >= kill_after:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert len(returned) >= min(kill_after, 5), "the writer died before it wrote anything"

    led = Ledger.open(path, now=1e6)
    try:
        for call in returned:
            rec = led.get(call["id"])
            seqs = {h.seq for h in rec.events}
            assert call["seq"] in seqs, f"returned call {call} is missing after the crash"
        holders = led.held_resources()
        for rec in led.records():
            assert rec.terminal or rec.state is CommandState.UNKNOWN
            for res in rec.command.resources:
                if not rec.terminal:
                    assert holders[res] == rec.command_id
        assert len(set(holders.values())) == len(holders)
    finally:
        led.close()
