"""``harness run --instruction TEXT`` and ``harness eval --instruction TEXT``: a planner
(:mod:`harness_bt.planner`) chooses a task of the library and its parameters, ``--set`` still
overrides them, and the summary says what was chosen. A run is planned again after an abort
(``--replans``, :func:`harness_bt.planner.engage.engage`); every planner call is traced."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from harness_bt.authoring.placeholders import render
from harness_bt.errors import DefinitionError
from harness_bt.planner.candidates import DEFAULT_LIBRARY, library_candidates
from harness_bt.planner.engage import (
    Engagement,
    PlannerWatch,
    append_decisions,
    engage,
)
from harness_bt.planner.model import Decision, Plan, PlanRequest
from harness_bt.planner.registry import API_KEY_ENV, URL_ENV, PlannerOptions, open_planner
from harness_bt.run.episodes import RunReport

__all__ = ["DEFAULT_LIBRARY", "PlanArgs", "choose", "chosen", "decision_text", "planned_run"]

INSTRUCTION_HELP = ("What to do, in words (instead of a TASK file): a planner chooses a task "
                    "of the library (--library) and its parameters (docs/planning.md).")
PLANNER_HELP = ("The planner (harness_bt.planners): meaning (the instruction parsed into an "
                "action and object roles, bound to every task and scene; no model), templates "
                "(the tasks' own phrasings, no model) or openai (an OpenAI-compatible "
                "chat-completions endpoint).")
URL_HELP = (f"The model planner's endpoint, e.g. http://127.0.0.1:8000/v1 (default: "
            f"${URL_ENV}; the key comes from ${API_KEY_ENV} if set).")
MODEL_HELP = "The model the endpoint serves (--planner openai)."
TIMEOUT_HELP = "Seconds one planner call may take."
REPLANS_HELP = ("Times the planner is consulted again after the chosen task aborted with "
                "its budget or recoveries spent (0: never).")
LIBRARY_HELP = "The task library the planner chooses from (a directory of task files)."


def chosen(task_file: Path | None, instruction: str | None) -> bool:
    """Whether the task is chosen by a planner (an --instruction, no TASK); a clear error
    when both or neither are given."""
    if task_file is not None and instruction is not None:
        raise DefinitionError("INVALID_OPTION", f"both a TASK ({task_file}) and --instruction "
                              f"{instruction!r} say what to run",
                              fix="give a task file, or --instruction TEXT, not both")
    if task_file is None and instruction is None:
        raise DefinitionError("INVALID_OPTION", "nothing to run: no TASK and no --instruction",
                              fix="give a task file (harness run trees/pick.yaml) or say what "
                                  "to do (harness run --instruction 'pick up the red cube')")
    if instruction is not None and not instruction.strip():
        raise DefinitionError("INVALID_OPTION", "--instruction is empty",
                              fix="say what to do, e.g. --instruction 'pick up the red cube'")
    return instruction is not None


@dataclass(frozen=True)
class PlanArgs:
    """The planner's options of a command line, and the run options planning changes."""

    instruction: str
    planner: str = "meaning"
    url: str | None = None
    model: str | None = None
    timeout_s: float = 30.0
    replans: int = 1
    library: Path = DEFAULT_LIBRARY
    given: dict[str, str] | None = None
    seed: int = 0
    episodes: int = 1
    trace: Path | None = None
    as_json: bool = False
    journal: Path | None = None

    def request(self) -> PlanRequest:
        return PlanRequest(self.instruction, library_candidates(self.library),
                           given=dict(self.given or {}))

    def options(self) -> PlannerOptions:
        return PlannerOptions.from_env(url=self.url, model=self.model,
                                       timeout_s=self.timeout_s)


def decision_text(decision: Decision, call: int) -> str:
    """One line: what the planner chose (or why it did not)."""
    head = f"planner {decision.planner}" + (f" (again, call {call + 1})" if call else "")
    if decision.plan is not None:
        plan = decision.plan
        return (f"{head} chose {plan.describe()} from {plan.file}"
                + (f" (template {plan.template!r})" if plan.template else ""))
    assert decision.refusal is not None
    return f"{head} refused ({decision.refusal.code.value}): " + \
        "; ".join(decision.refusal.reasons)


def choose(args: PlanArgs) -> Decision:
    """One planner call (``harness eval --instruction``); a refusal raises its error."""
    planner = open_planner(args.planner, args.options())
    try:
        decision = planner.plan(args.request())
    finally:
        planner.close()
    if decision.plan is None:
        assert decision.refusal is not None
        raise decision.refusal.error(args.instruction, decision.planner)
    return decision


def set_items(plan: Plan, given: Sequence[str] | None) -> list[str]:
    """``--set`` items of a plan's parameters, those given on the command line winning."""
    names = {item.partition("=")[0].strip() for item in given or ()}
    return [f"{k}={render(v)}" for k, v in plan.params.items() if k not in names] + \
        list(given or ())


def _trace_of(trace: Path | None, index: int) -> Path | None:
    """Run 0 writes ``--trace``; run k after a re-plan ``NAME.replanK.jsonl``."""
    if trace is None or index == 0:
        return trace
    return trace.with_name(f"{trace.stem}.replan{index}{trace.suffix or '.jsonl'}")


RunOne = Callable[..., None]


def planned_run(args: PlanArgs, one: RunOne,
                render_summary: Callable[[RunReport, Console], None]) -> None:
    """Plan, run (``one``: a task file and its params -> the run, reported to ``finish``;
    each run's summary printed by ``render_summary``), re-plan after an abort; print what
    was chosen and exit like ``harness run``."""
    if args.journal is not None:
        raise DefinitionError("INVALID_OPTION", "--journal with --instruction: a journaled "
                              "run is one task file, resumed as such",
                              fix="plan first (harness run --instruction ... --replans 0), "
                                  "then run the chosen file with --journal")
    request = args.request()
    planner = open_planner(args.planner, args.options())
    console = Console(stderr=args.as_json, width=None if Console().is_terminal else 140)

    def run_plan(plan: Plan, index: int, calls: Sequence[tuple[int, Decision]]) -> Any:
        for call, decision in calls:
            console.print(decision_text(decision, call), highlight=False, soft_wrap=True)
        got: list[Any] = []

        def finish(report: Any, live: Any) -> None:
            got.append(report)
            if not args.as_json:
                render_summary(report, console)

        params = {**{k: v for k, v in plan.params.items()}, **(args.given or {})}
        one(Path(plan.file), params, trace=_trace_of(args.trace, index),
            seed=args.seed + index * args.episodes, finish=finish,
            wrap=lambda inner: PlannerWatch(inner, calls, args.instruction))
        return got[0]

    def on_refusal(calls: Sequence[tuple[int, Decision]], done: Engagement) -> None:
        paths = [e.trace_path for e in done.runs[-1][1].episodes if e.trace_path] \
            if done.runs else [args.trace] if args.trace is not None else []
        for path in paths:
            append_decisions(path, calls, args.instruction)

    try:
        done = engage(planner, request, run_plan, replans=args.replans, on_refusal=on_refusal)
    finally:
        planner.close()
    _finish(args, done, console)


def _finish(args: PlanArgs, done: Engagement, console: Console) -> None:
    if done.refusal is not None:
        error = done.refusal.error(args.instruction, done.decisions[-1].planner)
        if not done.runs:
            raise error
        console.print(f"[yellow]re-planning:[/] {error.message}", highlight=False,
                      soft_wrap=True)
    reports = [report for _, report in done.runs]
    last = reports[-1]
    planning = {"instruction": args.instruction,
                "calls": [{"call": i, **d.to_dict()} for i, d in enumerate(done.decisions)],
                "runs": [{"plan": p.to_dict(), "outcome": [e.reason for e in r.episodes]}
                         for p, r in done.runs]}
    if args.as_json:
        sys.stdout.write(json.dumps({**last.to_dict(), "planning": planning},
                                    default=str) + "\n")
        sys.stdout.flush()
    else:
        tries = "; ".join(f"{p.describe()}: {', '.join(e.reason for e in r.episodes)}"
                          for p, r in done.runs)
        console.print(f"instruction {args.instruction!r}: {len(done.runs)} run(s) ({tries}), "
                      f"{done.replans} re-plan(s)", highlight=False, soft_wrap=True)
    if any(r.false_success_count for r in reports):
        raise typer.Exit(2)
    if not last.episodes or any(not e.succeeded for e in last.episodes):
        raise typer.Exit(1)
