"""The ``harness`` command. Subcommands from other packages come through the
``harness_bt.commands`` entry-point group (each entry point is a typer app or a function)."""

from __future__ import annotations

import gc
import sys
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from harness_bt._version import __version__
from harness_bt.cli.help import flags_take_no_value
from harness_bt.errors import DefinitionError, HarnessError
from harness_bt.plugins import Group, Origin, Registry

__all__ = ["app", "entry", "main"]

app = typer.Typer(
    name="harness",
    help="harness-bt: traceable robot tasks (statechart phases, behaviour trees, a command "
    "ledger, three-valued evaluation).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"harness-bt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """harness-bt command line."""


@app.command("demo")
def demo_ledger() -> None:
    """Walk a command through the ledger lifecycle and print the ledger."""
    from harness_bt.cli.demo import ledger_walkthrough

    raise typer.Exit(ledger_walkthrough())


@app.command("example")
def example(
    scenario: str = typer.Argument("clean", help="clean, slip, occlusion, no-stop, "
                                   "duplicates or budget"),
    trace: str = typer.Option(None, "--trace", help="Write the JSONL trace here."),
) -> None:
    """Run the fetch-the-cup example against the fake runtime and print what happened."""
    from rich.table import Table

    from harness_bt.testing.example import run_example

    runner = run_example(scenario, trace=trace)
    res = runner.result
    console = Console()
    console.print(f"[bold]{res.outcome}[/] ({res.reason}) in {res.ticks} ticks, "
                  f"{res.durations['total']:.2f} s simulated; phases: "
                  f"{' -> '.join(res.phases_visited)}")
    console.print(f"retries {res.retries}, recoveries {res.recoveries}, re-plans "
                  f"{res.replans}, unknown verdicts {res.unknown_verdicts}, "
                  f"left UNKNOWN: {', '.join(res.unknowns) or 'none'}")
    table = Table(title="commands")
    for col in ("command", "state", "reason"):
        table.add_column(col, overflow="fold")
    for cid, state in res.commands.items():
        table.add_row(cid, state, res.command_reasons[cid])
    console.print(table)
    if trace:
        console.print(f"trace: {trace} ({len(runner.trace.events)} events)")


from harness_bt.cli import discover as _discover  # noqa: E402
from harness_bt.cli import documents as _documents  # noqa: E402
from harness_bt.cli import eval as _eval  # noqa: E402
from harness_bt.cli import export as _export  # noqa: E402
from harness_bt.cli import init as _init  # noqa: E402
from harness_bt.cli import run as _run  # noqa: E402
from harness_bt.cli import viz as _viz  # noqa: E402

app.command("validate")(_documents.validate)
app.command("init")(_init.init)
app.command("schema")(_documents.schema)
app.command("import-xml")(_documents.import_xml)
app.command("export-xml")(_documents.export_xml)
app.command("viz")(_viz.viz)
app.command("replay")(_viz.replay)
app.command("export")(_export.export)
app.command("run")(_run.run)
app.command("resume")(_run.resume)
app.command("skills")(_discover.skills)
app.command("nodes")(_discover.nodes)
app.command("evaluators")(_discover.evaluators)
app.command("scenes")(_discover.scenes)
app.command("eval", cls=_eval.OptionalRayCommand)(_eval.eval_)
app.command("compare", cls=_eval.OptionalRayCommand)(_eval.compare)


_plugins_loaded = False


def _load_plugins() -> None:
    """Add the subcommands of the ``harness_bt.commands`` entry points (once per process). A
    plug-in that fails to load, or takes the name of a built-in command, is refused with a
    warning: it must not take the whole CLI down."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    commands: Registry[Any] = Registry("subcommand")
    for info in app.registered_commands:
        if info.name:
            commands.register(info.name, info, origin=Origin("built in (harness_bt.cli)"))

    def warn(error: DefinitionError) -> None:
        Console(stderr=True, soft_wrap=True).print(f"[yellow]warning:[/] {error}",
                                                   highlight=False)

    for name in commands.load(Group.COMMANDS, on_error=warn):
        target = commands.get(name)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name)(target)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; a :class:`HarnessError` prints as one clear line and exits 1."""
    _load_plugins()
    try:
        command = flags_take_no_value(typer.main.get_command(app))
        command(args=argv, prog_name="harness")
    except HarnessError as exc:  # one line per line of the message, wrapped by the terminal
        Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(str(exc))}",
                                                   highlight=False)
        return 1
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        return 130
    return 0


def entry() -> int:
    """The ``harness`` program (its console script, ``python -m harness_bt.cli``): :func:`main`,
    then an exit that does not walk the heap. At exit the interpreter collects every object
    start-up made (about half a second with the modules a run imports); none of them holds
    anything still to be written (files, journals and sockets are closed by the commands
    themselves, and atexit handlers still run), so they are frozen out of the collector's way
    first."""
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()
    return status
