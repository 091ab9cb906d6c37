"""The ledger walkthrough: one command through its lifecycle, printed as tables."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from harness_bt.clock import FakeClock
from harness_bt.ledger import Command, CommandEvent, Ledger, LedgerError, ledger_table

__all__ = ["ledger_walkthrough"]


def ledger_walkthrough(console: Console | None = None, journal: Path | None = None) -> int:
    """Walk commands through dedup, conflict, cancel without stop confirmation -> UNKNOWN ->
    reconcile, with a durable journal reopened half way. Returns a process exit code."""
    console = console or Console()
    clock = FakeClock()
    tmp = None
    if journal is None:
        tmp = tempfile.TemporaryDirectory(prefix="harness-demo-")
        journal = Path(tmp.name) / "demo.db"
    say = console.print
    try:
        ledger = Ledger.open(journal, wall_clock=clock.wall, now=clock.monotonic())
        ledger.world_version = 7
        say(Panel.fit(f"command ledger walkthrough (journal: {journal})", style="bold"))

        def command(cid: str, **kw: object) -> Command:
            base: dict = dict(
                command_id=cid, task_id="t1", robot_id="robot-01", skill="navigate_to_pose",
                params={"x_m": 1.6, "y_m": 0.5, "frame_id": "map"}, resources=("base",),
                world_version=7, start_within_ms=500, execution_timeout_ms=10_000,
            )
            base.update(kw)
            return Command(**base)

        nav1 = command("nav-1")
        ledger.submit(nav1, now=clock.monotonic())
        ledger.dispatch("nav-1", now=clock.advance(0.05))
        ledger.apply(CommandEvent("nav-1", 1, "started"), now=clock.advance(0.05))
        say("1. resend nav-1 with the same content -> the original record, no second start:",
            ledger.submit(nav1, now=clock.advance(0.1)).state.value)
        try:
            ledger.submit(command("nav-1", params={"x_m": 2.0, "y_m": 0.5, "frame_id": "map"}),
                          now=clock.monotonic())
        except LedgerError as exc:
            say(f"2. same id, other content -> [red]{exc.code}[/]")
        ledger.apply(CommandEvent("nav-1", 1, "started"), now=clock.advance(0.1))
        say("3. a duplicated 'started' event is recorded and ignored:",
            ledger.get("nav-1").events[-1].reason)
        ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=clock.advance(1.0))
        say("4. control done is not success; the evaluator decides:",
            ledger.get("nav-1").state.value)
        ledger.verdict("nav-1", "SUCCEEDED", evidence=["base within 0.05 m of (1.6, 0.5)"],
                       now=clock.advance(0.2))
        try:
            ledger.submit(command("old", world_version=6), now=clock.monotonic())
        except LedgerError as exc:
            say(f"5. planned on an old world version -> [red]{exc.code}[/]")
        ledger.submit(command("nav-2"), now=clock.advance(0.1))
        ledger.dispatch("nav-2", now=clock.advance(0.05))
        ledger.apply(CommandEvent("nav-2", 1, "started"), now=clock.advance(0.05))
        ledger.cancel("nav-2", now=clock.advance(0.5), stop_timeout_s=1.0)
        ledger.cancel("nav-2", now=clock.advance(0.5), stop_timeout_s=1.0)
        ledger.apply(CommandEvent("nav-2", 2, "control_done"), now=clock.advance(0.1))
        say("6. cancel, cancel again (the stop deadline is not extended), a late control_done:",
            ledger.get("nav-2").state.value)
        ledger.tick(now=clock.advance(0.5))
        say("7. no stop confirmation within 1 s ->", ledger.get("nav-2").state.value,
            ledger.get("nav-2").reason)
        try:
            ledger.submit(command("nav-3"), now=clock.advance(0.1))
        except LedgerError as exc:
            say(f"8. UNKNOWN still holds the base: nav-3 -> [red]{exc.code}[/]")
        ledger.close()
        ledger = Ledger.open(journal, wall_clock=clock.wall, now=clock.advance(1.0))
        say("9. reopened from the journal:", len(ledger), "records;",
            "nav-2 is still", ledger.get("nav-2").state.value)
        ledger.reconcile("nav-2", now=clock.advance(0.1), note="query the runtime")
        ledger.apply(CommandEvent("nav-2", 3, "stopped"), now=clock.advance(0.1))
        say("10. the runtime confirms the stop while reconciling ->",
            ledger.get("nav-2").state.value)
        ledger.submit(command("nav-3"), now=clock.advance(0.1))
        say("11. the base is free again: nav-3 ->", ledger.get("nav-3").state.value)
        console.print(ledger_table(ledger.records(), history=True))
        ledger.close()
        return 0
    finally:
        if tmp is not None:
            tmp.cleanup()
