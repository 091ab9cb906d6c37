"""The columns of the report's tables, one list per table, shared by the text report and the
HTML page: a column is a heading and how to show a cell. To add a column (a count per fault
kind, say), put the number in the summary or the episode line and add a :class:`Column` here;
both renderings pick it up.

A column with a ``link`` shows a path relative to the report's folder (the entry's value
under that key): the page makes it a link named by the column's heading, the text shows the
path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["EPISODE_COLUMNS", "SUMMARY_COLUMNS", "Column", "judged", "pct", "seconds"]

Cell = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True, slots=True)
class Column:
    """One column: ``head``, the ``cell`` text of a row, whether it is ``numeric`` (aligned
    right), for a link the key of the row's relative path (see the module docstring), and
    when the cell calls for attention (``alert``: the page shows it red)."""

    head: str
    cell: Cell
    numeric: bool = False
    link: str | None = None
    alert: Callable[[Mapping[str, Any]], bool] | None = None


def pct(rate: float | None, interval: Sequence[float] | None = None) -> str:
    """``50 % [15, 85]``; ``-`` for no rate."""
    if rate is None:
        return "-"
    ci = f" [{100 * interval[0]:.0f}, {100 * interval[1]:.0f}]" if interval else ""
    return f"{100 * rate:.0f} %{ci}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def judged(entry: Mapping[str, Any]) -> str:
    """``false success`` / ``false failure`` / empty: the task's verdict against the
    simulator's."""
    if entry.get("false_success"):
        return "false success"
    if entry.get("false_failure"):
        return "false failure"
    return ""


def _text(key: str) -> Cell:
    return lambda row: "-" if row.get(key) is None else str(row[key])


SUMMARY_COLUMNS: tuple[Column, ...] = (
    Column("task", _text("task")),
    Column("condition", _text("condition")),
    Column("episodes", _text("n"), numeric=True),
    Column("success (Wilson 95 %)", lambda s: pct(s["success_rate"], s["success_interval"])),
    Column("simulator", lambda s: pct(s["sim_success_rate"])),
    Column("false successes", _text("false_success_count"), numeric=True,
           alert=lambda s: s["false_success_count"] > 0),
    Column("false failures", _text("false_failure_count"), numeric=True,
           alert=lambda s: s["false_failure_count"] > 0),
    Column("unknown", _text("unknown_count"), numeric=True),
    Column("no result", lambda s: str(s["worker_crashed_count"] + s["error_count"]),
           numeric=True, alert=lambda s: s["worker_crashed_count"] + s["error_count"] > 0),
)

EPISODE_COLUMNS: tuple[Column, ...] = (
    Column("task", _text("task")),
    Column("condition", _text("condition")),
    Column("seed", lambda e: str(e["seed"]) if e.get("seed") is not None else str(e["episode"]),
           numeric=True),
    Column("outcome", _text("outcome")),
    Column("reason", _text("reason")),
    Column("phase", _text("phase")),
    Column("simulator", _text("simulator")),
    Column("false verdict", judged),
    Column("wall s", lambda e: seconds(e.get("wall_s")), numeric=True),
    Column("sim s", lambda e: seconds(e.get("sim_time_s")), numeric=True),
    Column("trace", lambda e: e["trace"] or e["trace_status"], link="trace"),
    Column("replay", lambda e: e.get("replay") or "-", link="replay"),
)
