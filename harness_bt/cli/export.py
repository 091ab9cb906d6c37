"""``harness export TRACE -o run.mcap``: a run as MCAP, for Foxglove."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from harness_bt.errors import DefinitionError

__all__ = ["export"]


def export(
    trace: Path = typer.Argument(..., help="A run's trace (JSONL)."),
    output: Path = typer.Option(..., "-o", "--output", help="Where to write the .mcap file."),
    frames: Path = typer.Option(None, "--frames", help="The camera frames file (default: the "
                                "one the trace names, beside it)."),
) -> None:
    """Write a run as MCAP (camera images, transforms, logs, tree states) for Foxglove."""
    from harness_bt.export import export_mcap

    if not trace.is_file():
        raise DefinitionError("TRACE_NOT_FOUND", f"no trace at {trace}",
                              fix="write one with harness run TASK --trace run.jsonl")
    counts = export_mcap(trace, output, frames_file=frames)
    images = sum(n for topic, n in counts.items()
                 if topic.startswith("/camera/") and topic.count("/") == 2)
    if images == 0:
        Console(stderr=True).print("[yellow]note:[/] no camera frames in this export (record "
                                   "them with harness run --record-frames)", highlight=False)
    typer.echo(f"wrote {output}: " + ", ".join(f"{topic} {n}" for topic, n in
                                               sorted(counts.items())))
