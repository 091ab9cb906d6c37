"""Random interleavings of every ledger call, reopen included, checked against the invariants:
terminal never regresses; at most one non-terminal command per resource; no runtime event is
applied twice; a reopened ledger equals the old one except non-terminals -> UNKNOWN."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from harness_bt.ledger import TERMINAL, Command, CommandEvent, CommandState, Ledger, LedgerError

IDS = [f"c{i}" for i in range(6)]
RESOURCES = ["arm", "gripper", "base"]
KINDS = ["started", "progress", "control_done", "aborted", "stopped", "rejected"]


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ledger-hyp-"))
        self.path = self.dir / "j.db"
        self.ledger = Ledger.open(self.path, now=0.0)
        self.now = 0.0
        self.terminal_seen: dict[str, CommandState] = {}

    def teardown(self) -> None:
        self.ledger.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _advance(self, dt: float) -> float:
        self.now += dt
        return self.now

    @rule(cid=st.sampled_from(IDS), res=st.sampled_from(RESOURCES), variant=st.integers(0, 1),
          world=st.integers(0, 2), epoch=st.integers(0, 2), budget=st.sampled_from([0, 50, 500]),
          dt=st.floats(0, 0.2))
    def submit(self, cid, res, variant, world, epoch, budget, dt):
        cmd = Command(command_id=cid, skill="s", params={"v": variant}, resources=(res,),
                      world_version=world, epoch=epoch, start_within_ms=budget,
                      execution_timeout_ms=1000)
        try:
            self.ledger.submit(cmd, now=self._advance(dt))
        except LedgerError as exc:
            assert exc.code in {"COMMAND_ID_CONFLICT", "STALE_WORLD", "STALE_EPOCH",
                                "EXPIRED_COMMAND", "RESOURCE_BUSY"}

    @precondition(lambda self: len(self.ledger) > 0)
    @rule(data=st.data(), dt=st.floats(0, 0.2))
    def dispatch(self, data, dt):
        cid = data.draw(st.sampled_from(sorted(r.command_id for r in self.ledger.records())))
        self.ledger.dispatch(cid, now=self._advance(dt))

    @precondition(lambda self: len(self.ledger) > 0)
    @rule(data=st.data(), kind=st.sampled_from(KINDS), seq=st.integers(0, 8),
          dt=st.floats(0, 0.2))
    def apply(self, data, kind, seq, dt):
        cid = data.draw(st.sampled_from(sorted(r.command_id for r in self.ledger.records())))
        self.ledger.apply(CommandEvent(cid, seq, kind, progress=0.5), now=self._advance(dt))

    @precondition(lambda self: len(self.ledger) > 0)
    @rule(data=st.data(), verdict=st.sampled_from(["SUCCEEDED", "FAILED", "UNKNOWN", "CANCELED"]))
    def verdict(self, data, verdict):
        cid = data.draw(st.sampled_from(sorted(r.command_id for r in self.ledger.records())))
        try:
            self.ledger.verdict(cid, verdict, evidence=["hyp"], now=self._advance(0.01))
        except LedgerError as exc:
            assert exc.code == "INVALID_TRANSITION"

    @precondition(lambda self: len(self.ledger) > 0)
    @rule(data=st.data(), timeout=st.sampled_from([0.1, 1.0]))
    def cancel(self, data, timeout):
        cid = data.draw(st.sampled_from(sorted(r.command_id for r in self.ledger.records())))
        self.ledger.cancel(cid, now=self._advance(0.01), stop_timeout_s=timeout)

    @precondition(lambda self: len(self.ledger) > 0)
    @rule(data=st.data())
    def reconcile(self, data):
        cid = data.draw(st.sampled_from(sorted(r.command_id for r in self.ledger.records())))
        try:
            self.ledger.reconcile(cid, now=self._advance(0.01))
        except LedgerError as exc:
            assert exc.code == "INVALID_TRANSITION"

    @rule(dt=st.floats(0, 2.0), world=st.integers(0, 2), epoch=st.integers(0, 2))
    def tick(self, dt, world, epoch):
        self.ledger.world_version = world
        self.ledger.epoch = epoch
        self.ledger.tick(now=self._advance(dt))

    @rule()
    def reopen(self):
        old = self.ledger.snapshot()
        self.ledger.close()
        self.ledger = Ledger.open(self.path, now=self._advance(0.01))
        new = self.ledger.snapshot()
        assert new["world_version"] == old["world_version"]
        assert new["epoch"] == old["epoch"]
        assert new["holders"] == old["holders"]
        assert new["records"].keys() == old["records"].keys()
        for cid, before in old["records"].items():
            after = new["records"][cid]
            if before["state"] in {s.value for s in TERMINAL}:
                assert after == before
            else:
                assert after["state"] == "UNKNOWN"
                assert {k: v for k, v in after.items() if k not in {"state", "reason"}} == {
                    k: v for k, v in before.items() if k not in {"state", "reason"}
                }

    @invariant()
    def terminal_never_regresses(self):
        for rec in self.ledger.records():
            if rec.command_id in self.terminal_seen:
                assert rec.state is self.terminal_seen[rec.command_id]
            elif rec.terminal:
                self.terminal_seen[rec.command_id] = rec.state

    @invariant()
    def at_most_one_non_terminal_per_resource(self):
        owners: dict[str, str] = {}
        for rec in self.ledger.records():
            if not rec.terminal:
                for res in rec.command.resources:
                    assert res not in owners, (res, owners[res], rec.command_id)
                    owners[res] = rec.command_id
        assert owners == self.ledger.held_resources()

    @invariant()
    def no_runtime_event_applied_twice(self):
        for rec in self.ledger.records():
            applied = [h.runtime_seq for h in rec.events
                       if h.runtime_seq is not None and h.applied]
            assert applied == sorted(set(applied)), applied


TestLedgerStateful = LedgerMachine.TestCase
TestLedgerStateful.settings = settings(
    max_examples=100, stateful_step_count=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
