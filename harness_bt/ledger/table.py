"""The ledger as a rich table, for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from harness_bt.ledger.record import CommandRecord
from harness_bt.ledger.states import CommandState

__all__ = ["STATE_STYLES", "ledger_table"]

STATE_STYLES: dict[CommandState, str] = {
    CommandState.ACCEPTED: "cyan",
    CommandState.RUNNING: "bold blue",
    CommandState.CANCELING: "yellow",
    CommandState.EVALUATING: "magenta",
    CommandState.SUCCEEDED: "bold green",
    CommandState.FAILED: "bold red",
    CommandState.CANCELED: "dim yellow",
    CommandState.UNKNOWN: "bold yellow on red",
    CommandState.RECONCILING: "yellow",
    CommandState.REJECTED: "red",
}


def ledger_table(records: Iterable[CommandRecord], *, title: str = "command ledger",
                 history: bool = False) -> Table:
    """One row per command (and, with ``history``, one dim row per history entry)."""
    table = Table(title=title, show_lines=history, expand=False)
    for col in ("command", "skill", "state", "reason", "resources", "events", "evidence"):
        table.add_column(col, overflow="fold")
    for rec in records:
        style = STATE_STYLES[rec.state]
        table.add_row(
            rec.command_id,
            rec.command.skill,
            f"[{style}]{rec.state.value}[/]",
            rec.reason,
            ", ".join(rec.command.resources) or "-",
            str(len(rec.events)),
            "; ".join(str(e) for e in rec.evidence) or "-",
        )
        if history:
            for h in rec.events:
                before = h.state_before.value if h.state_before else "-"
                mark = "" if h.applied else " (ignored)"
                rseq = "" if h.runtime_seq is None else f" rseq={h.runtime_seq}"
                table.add_row(
                    f"[dim]  #{h.seq}[/]",
                    f"[dim]{h.op}{rseq}[/]",
                    f"[dim]{before} -> {h.state_after.value}[/]",
                    f"[dim]{h.reason}{mark}[/]",
                    f"[dim]t={h.mono:.3f}[/]",
                    "",
                    f"[dim]{h.detail}[/]" if h.detail else "",
                )
    return table
