"""``harness run TASK_FILE``: run a task against a simulator and report, per episode and
overall, the task's own verdict beside the simulator's metric; ``harness resume FILE``.

With no option it starts the built-in simulator in-process and runs one episode; ``--sim URL``
drives any GenManip server instead; ``--runtime URL`` ticks the task on wall-clock time
against a ZeroMQ runtime server (``harness runtime serve``), and ``--journal FILE`` then makes
the run resumable with ``harness resume FILE`` after the harness died
(:mod:`harness_bt.run.resume`). A live view (active phase, running nodes, commands, budgets) shows
on a terminal, unless ``--json`` asks for the machine-readable summary on stdout. Exit status:
0 when every episode succeeded by the task's own evaluation, 1 when some did not, 2 when any
success was false (the simulator's metric says failed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from harness_bt.authoring import load_task
from harness_bt.authoring.scenes import with_scene
from harness_bt.cli import plan
from harness_bt.cli.console import (
    CONSOLE_EXIT_HELP,
    CONSOLE_HELP,
    CONSOLE_PAUSED_HELP,
    live_console,
    stay_up,
)
from harness_bt.cli.documents import SET_HELP, parse_set
from harness_bt.cli.foxglove import FOXGLOVE_HELP, FOXGLOVE_WAIT_HELP, live_foxglove
from harness_bt.cli.summary import render_summary, why_text
from harness_bt.errors import DefinitionError
from harness_bt.ledger import CommandState
from harness_bt.run.checkpoint import NO_MEMORY
from harness_bt.run.episodes import RunReport, RunWatch, run_episodes
from harness_bt.run.loop import RunPhase
from harness_bt.run.resume import DurableRun, open_durable, start_durable
from harness_bt.run.run_record import RunRecord
from harness_bt.run.runner import TaskRunner
from harness_bt.runtime.episodes import EpisodeRuntime, RunOptions, runtime_registry
from harness_bt.runtime.settings import RuntimeSettings
from harness_bt.task import Task

if TYPE_CHECKING:
    from harness_bt.console import Console as LiveConsole

__all__ = ["parse_inject", "render_summary", "resume", "run", "why_text"]


_OPEN = {CommandState.ACCEPTED, CommandState.RUNNING, CommandState.CANCELING,
         CommandState.EVALUATING, CommandState.RECONCILING, CommandState.UNKNOWN}


@contextlib.contextmanager
def _c_stdout_to_stderr(active: bool) -> Iterator[None]:
    """Send what native code writes to file descriptor 1 to stderr while active (PyBullet
    prints on connect), so stdout carries only the summary (or the JSON)."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def parse_inject(text: str | None) -> dict[str, float]:
    """``slip=0.3,nudge=0.3,occlude=0.2`` -> ``{"slip": 0.3, ...}``."""
    out: dict[str, float] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        try:
            rate = float(value)
        except ValueError:
            rate = float("nan")
        if not sep or not name.strip() or not 0.0 <= rate <= 1.0:
            raise DefinitionError("INVALID_INJECT", f"--inject item {part!r} is not NAME=RATE "
                                  "with a rate between 0 and 1",
                                  fix="write e.g. --inject slip=0.3,nudge=0.3,occlude=0.2")
        out[name.strip()] = rate
    return out


class _LiveView:
    """What the terminal shows while a run ticks (refreshed a few times per simulated second)."""

    def __init__(self, console: Console, episodes: int, every: int = 5) -> None:
        self.console = console
        self.episodes = episodes
        self.every = every
        self.live = Live(console=console, refresh_per_second=8, transient=True)

    def __enter__(self) -> _LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def __call__(self, runner: TaskRunner, index: int, runtime: EpisodeRuntime) -> None:
        if runner.ticks % self.every == 0 or runner.phase is RunPhase.FINISHED:
            self.live.update(self.render(runner, index))

    def render(self, runner: TaskRunner, index: int) -> Group:
        ctx = runner.context
        budget = ctx.budget
        left = budget.time_left(ctx.now)
        retries = "unlimited" if budget.max_retries is None else \
            f"{budget.retries_used}/{budget.max_retries}"
        head = Text.assemble(
            (f"{runner.task.name}", "bold"), f"  episode {index + 1}/{self.episodes}  ",
            f"t={ctx.now:6.2f} s  ", f"phase: {' > '.join(runner.configuration) or runner.phase}",
            f"  retries {retries}  time left "
            f"{'-' if left == float('inf') else f'{left:.1f} s'}")
        running = [path for pid, nodes in runner.status_map().items()
                   for path, status in nodes.items() if status == "RUNNING"]
        leaves = [p for p in running if not any(o.startswith(p + "/") for o in running)]
        nodes = Text("running: " + (", ".join(leaves) or "-"), style="cyan")
        table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
        for col in ("command", "skill", "state", "progress"):
            table.add_column(col)
        records = [runner.ledger.get(c) for c in ctx.command_phase if c in runner.ledger]
        for rec in records[-6:]:
            progress = rec.progress
            style = "green" if rec.state is CommandState.SUCCEEDED else \
                "yellow" if rec.state in _OPEN else "red"
            parts = rec.command_id.split("/")
            table.add_row(f"{parts[1]} {parts[-1]}" if len(parts) > 2 else rec.command_id,
                          rec.command.skill,
                          Text(rec.state.value, style=style),
                          "" if progress is None else f"{progress:.3f}")
        return Group(head, nodes, table)


def run(
    task_file: Path = typer.Argument(None, help="Task file: YAML (neutral form) or Python "
                                     "(or --instruction)."),
    sim: str = typer.Option(None, "--sim", help="A GenManip server URL (default: start the "
                            "built-in simulator in-process)."),
    episodes: int = typer.Option(1, "--episodes", min=1, help="Episodes to run."),
    seed: int = typer.Option(0, "--seed", help="Layout seed of the first episode."),
    inject: str = typer.Option(None, "--inject", help="Faults of the built-in simulator, e.g. "
                               "slip=0.3,nudge=0.3,occlude=0.2."),
    trace: Path = typer.Option(None, "--trace", help="JSONL trace (one file per episode when "
                               "there are several: NAME.epN.jsonl)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    graph: Path = typer.Option(None, "--graph", help="Draw the execution graph of the last "
                               "episode, coloured by how it ran (.svg, .png, .dot or .mmd)."),
    camera: list[str] = typer.Option(None, "--camera", help="Built-in simulator camera spec, "
                                     "repeatable (default: a front and a front-left camera at "
                                     "256x192, rendered in turn)."),
    bridge: str = typer.Option("inproc", "--bridge", help="Runtime (harness_bt.bridges)."),
    perception: str = typer.Option(None, "--perception", help="Perception "
                                   "(harness_bt.perception; default: the only one)."),
    num_steps: int = typer.Option(None, "--num-steps", help="Steps per episode (built-in "
                                  "simulator: default 600; a server: what it reports)."),
    runtime: str = typer.Option(None, "--runtime", help="A ZeroMQ runtime server, e.g. "
                                "tcp://127.0.0.1:5555 (harness runtime serve): wall-clock "
                                "time, one run against its scene."),
    runtime_telemetry: str = typer.Option(None, "--runtime-telemetry", help="Subscribe to "
                                          "the runtime's telemetry here instead of the PUB "
                                          "endpoint its HELLO announces (a relay or a fault "
                                          "proxy; needs --runtime)."),
    journal: Path = typer.Option(None, "--journal", help="Journal the run (ledger, chart, "
                                 "progress) in this SQLite file, so that harness resume FILE "
                                 "can finish it after a crash (needs --runtime)."),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
    scene: str = typer.Option(None, "--scene", help="The simulator scene to run (a scene's "
                              "name or a scene file's path; default: the task's scene:)."),
    record_frames: bool = typer.Option(False, "--record-frames", help="Record the camera "
                                       "frames the harness perceives (JPEG, 5 per second per "
                                       "camera) in NAME.frames.tar beside the --trace, for "
                                       "harness replay and harness export."),
    record_ros2: Path = typer.Option(None, "--record-ros2", help="With --runtime ros2://: "
                                     "record the robot's ROS 2 topics in a new rosbag2 bag "
                                     "(MCAP storage) at this directory (docs/ros2.md)."),
    console: str = typer.Option(None, "--console", help=CONSOLE_HELP),
    console_exit: bool = typer.Option(False, "--console-exit", help=CONSOLE_EXIT_HELP),
    console_paused: bool = typer.Option(False, "--console-paused", help=CONSOLE_PAUSED_HELP),
    foxglove: str = typer.Option(None, "--foxglove", help=FOXGLOVE_HELP),
    foxglove_wait: bool = typer.Option(False, "--foxglove-wait", help=FOXGLOVE_WAIT_HELP),
    instruction: str = typer.Option(None, "--instruction", help=plan.INSTRUCTION_HELP),
    planner: str = typer.Option("meaning", "--planner", help=plan.PLANNER_HELP),
    planner_url: str = typer.Option(None, "--planner-url", help=plan.URL_HELP),
    planner_model: str = typer.Option(None, "--planner-model", help=plan.MODEL_HELP),
    planner_timeout: float = typer.Option(30.0, "--planner-timeout", help=plan.TIMEOUT_HELP),
    replans: int = typer.Option(1, "--replans", min=0, help=plan.REPLANS_HELP),
    library: Path = typer.Option(plan.DEFAULT_LIBRARY, "--library", help=plan.LIBRARY_HELP),
) -> None:
    """Run a task file (or the task an --instruction asks for) against a simulator, episode
    by episode, and report honestly."""
    request = RunRequest(
        sim=sim, episodes=episodes, seed=seed, inject=inject, as_json=as_json, graph=graph,
        camera=tuple(camera) if camera else None, bridge=bridge, perception=perception,
        num_steps=num_steps, runtime=runtime, runtime_telemetry=runtime_telemetry,
        journal=journal, scene=scene, record_frames=record_frames, console=console,
        console_paused=console_paused, foxglove=foxglove, foxglove_wait=foxglove_wait,
        record_ros2=record_ros2)
    one = functools.partial(_run_file, request=request)
    if plan.chosen(task_file, instruction):
        plan.planned_run(plan.PlanArgs(instruction, planner, planner_url, planner_model,
                                       planner_timeout, replans, library, parse_set(set_),
                                       seed, episodes, trace, as_json, journal), one,
                         render_summary)
        return
    one(task_file, parse_set(set_), trace=trace,
        finish=lambda report, live: _report(report, as_json, live, console_exit))


@dataclasses.dataclass(frozen=True, slots=True)
class RunRequest:
    """What ``harness run`` was asked, built once from its options (the task file, its
    parameters, the trace and the planner's options aside): :func:`_run_file` reads it."""

    sim: str | None
    episodes: int
    seed: int
    inject: str | None
    as_json: bool
    graph: Path | None
    camera: tuple[str, ...] | None
    bridge: str
    perception: str | None
    num_steps: int | None
    runtime: str | None
    runtime_telemetry: str | None
    journal: Path | None
    scene: str | None
    record_frames: bool
    console: str | None
    console_paused: bool
    foxglove: str | None
    foxglove_wait: bool
    record_ros2: Path | None = None


def _run_file(task_file: Path, params: dict[str, Any], *, request: RunRequest,
              trace: Path | None, finish: Callable[[RunReport, LiveConsole | None], None],
              seed: int | None = None,
              wrap: Callable[[RunWatch | None], RunWatch] | None = None) -> None:
    """Run one task file (``harness run TASK``, or a planned run) as ``request`` says
    (``seed``: a planned run's own first seed); ``finish`` reports, inside the live console's
    lifetime; ``wrap`` wraps the run's watch (the planner's)."""
    r = request if seed is None else dataclasses.replace(request, seed=seed)
    sim, runtime, journal, bridge, as_json = r.sim, r.runtime, r.journal, r.bridge, r.as_json
    task = load_task(task_file, params=params, scene=r.scene)
    extra: dict[str, object] = {}
    if r.record_ros2 is not None:
        if not (runtime or "").startswith(("ros2://", "zenoh://")):
            raise DefinitionError("INVALID_OPTION", f"--record-ros2 {r.record_ros2}: only a "
                                  "run against a ROS 2 robot records its topics",
                                  fix="pass --runtime ros2://[DOMAIN] (or zenoh://) too, or drop "
                                      "--record-ros2")
        extra["record_ros2"] = str(r.record_ros2)
    if r.num_steps is not None:
        extra["num_steps"] = r.num_steps
    if r.runtime_telemetry is not None:
        if not runtime:
            raise DefinitionError("INVALID_OPTION", f"--runtime-telemetry "
                                  f"{r.runtime_telemetry}: only a runtime server publishes "
                                  "telemetry", fix="pass --runtime too, or drop "
                                                   "--runtime-telemetry")
        extra["telemetry"] = r.runtime_telemetry
    if runtime and sim:
        raise DefinitionError("INVALID_OPTION", "--runtime and --sim both name a runtime",
                              fix="pass one of them")
    if journal is not None and not runtime:
        raise DefinitionError(
            "JOURNAL_NEEDS_RUNTIME", f"--journal {journal}: only a run against a runtime "
            "server can be resumed (the in-process simulator dies with the harness)",
            fix="start one (harness runtime serve --backend sim --bind tcp://127.0.0.1:5555) "
                "and pass --runtime tcp://127.0.0.1:5555")
    if journal is not None:
        RunRecord.check_new(journal)  # before connecting: connecting takes a control epoch
    if runtime and bridge == "inproc":  # the URL's scheme names the bridge (tcp:// is zmq)
        scheme = runtime.partition("://")[0] if "://" in runtime else ""
        bridge = scheme if scheme in ("ros2", "zenoh") else "zmq"
    if r.record_frames and trace is None:
        raise DefinitionError("INVALID_OPTION", "--record-frames: the frames go beside the "
                              "trace, and there is none", fix="pass --trace run.jsonl too")
    options = with_scene(RunOptions(
        task=task.name, sim_url=sim, episodes=r.episodes, seed=r.seed,
        faults=parse_inject(r.inject), cameras=r.camera,
        runtime_settings=RuntimeSettings.from_mapping(extra), runtime_url=runtime,
        scene=r.scene or task.scene, params=dict(task.params), bridge=bridge,
        perception=r.perception, record_frames=5.0 if r.record_frames else None,
        trace=None if trace is None else str(trace)))
    if sim is None and not runtime and options.scene_document is not None:
        from harness_bt.authoring.objects import refuse_missing_objects

        refuse_missing_objects(task_file, options.scene_document, params=params,
                               scene_ref=r.scene)
    open_journal = None
    if journal is not None:
        def open_journal(_: EpisodeRuntime) -> DurableRun:
            return start_durable(journal, task_file=task_file, options=journaled)
        journaled = options
    graph = r.graph
    if graph is not None:
        from harness_bt.viz.render import FORMATS

        if graph.suffix.lstrip(".").lower() not in FORMATS:
            raise DefinitionError("INVALID_OPTION", f"--graph {graph}: the suffix must be one "
                                  f"of {', '.join('.' + f for f in FORMATS)}",
                                  fix="name it e.g. run.svg")
    temporary = graph is not None and trace is None  # a trace only for the drawing
    with contextlib.ExitStack() as stack:
        if temporary:
            import tempfile

            trace = Path(stack.enter_context(tempfile.TemporaryDirectory())) / f"{task.name}.jsonl"
        live = stack.enter_context(live_console(r.console, task, as_json=as_json,
                                                paused=r.console_paused))
        watch = stack.enter_context(live_foxglove(r.foxglove, live, as_json=as_json,
                                                  wait=r.foxglove_wait))
        if temporary:
            options = dataclasses.replace(options, trace=str(trace))
        report = _run(task, options, as_json, open_journal,
                      watch=watch if wrap is None else wrap(watch))
        if graph is not None and report.episodes and report.episodes[-1].trace_path:
            from harness_bt.viz.render import render, write

            fmt = graph.suffix.lstrip(".").lower()
            written = write(graph, render(trace=report.episodes[-1].trace_path, fmt=fmt))
            Console(stderr=True).print(f"execution graph: {written}")
        if temporary:  # deleted with its directory: the report does not point at it
            report = dataclasses.replace(report, episodes=tuple(
                dataclasses.replace(e, trace_path=None) for e in report.episodes))
        finish(report, live)


def _report(report: RunReport, as_json: bool, live: LiveConsole | None = None,
            console_exit: bool = True) -> None:
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
        sys.stdout.flush()
    else:
        render_summary(report, Console() if Console().is_terminal else Console(width=140))
    stay_up(live, console_exit)
    if report.false_success_count:
        raise typer.Exit(2)
    if not report.episodes or any(not e.succeeded for e in report.episodes):
        raise typer.Exit(1)


def resume(
    journal: Path = typer.Argument(..., help="The file a harness run --journal wrote."),
    runtime: str = typer.Option(None, "--runtime", help="The runtime's address, when it "
                                "moved (default: the one the run used)."),
    runtime_telemetry: str = typer.Option(None, "--runtime-telemetry", help="Subscribe to "
                                          "telemetry here instead of the PUB endpoint the "
                                          "runtime's HELLO announces."),
    trace: Path = typer.Option(None, "--trace", help="JSONL trace of the resumed part "
                               "(default: the run's trace name with .resumed)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    console: str = typer.Option(None, "--console", help=CONSOLE_HELP),
    console_exit: bool = typer.Option(False, "--console-exit", help=CONSOLE_EXIT_HELP),
    console_paused: bool = typer.Option(False, "--console-paused", help=CONSOLE_PAUSED_HELP),
    forget_world: bool = typer.Option(False, "--forget-world", help="Resume without the "
                                      "world memory of the checkpoint (objects, poses, "
                                      "versions, plans): everything is observed again."),
) -> None:
    """Finish a journaled run after the harness died; no completed command runs again.

    Rebuild its state and its world memory, take a new control epoch, reconcile every command
    left in flight with the runtime, and go on from the active phase."""
    durable = open_durable(journal, forget=forget_world)
    try:
        header = durable.header
        task = load_task(Path(header.task_file), params=header.params, scene=header.scene)
        min_epoch = max(durable.ledger.epoch, int(durable.record.progress().get("epoch", 0)))
        url = runtime or header.runtime_url
        extra: dict[str, object] = {"min_epoch": min_epoch}
        if runtime_telemetry is not None:
            extra["telemetry"] = runtime_telemetry
        if trace is None and header.trace:  # run.jsonl -> run.resumed.jsonl, .resumed2, ...
            old = Path(header.trace)
            n = 1
            while (trace := old.with_name(f"{old.stem}.resumed{n if n > 1 else ''}"
                                          f"{old.suffix or '.jsonl'}")).exists():
                n += 1
        options = with_scene(RunOptions(
            task=task.name, runtime_url=url,
            runtime_settings=RuntimeSettings.from_mapping(extra), scene=header.scene,
            params=dict(task.params), bridge=header.bridge, perception=header.perception,
            trace=None if trace is None else str(trace)))
        cp = durable.checkpoint
        if not as_json:
            Console(stderr=True).print(
                f"resuming run {header.run_id} of {task.name} from {journal}: "
                + (f"checkpoint {cp.seq} ({' > '.join(cp.configuration)}, "
                   f"{_remembered(cp.world)}), "
                   if cp is not None else "no checkpoint yet (from the start), ")
                + f"{len(durable.ledger.restarted)} command(s) left open, against {url}",
                highlight=False)
        if cp is not None and cp.world is None:  # said even with --json: stderr
            Console(stderr=True).print(f"warning: {NO_MEMORY}", highlight=False)
        with live_console(console, task, as_json=as_json, paused=console_paused) as live:
            report = _run(task, options, as_json, lambda _: durable, watch=live)
            durable.close()
            _report(report, as_json, live, console_exit)
    finally:
        durable.close()


def _remembered(world: Mapping[str, Any] | None) -> str:
    if world is None:
        return "no world memory"
    if world.get("forgotten"):
        return "world memory left out"
    return f"{len(world.get('objects') or ())} object(s) remembered"


def _run(task: Task, options: RunOptions, as_json: bool,
         open_journal: Callable[[EpisodeRuntime], DurableRun] | None = None, *,
         watch: RunWatch | None = None) -> RunReport:
    episodes = options.episodes
    seed = options.seed
    sim = options.sim_url
    console = Console()
    live = console.is_terminal and not as_json
    if not console.is_terminal:
        console = Console(width=140)  # a log or a pipe: do not wrap at 80 columns
    factory = runtime_registry(entry_points=True).get(options.bridge, where="--bridge")
    with _c_stdout_to_stderr(True):  # native libraries print to stdout on start; keep it clean
        runtime = factory(options)
    durable: DurableRun | None = None
    try:
        if open_journal is not None:
            durable = open_journal(runtime)
            durable.take_epoch(runtime)
        where = options.runtime_url or sim
        if live:
            with _LiveView(console, episodes) as view:
                report = run_episodes(task, options, on_tick=view, runtime=runtime,
                                      durable=durable, watch=watch)
        else:
            if not as_json:
                given = ", ".join(f"{k}={v}" for k, v in options.params.items())
                console.print(f"running {task.name}"
                              + (f" ({given})" if given else "")
                              + (f" in scene {options.scene}" if options.scene else "")
                              + f": {episodes} episode(s)"
                              + ("" if options.runtime_url else f" from seed {seed}")
                              + (f" against {where}" if where else " on the built-in simulator")
                              + (f", journal {durable.path}" if durable is not None else ""))
            with _c_stdout_to_stderr(True):
                report = run_episodes(task, options, runtime=runtime, durable=durable,
                                      watch=watch)
    finally:
        runtime.close()
        if durable is not None and open_journal is not None:
            durable.close()
    return report
