"""Every episode as the report lists it, and the order of the phases.

:func:`episode_entry` turns one results-store row into the report's line for it: seed,
outcome, reason, the phase it ended in, the simulator's verdict, false success / false failure,
wall and simulated time, and links (paths relative to the report's folder) to its trace file
and replay page. A trace the store names but the disk no longer holds is ``missing``, never a
dead link.

:func:`phase_order` orders phases by execution, not by name: each row keeps its phases in the
order the episode first entered them (``phase_times``), and the episodes' orders are merged, a
phase first seen in a later episode going right after the phase that preceded it there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["TRACE_STATUS", "episode_entry", "episode_key", "false_failure", "phase_order",
           "simulator_verdict"]

#: What the report says about an episode's trace file.
TRACE_STATUS = ("kept", "missing", "not kept")


def false_failure(row: Mapping[str, Any]) -> bool:
    """The task did not succeed (failed, aborted, unknown) while the simulator judged the
    episode a success: the mirror of a false success."""
    return row["outcome"] != "succeeded" and row.get("sim_success") is True


def episode_key(row: Mapping[str, Any]) -> str:
    """``task/digest/condition/episode``: an episode's key in the report's link maps (the
    task label tells apart the two sides of a folder comparison)."""
    return f"{row['task']}/{row['digest']}/{row['condition']}/{row['episode']}"


def simulator_verdict(sim_success: bool | None) -> str:
    """The simulator's own verdict on an episode, in words."""
    if sim_success is None:
        return "not judged"
    return "success" if sim_success else "failure"


def phase_order(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The phases of ``rows`` in execution order (see the module docstring)."""
    order: list[str] = []
    for row in rows:
        seen = list(row.get("phase_times") or {})
        last = row.get("last_phase")
        if last and last not in seen:
            seen.append(last)
        before: str | None = None
        for phase in seen:
            if phase not in order:
                order.insert(0 if before is None else order.index(before) + 1, phase)
            before = phase
    return order


def _trace(row: Mapping[str, Any], out_dir: Path | None) -> tuple[str | None, str]:
    recorded = row.get("trace")
    if not recorded:
        return None, "not kept"
    path = Path(recorded)
    if not path.is_file():
        return None, "missing"
    if out_dir is None:
        return str(path), "kept"
    return Path(os.path.relpath(path.resolve(), out_dir.resolve())).as_posix(), "kept"


def episode_entry(row: Mapping[str, Any], *, out_dir: Path | None = None,
                  replay: str | None = None) -> dict[str, Any]:
    """The report's line for one episode (see the module docstring)."""
    trace, status = _trace(row, out_dir)
    return {
        "task": row["task"], "condition": row["condition"], "episode": row["episode"],
        "seed": row.get("seed"), "outcome": row["outcome"], "reason": row["reason"],
        "phase": row.get("last_phase"), "sim_success": row.get("sim_success"),
        "simulator": simulator_verdict(row.get("sim_success")),
        "sim_ended_by": row.get("sim_ended_by"),
        "false_success": bool(row.get("false_success")), "false_failure": false_failure(row),
        "unknown": bool(row.get("unknown")), "retries": row.get("retries"),
        "recoveries": row.get("recoveries"), "wall_s": row.get("wall_s"),
        "sim_time_s": row.get("sim_time_s"), "trace": trace, "trace_status": status,
        "recorded_trace": row.get("trace") if status == "missing" else None,
        "replay": replay, "error": row.get("error"),
    }
