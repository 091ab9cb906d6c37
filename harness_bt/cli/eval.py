"""``harness eval TASK [TASK...]`` and ``harness compare A B``: many episodes on worker
processes, Ray or a GenManip server's workers, recorded once each in ``OUT/results.sqlite``,
reported in ``OUT/report.json``, ``OUT/report.html`` and ``OUT/report.txt``
(:mod:`harness_bt.eval`). ``harness compare DIR_A DIR_B`` compares two evaluation folders
from their stores, running nothing (:mod:`harness_bt.eval.folders`).

Running the same command again runs only the episodes the store lacks, and says which it
reuses; a store of another evaluation is refused unless ``--reuse``
(:mod:`harness_bt.eval.reuse`). A progress bar (done, success so far, ETA) shows on a
terminal; the text report lists every episode; ``--json`` prints ``episodes``, ``summary``
and ``reuse`` (and, for compare, the comparison) on stdout. ``harness eval`` exits 0 once
every episode is recorded, whatever the success rate; ``harness compare`` exits 1 when B is
significantly worse than A (the gate a change to a task must pass), else 0.
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
from harness_bt.eval.folders import compare_folders, which_compare
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.eval.report import build_report, write_replays, write_report
from harness_bt.eval.reuse import Reuse
from harness_bt.eval.session import EvalConfig, EvalResult, run_evaluation
from harness_bt.eval.store import STORE_NAME
from harness_bt.eval.text import report_text

if TYPE_CHECKING:
    from harness_bt.eval.stats import Comparison, UnpairedComparison

__all__ = ["OptionalRayCommand", "compare", "eval_", "pair_rows"]

_REUSE_HELP = ("Evaluate into a results store that holds another evaluation's episodes "
               "(another task, task version, --set value or fault): they are kept, and left "
               "out of this report. Without it such a store is refused.")
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

    def plan(self, specs: list[EpisodeSpec], skipped: int, reuse: Reuse) -> None:
        server = any(s.sim_url for s in specs)
        total = None if server else len(specs) - skipped
        for line in reuse.lines():  # said before anything runs, on a terminal or not
            self.console.print(line, highlight=False, soft_wrap=True)
        self.task = self.progress.add_task("episodes", total=total, ok="-")

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
    reuse: bool = typer.Option(False, "--reuse", help=_REUSE_HELP),
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
                        episode_fn=episode_fn, reuse=reuse)
    result = _run(config, not as_json)
    replays = write_replays(result.rows, out) if trace else {}
    title = "evaluation: " + ", ".join(dict.fromkeys(s.task for s in result.specs))
    report = build_report(result.rows, title=title, replays=replays,
                          meta=_meta(config, result, began), out_dir=out,
                          sections=_reuse_section(result.reuse))
    paths = write_report(report, out)
    if as_json:
        sys.stdout.write(json.dumps({"episodes": report["episodes"],
                                     "summary": report["summary"],
                                     "faults": report["faults"],
                                     "store": str(out / STORE_NAME),
                                     "reuse": report.get("reuse")}) + "\n")
        return
    _print_report(report, paths, result.run)


def _reuse_section(reuse: Reuse | None) -> dict[str, Any]:
    return {} if reuse is None else {"reuse": reuse.to_dict()}


def _print_report(report: dict[str, Any], paths: tuple[Path, Path],
                  run: EvalRun | None = None) -> None:
    """The text report (every episode), what this run did, and where the files are."""
    sys.stdout.write(report_text(report))
    if run is not None:
        sys.stdout.write(f"ran {run.recorded} episode(s) now, {run.skipped} recorded before; "
                         f"{len(run.crashes)} worker crash(es), {run.reruns} rerun(s)\n")
    sys.stdout.write(f"report: {paths[1]} ({paths[0].name}, report.txt)\n")


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


def _no_run_options(given: dict[str, Any]) -> None:
    """Comparing two folders runs nothing: an option that configures episodes is refused."""
    named = [name for name, value in given.items() if value not in (None, [], False)]
    if named:
        raise DefinitionError(
            "INVALID_OPTION", f"{', '.join(named)} configure(s) episodes to run; comparing "
            "two evaluation folders runs none", where=" ".join(named),
            fix="drop them, or compare two task files to run episodes")


def _compare_folders(dirs: tuple[Path, Path], out: Path, alpha: float, task: str | None,
                     as_json: bool) -> bool:
    """Compare two evaluation folders and report into ``out``; True when B is worse."""
    if (out / STORE_NAME).exists():
        raise DefinitionError(
            "INVALID_OPTION", f"--out {out} holds a results store: its report would be "
            "replaced by the comparison's", where=str(out),
            fix="point --out at a folder of its own, e.g. --out out/compare-folders")
    began = time.time()
    result = compare_folders(*dirs, alpha=alpha, task=task)
    replays = {**write_replays(result.rows_a, out, subdir="replays/A"),
               **write_replays(result.rows_b, out, subdir="replays/B")}
    rows = result.rows_a + result.rows_b
    report = build_report(
        rows, title=f"comparison: {dirs[1]} (B) against {dirs[0]} (A)",
        comparisons=result.comparisons, replays=replays, out_dir=out,
        meta={"A": str(dirs[0]), "B": str(dirs[1]), "episodes": len(rows),
              "ran now": 0, "wall": f"{time.time() - began:.0f} s"},
        sections={"notes": result.notes})
    paths = write_report(report, out)
    _emit_comparison(report, result.comparisons, paths, as_json)
    return any(c.verdict.startswith("B worse") for c in result.comparisons)


def _emit_comparison(report: dict[str, Any],
                     comparisons: list[Comparison | UnpairedComparison],
                     paths: tuple[Path, Path], as_json: bool,
                     run: EvalRun | None = None) -> None:
    if not as_json:
        _print_report(report, paths, run)
        return
    first = comparisons[0].to_dict() if comparisons else {}
    keys = ("n", "n_a", "n_b", "a_success", "b_success", "b_only", "a_only", "p_value",
            "verdict", "difference", "difference_interval", "test")
    sys.stdout.write(json.dumps({
        **{k: first.get(k) for k in keys if k in first},
        "a": first.get("a"), "b": first.get("b"),
        "comparisons": report["comparisons"], "notes": report.get("notes", []),
        "reuse": report.get("reuse"), "summary": report["summary"],
        "episodes": report["episodes"]}) + "\n")


def compare(
    a: Path = typer.Argument(..., metavar="A", help="Version A (the baseline): a task file, "
                             "or a folder harness eval wrote."),
    b: Path = typer.Argument(..., metavar="B", help="Version B (the change): a task file, or "
                             "a folder."),
    episodes: int = typer.Option(None, "--episodes", help="Paired episodes (seeds; tasks "
                                 "only, default 20)."),
    seed: int = typer.Option(None, "--seed", help="The first seed (tasks only, default 0)."),
    scene: str = typer.Option(None, "--scene", help="The scene (default: the tasks' own)."),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
    inject: str = typer.Option(None, "--inject", help="Faults, the same for A and B."),
    workers: int = typer.Option(None, "--workers", help="Episodes at once (default 1)."),
    ray: str = typer.Option(None, "--ray", metavar="[ADDRESS]", help=_RAY_HELP),
    out: Path = typer.Option(Path("out/compare"), "--out", help="Results store and reports."),
    reuse: bool = typer.Option(False, "--reuse", help=_REUSE_HELP),
    task: str = typer.Option(None, "--task", help="Folders holding several tasks: compare "
                             "this one (its file name, as the report names it)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level."),
    trace: bool = typer.Option(True, "--trace/--no-trace", help="Keep each episode's trace."),
    num_steps: int = typer.Option(None, "--num-steps", help="Simulator steps per episode."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    episode_fn: str = typer.Option(DEFAULT_EPISODE_FN, "--episode-fn", hidden=True,
                                   help="module:function a worker runs per episode (tests)."),
) -> None:
    """Compare two versions of a task: two task files run on the same seeds and faults, or
    two evaluation folders read from their stores; exact McNemar test on seed pairs."""
    if not 0.0 < alpha < 1.0:
        raise DefinitionError("INVALID_OPTION", f"--alpha {alpha}: between 0 and 1",
                              fix="pass --alpha 0.05")
    if which_compare(a, b) == "folders":
        _no_run_options({"--episodes": episodes, "--seed": seed, "--scene": scene,
                         "--set": set_, "--inject": inject, "--workers": workers,
                         "--ray": ray, "--num-steps": num_steps, "--reuse": reuse})
        if _compare_folders((a, b), out, alpha, task, as_json):
            raise typer.Exit(1)
        return
    if task is not None:
        raise DefinitionError("INVALID_OPTION", "--task picks a task in evaluation folders; "
                              f"A and B are task files ({a}, {b})", fix="drop --task")
    config = EvalConfig(tasks=(a, b), out=out, episodes=20 if episodes is None else episodes,
                        seed=seed or 0, scene=scene, params=parse_set(set_),
                        faults=parse_inject(inject), workers=workers or 1, ray=ray,
                        sim_url=None, traces=trace, extra=_steps(num_steps),
                        episode_fn=episode_fn, reuse=reuse)
    if _compare_tasks(config, alpha, as_json):
        raise typer.Exit(1)


def _compare_tasks(config: EvalConfig, alpha: float, as_json: bool) -> bool:
    """Run both task versions on the same seeds and report; True when B is worse."""
    from harness_bt.eval.plan import task_digest
    from harness_bt.eval.stats import compare_paired

    began = time.time()
    task_a, task_b = config.tasks
    if task_a.resolve() == task_b.resolve():
        raise DefinitionError("INVALID_OPTION", f"A and B are the same file ({task_a})",
                              fix="compare two versions: harness compare OLD.yaml NEW.yaml")
    if task_a.is_file() and task_b.is_file() and task_digest(task_a) == task_digest(task_b):
        raise DefinitionError("INVALID_OPTION", f"{task_a} and {task_b} have the same content "
                              "(and the same included documents): nothing to compare",
                              fix="compare two different versions of the task")
    label_a, label_b = task_a.stem, task_b.stem
    if label_a == label_b:
        raise DefinitionError("INVALID_OPTION", f"A and B are both called {label_a!r}",
                              fix="rename one file: reports name tasks by file name")
    result = _run(config, not as_json)
    digest_a = next(s.digest for s in result.specs if s.task == label_a)
    rows_a = [r for r in result.rows if r["digest"] == digest_a]
    rows_b = [r for r in result.rows if r["digest"] != digest_a]
    comparisons: list[Comparison | UnpairedComparison] = [
        compare_paired(label_a, label_b, pairs, condition=cond, alpha=alpha)
        for cond, pairs in sorted(pair_rows(rows_a, rows_b).items())]
    replays = write_replays(result.rows, config.out) if config.traces else {}
    report = build_report(result.rows, title=f"comparison: {label_b} (B) against {label_a} (A)",
                          comparisons=comparisons, replays=replays,
                          meta=_meta(config, result, began), out_dir=config.out,
                          sections=_reuse_section(result.reuse))
    paths = write_report(report, config.out)
    _emit_comparison(report, comparisons, paths, as_json, result.run)
    return any(c.verdict.startswith("B worse") for c in comparisons)
