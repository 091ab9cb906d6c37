"""``harness viz`` and ``harness replay``."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from harness_bt.errors import DefinitionError

__all__ = ["replay", "viz"]


def viz(
    file: Path = typer.Argument(..., help="A task file (YAML), or a run's trace (.jsonl) to "
                                "draw from its own structure."),
    output: Path = typer.Option(..., "-o", "--output",
                                help="Where to write: .svg, .png, .dot or .mmd (Mermaid)."),
    trace: Path = typer.Option(None, "--trace", help="Colour the graph by this run (JSONL)."),
    at: int = typer.Option(None, "--at", help="The state after this event seq (default: the "
                           "end of the run)."),
    skills: str = typer.Option(None, "--skills", help="Skill registry to load the task "
                               "with, as module:attribute (default: the installed skills)."),
    set_: list[str] = typer.Option(None, "--set", help="A task parameter's value, "
                                   "NAME=VALUE, repeatable."),
    unfold: bool = typer.Option(False, "--unfold", help="Draw every node of the idioms "
                                "(recover, act_and_evaluate) instead of one node each."),
) -> None:
    """Draw the execution graph (statechart and trees), coloured by a run with --trace."""
    from harness_bt.cli.documents import parse_set, resolve_skills
    from harness_bt.viz.render import FORMATS, render, write

    fmt = output.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise DefinitionError("INVALID_OPTION", f"-o {output}: the suffix must be one of "
                              f"{', '.join('.' + f for f in FORMATS)}",
                              fix="name the output out.svg, out.png, out.dot or out.mmd")
    if file.suffix == ".jsonl":
        data = render(trace=trace or file, at=at, fmt=fmt, fold=not unfold)
    else:
        from harness_bt.authoring.loader import load_task

        task = load_task(file, skills=resolve_skills(skills), params=parse_set(set_))
        data = render(task, trace=trace, at=at, fmt=fmt, fold=not unfold)
    typer.echo(f"wrote {write(output, data)}")


def replay(
    trace: Path = typer.Argument(..., help="A run's trace (JSONL)."),
    at: int = typer.Option(None, "--at", help="Print the state after this event seq and exit."),
    all_frames: bool = typer.Option(False, "--frames", help="Print every frame (one per "
                                    "tick) and exit."),
    html: Path = typer.Option(None, "--html", help="Write a self-contained page that steps "
                              "through the run in a browser."),
    width: int = typer.Option(110, "--width", help="Text width for --at / --frames."),
    serve: int = typer.Option(None, "--serve", help="Serve the page over HTTP on this port "
                              "(0: any free one) until interrupted.", min=0, max=65535),
    host: str = typer.Option("127.0.0.1", "--host", help="The address --serve listens on."),
    unfold: bool = typer.Option(False, "--unfold", help="Draw every node of the idioms "
                                "(recover, act_and_evaluate) instead of one node each."),
) -> None:
    """Step through a run in the terminal (arrow keys), or print --at / --frames, or write
    --html, or --serve the page."""
    from harness_bt.trace import TraceReader
    from harness_bt.viz.frames import frame_at, frames
    from harness_bt.viz.replay import Replay, frame_text

    if not trace.is_file():
        raise DefinitionError("TRACE_NOT_FOUND", f"no trace at {trace}",
                              fix="write one with `harness example --trace run.jsonl` or a "
                                  "TaskRunner's trace=")
    if serve is not None:
        from harness_bt.viz.serve import ReplayServer

        server = ReplayServer(trace, host=host, port=serve, fold=not unfold)
        if server.store.problem:
            Console(stderr=True).print(f"[yellow]warning:[/] {server.store.problem}: the "
                                       "page shows no camera frames", highlight=False)
        typer.echo(f"serving the replay of {trace} at {server.url} (Ctrl-C stops)")
        server.serve()
        return
    reader = TraceReader.open(trace)
    if html is not None:
        from harness_bt.recording import FrameStore
        from harness_bt.viz.html import replay_html
        from harness_bt.viz.render import write

        store = FrameStore.beside(trace, reader.events)
        if store.problem:
            Console(stderr=True).print(f"[yellow]warning:[/] {store.problem}: the page shows "
                                       "no camera frames", highlight=False)
        page = replay_html(reader, fold=not unfold, frames_file=store.path)
        typer.echo(f"wrote {write(html, page)}")
        return
    if at is not None:
        typer.echo(frame_text(reader.structure, frame_at(reader, at), width=width), nl=False)
        return
    steps = frames(reader)
    if all_frames:
        for i, frame in enumerate(steps):
            typer.echo(frame_text(reader.structure, frame, width=width, index=i,
                                  total=len(steps)))
        return
    if not sys.stdin.isatty():
        raise DefinitionError("NOT_A_TERMINAL", "stepping needs a terminal (stdin is not one)",
                              fix="use --at SEQ or --frames, or --html out.html")
    Replay(reader.structure, steps, console=Console()).run()
