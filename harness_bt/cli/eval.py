"""``harness eval TASK [TASK...]`` and ``harness compare A B``: many episodes on worker
processes, Ray or a GenManip server's workers, recorded once each in ``OUT/results.sqlite``,
reported in ``OUT/report.json`` and ``OUT/report.html`` (:mod:`harness_bt.eval`).

Running the same command again runs only the episodes the store lacks. A progress bar (done,
success so far, ETA) shows on a terminal; ``--json`` prints ``episodes`` and ``summary`` (and,
for compare, ``comparison``) on stdout. ``harness eval`` exits 0 once every episode is
recorded, whatever the success rate; ``harness compare`` exits 1 when B is significantly worse
than A (the gate a change to a task must pass), else 0.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from typer.core import TyperCommand

from harness_bt.cli import plan
from harness_bt.cli.documents import SET_HELP, parse_set
from harness_bt.cli.run import parse_inject
from harness_bt.errors import DefinitionError
from harness_bt.eval.driver import EvalRun
from harness_bt.eval.episode import DEFAULT_EPISODE_FN
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.eval.report import build_report, episode_list, write_replays, write_report
from harness_bt.eval.session import EvalConfig, EvalResult, run_evaluation

if TYPE_CHECKING:
    from harness_bt.eval.stats import Comparison

__all__ = ["OptionalRayCommand", "compare", "eval_", "pair_rows"]

_RAY_HELP = ("Run episodes as Ray tasks: --ray alone starts a local Ray instance, --ray "
             "ADDRESS joins a cluster (e.g. auto, ray://head:10001). Needs "
             "pip install 'harness-bt\\[ray]'.")


class OptionalRayCommand(TyperCommand):
    """A command whose ``--ray`` takes an optional value, which typer cannot declare:
    ``--ray`` alone (last, or before another option or an existing file) means a local Ray
    instance and reads as ``--ray ""``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        out: list[str] = []
        for i, arg in enumerate(args):
            out.append(arg)
            if arg == "--ray":
                nxt = args[i + 1] if i + 1 < len(args) else None
                if nxt is None or nxt.startswith("-") or Path(nxt).is_file():
                    out.append("")
        return super().parse_args(ctx, out)


class _Bar:
    """The progress bar (stderr, a terminal only): episodes done, success so far, ETA."""

    def __init__(self, show: bool) -> None:
        self.console = Console(stderr=True)
        self.show = show and self.console.is_terminal
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("success {task.fields[ok]}"), TimeElapsedColumn(), TextColumn("ETA"),
            TimeRemainingColumn(), console=self.console, disable=not self.show)
        self.task: Any = None
        self.started = time.perf_counter()

    def plan(self, specs: list[EpisodeSpec], skipped: int) -> None:
        server = any(s.sim_url for s in specs)
        total = None if server else len(specs) - skipped
        self.task = self.progress.add_task("episodes", total=total, ok="-")
        if skipped and self.show:
            self.console.print(f"{skipped} of {len(specs)} episode(s) recorded already: "
                               "skipped")

    def __call__(self, row: dict[str, Any], run: EvalRun) -> None:
        ok = f"{run.succeeded}/{run.recorded} ({100 * run.succeeded / max(1, run.recorded):.0f} %)"
        self.progress.update(self.task, completed=run.recorded, ok=ok)


def _steps(num_steps: int | None) -> dict[str, Any]:
    return {"num_steps": num_steps} if num_steps is not None else {}


def _run(config: EvalConfig, show: bool) -> EvalResult:
    bar = _Bar(show)
    with bar.progress:
        return run_evaluation(config, on_record=bar, on_plan=bar.plan)


def _meta(config: EvalConfig, result: EvalResult, began: float) -> dict[str, Any]:
    where = (f"Ray {config.ray or '(local)'}" if config.ray is not None
             else f"GenManip server {config.sim_url}" if config.sim_url
             else "local processes")
    last = config.seed + config.episodes - 1
    return {"episodes": len(result.rows),
            "seeds": f"{config.seed}..{last}" if not config.sim_url else "the server's",
            "workers": f"{config.workers} ({where})",
            "ran now": result.run.recorded, "recorded before": result.run.skipped,
            "worker crashes": len(result.run.crashes), "wall": f"{time.time() - began:.0f} s"}


def eval_(
    tasks: list[Path] = typer.Argument(None, help="Task files (YAML or Python), one or more "
                                       "(or --instruction)."),
    episodes: int = typer.Option(10, "--episodes", help="Episodes per task (seeds SEED, "
                                 "SEED+1, ...)."),
    seed: int = typer.Option(0, "--seed", help="The first seed."),
    scene: str = typer.Option(None, "--scene", help="The scene (default: each task's own)."),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
    inject: str = typer.Option(None, "--inject", help="Faults of the built-in simulator, "
                               "e.g. slip=0.3,nudge=0.3,occlude=0.2."),
    workers: int = typer.Option(1, "--workers", help="Episodes at once (local processes, Ray "
                                "tasks, or a server's worker ids)."),
    ray: str = typer.Option(None, "--ray", metavar="[ADDRESS]", help=_RAY_HELP),
    sim: str = typer.Option(None, "--sim", help="A GenManip server: run its episodes on "
                            "worker ids 0..WORKERS-1 (harness sim serve --workers K)."),
    out: Path = typer.Option(Path("out/eval"), "--out", help="Results store and reports."),
    trace: bool = typer.Option(True, "--trace/--no-trace", help="Keep each episode's trace "
                               "(failed episodes get a replay page)."),
    num_steps: int = typer.Option(None, "--num-steps", help="Simulator steps per episode "
                                  "(default: the scene's)."),
    as_json: bool = typer.Option(False, "--json", help="Print episodes and summary as JSON."),
    episode_fn: str = typer.Option(DEFAULT_EPISODE_FN, "--episode-fn", hidden=True,
                                   help="module:function a worker runs per episode (tests)."),
    instruction: str = typer.Option(None, "--instruction", help=plan.INSTRUCTION_HELP),
    planner: str = typer.Option("meaning", "--planner", help=plan.PLANNER_HELP),
    planner_url: str = typer.Option(None, "--planner-url", help=plan.URL_HELP),
    planner_model: str = typer.Option(None, "--planner-model", help=plan.MODEL_HELP),
    planner_timeout: float = typer.Option(30.0, "--planner-timeout", help=plan.TIMEOUT_HELP),
    library: Path = typer.Option(plan.DEFAULT_LIBRARY, "--library", help=plan.LIBRARY_HELP),
) -> None:
    """Evaluate task files (or the task an --instruction asks for) over many episodes, in
    parallel, resumably; report with intervals."""
    from harness_bt.eval.stats import summarize

    began = time.time()
    if plan.chosen(tasks[0] if tasks else None, instruction):
        decision = plan.choose(plan.PlanArgs(instruction, planner, planner_url, planner_model,
                                             planner_timeout, library=library,
                                             given=parse_set(set_)))
        assert decision.plan is not None
        Console(stderr=True).print(plan.decision_text(decision, 0), highlight=False,
                                   soft_wrap=True)
        tasks, set_ = [Path(decision.plan.file)], plan.set_items(decision.plan, set_)
    config = EvalConfig(tasks=tuple(tasks), out=out, episodes=episodes, seed=seed, scene=scene,
                        params=parse_set(set_), faults=parse_inject(inject), workers=workers,
                        ray=ray, sim_url=sim, traces=trace, extra=_steps(num_steps),
                        episode_fn=episode_fn)
    result = _run(config, not as_json)
    replays = write_replays(result.rows, out) if trace else {}
    title = "evaluation: " + ", ".join(dict.fromkeys(s.task for s in result.specs))
    report = build_report(result.rows, title=title, replays=replays,
                          meta=_meta(config, result, began))
    paths = write_report(report, out)
    if as_json:
        sys.stdout.write(json.dumps({"episodes": episode_list(result.rows),
                                     "summary": summarize(result.rows),
                                     "faults": report["faults"],
                                     "store": str(out / "results.sqlite")}) + "\n")
        return
    _print_summary(report, result.run, paths)


def _print_summary(report: dict[str, Any], run: EvalRun, paths: tuple[Path, Path]) -> None:
    from rich.table import Table

    console = Console() if Console().is_terminal else Console(width=140)
    table = Table(title=report["title"], title_justify="left")
    for col in ("task", "condition", "n", "success (Wilson 95 %)", "simulator", "false",
                "unknown", "crashed"):
        table.add_column(col, justify="right" if col in ("n", "false", "unknown", "crashed")
                         else "left")
    for s in report["summary"]:
        lo_hi = s["success_interval"]
        rate = "-" if s["success_rate"] is None else \
            f"{100 * s['success_rate']:.0f} % [{100 * lo_hi[0]:.0f}, {100 * lo_hi[1]:.0f}]"
        sim = "-" if s["sim_success_rate"] is None else f"{100 * s['sim_success_rate']:.0f} %"
        table.add_row(s["task"], s["condition"], str(s["n"]), rate, sim,
                      str(s["false_success_count"]), str(s["unknown_count"]),
                      str(s["worker_crashed_count"]))
    console.print(table)
    for f in report.get("faults", ()):
        if f["kinds"] or f["asked"]:
            console.print(f"faults: {f['line']}", highlight=False, soft_wrap=True)
    console.print(f"ran {run.recorded} episode(s) now, {run.skipped} recorded before; "
                  f"{len(run.crashes)} worker crash(es), {run.reruns} rerun(s); "
                  f"report: {paths[1]} ({paths[0].name})", highlight=False)


def pair_rows(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]
              ) -> dict[str, list[tuple[bool, bool]]]:
    """Per condition, (A succeeded, B succeeded) for every episode id both have a row for."""
    by_b = {(r["condition"], r["episode"]): r for r in rows_b}
    out: dict[str, list[tuple[bool, bool]]] = {}
    for r in rows_a:
        other = by_b.get((r["condition"], r["episode"]))
        if other is not None:
            out.setdefault(r["condition"], []).append(
                (r["outcome"] == "succeeded", other["outcome"] == "succeeded"))
    return out


def compare(
    task_a: Path = typer.Argument(..., help="Version A of the task (the baseline)."),
    task_b: Path = typer.Argument(..., help="Version B (the change)."),
    episodes: int = typer.Option(20, "--episodes", help="Paired episodes (seeds)."),
    seed: int = typer.Option(0, "--seed", help="The first seed."),
    scene: str = typer.Option(None, "--scene", help="The scene (default: the tasks' own)."),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
    inject: str = typer.Option(None, "--inject", help="Faults, the same for A and B."),
    workers: int = typer.Option(1, "--workers", help="Episodes at once."),
    ray: str = typer.Option(None, "--ray", metavar="[ADDRESS]", help=_RAY_HELP),
    out: Path = typer.Option(Path("out/compare"), "--out", help="Results store and reports."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level."),
    trace: bool = typer.Option(True, "--trace/--no-trace", help="Keep each episode's trace."),
    num_steps: int = typer.Option(None, "--num-steps", help="Simulator steps per episode."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    episode_fn: str = typer.Option(DEFAULT_EPISODE_FN, "--episode-fn", hidden=True,
                                   help="module:function a worker runs per episode (tests)."),
) -> None:
    """Run two versions of a task on the same seeds and faults; exact McNemar test."""
    from harness_bt.eval.stats import compare_paired, summarize

    began = time.time()
    if task_a.resolve() == task_b.resolve():
        raise DefinitionError("INVALID_OPTION", f"A and B are the same file ({task_a})",
                              fix="compare two versions: harness compare OLD.yaml NEW.yaml")
    from harness_bt.eval.plan import task_digest

    if task_a.is_file() and task_b.is_file() and task_digest(task_a) == task_digest(task_b):
        raise DefinitionError("INVALID_OPTION", f"{task_a} and {task_b} have the same content "
                              "(and the same included documents): nothing to compare",
                              fix="compare two different versions of the task")
    if not 0.0 < alpha < 1.0:
        raise DefinitionError("INVALID_OPTION", f"--alpha {alpha}: between 0 and 1",
                              fix="pass --alpha 0.05")
    config = EvalConfig(tasks=(task_a, task_b), out=out, episodes=episodes, seed=seed,
                        scene=scene, params=parse_set(set_), faults=parse_inject(inject),
                        workers=workers, ray=ray, sim_url=None, traces=trace,
                        extra=_steps(num_steps), episode_fn=episode_fn)
    result = _run(config, not as_json)
    label_a, label_b = task_a.stem, task_b.stem
    digest_a = next(s.digest for s in result.specs if s.task == label_a)
    if label_a == label_b:
        raise DefinitionError("INVALID_OPTION", f"A and B are both called {label_a!r}",
                              fix="rename one file: reports name tasks by file name")
    rows_a = [r for r in result.rows if r["digest"] == digest_a]
    rows_b = [r for r in result.rows if r["digest"] != digest_a]
    comparisons: list[Comparison] = [
        compare_paired(label_a, label_b, pairs, condition=cond, alpha=alpha)
        for cond, pairs in sorted(pair_rows(rows_a, rows_b).items())]
    replays = write_replays(result.rows, out) if trace else {}
    report = build_report(result.rows, title=f"comparison: {label_b} (B) against {label_a} (A)",
                          comparisons=comparisons, replays=replays,
                          meta=_meta(config, result, began))
    paths = write_report(report, out)
    worse = any(c.verdict.startswith("B worse") for c in comparisons)
    if as_json:
        first = comparisons[0].to_dict() if comparisons else {}
        sys.stdout.write(json.dumps({**{k: first.get(k) for k in (
            "n", "a_success", "b_success", "b_only", "a_only", "p_value", "verdict",
            "difference", "difference_interval")},
            "a": label_a, "b": label_b, "summary": summarize(result.rows),
            "episodes": episode_list(result.rows)}) + "\n")
    else:
        console = Console() if Console().is_terminal else Console(width=140)
        for c in comparisons:
            lo, hi = c.difference_interval
            console.print(
                f"{c.n} paired episodes ({c.condition}): A {label_a} {c.a_success}/{c.n}, "
                f"B {label_b} {c.b_success}/{c.n}; B only {c.b_only}, A only {c.a_only}; "
                f"exact McNemar p = {c.p_value:.3g}; difference B - A "
                f"{100 * c.difference:+.1f} pts (95 % CI {100 * lo:+.1f} to {100 * hi:+.1f})",
                highlight=False)
            console.print(f"verdict: [bold]{c.verdict}[/]", highlight=False)
        console.print(f"report: {paths[1]}", highlight=False)
    if worse:
        raise typer.Exit(1)
