"""What ``harness run`` prints at the end of a run: each episode that did not end ``done`` with
why (:func:`why_text`), the task's own success rate beside the simulator's metric, false
successes, retries, recoveries, simulated and wall time, decision latency, the injected faults
that fired (or that none did), the traces."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness_bt.run.episodes import RunReport, percentile

__all__ = ["fault_text", "render_summary", "why_text"]


def _fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f}%"


def render_summary(report: RunReport, console: Console) -> None:
    """Per-episode table and the overall figures."""
    table = Table(title=f"harness run {report.task}: {len(report.episodes)} episode(s)")
    for col in ("ep", "seed", "harness", "simulator", "retries", "recov.", "unknown",
                "cmds", "sim s", "wall s", "decision p50/p99 ms"):
        table.add_column(col, justify="right" if col not in ("harness", "simulator") else "left")
    for e in report.episodes:
        sim = "-" if e.sim_ended_by == "not_judged" else \
            f"? ({e.sim_ended_by})" if e.sim_success is None else \
            "[green]success[/]" if e.sim_success else "[red]failed[/]"
        harness = f"[green]{e.reason}[/]" if e.succeeded else f"[red]{e.reason}[/]"
        if e.false_success:
            harness += " [bold red]FALSE SUCCESS[/]"
        lat = [v * 1000 for v in e.decision_latency_s]
        table.add_row(str(e.index), str(e.seed), harness, sim, str(e.retries),
                      str(e.recoveries), f"{e.unknown_verdicts}/{e.unknown_commands}",
                      str(e.commands), f"{e.sim_time_s:.1f}", f"{e.wall_s:.1f}",
                      f"{_fmt(percentile(lat, 50))}/{_fmt(percentile(lat, 99))}")
    console.print(table)
    for e in report.episodes:  # why each episode that did not end done ended as it did
        if e.reason != "done":
            console.print(Text.assemble(f"episode {e.index} (seed {e.seed}): ",
                                        (e.reason, "red"), why_text(e.why)), soft_wrap=True)
    data = report.to_dict()
    rate = report.success_rate
    sim_rate = report.sim_success_rate
    lat = data["decision_latency_ms"]
    console.print(
        f"success (task's own evaluation): [bold]{_pct(rate)}"
        f"[/]   simulator's metric: [bold]{_pct(sim_rate)}"
        f"[/]   false successes: [bold]{report.false_success_count}[/]   unknown: "
        f"{report.unknown_count}", soft_wrap=True)
    console.print(
        f"retries {data['retries']}, recoveries {data['recoveries']}, unknown verdicts "
        f"{data['unknown_verdicts']}, commands {data['commands']}, simulated "
        f"{data['sim_time_s']:.1f} s in {data['wall_s']:.1f} s wall; decision latency "
        f"p50 {_fmt(lat['p50'], ' ms', 2)}, p99 {_fmt(lat['p99'], ' ms', 2)}", soft_wrap=True)
    if data["final_metric"]:
        console.print(f"simulator's final metric: {json.dumps(data['final_metric'])}",
                      soft_wrap=True, highlight=False)
    if report.final_metric_agrees is False:
        console.print("[yellow]note:[/] the simulator's final metric differs from the verdicts "
                      "read from how each episode ended (did the server run other episodes?)",
                      soft_wrap=True)
    _print_faults(report, data["faults"], console)
    traces = [e.trace_path for e in report.episodes if e.trace_path]
    if traces:
        console.print(f"trace: {', '.join(traces)}", soft_wrap=True, highlight=False)


def fault_text(fault: Mapping[str, Any]) -> str:
    """One fault of an episode: what, when, where it hit, and what the tree did after it."""
    where = (f" in {fault['phase']}" if fault.get("phase") else "") + \
        (f" at {fault['node']}" if fault.get("node") else "") + \
        (f" ({fault['skill']})" if fault.get("skill") else "")
    if fault.get("after_task"):
        then = "after the task ended"
    elif fault.get("response"):
        r = fault["response"]
        then = f"then a {r['kind']} at {r['node']}" + \
            (": recovered" if fault.get("recovered") else ": not recovered")
    else:
        then = "tolerated (no retry needed)" if fault.get("tolerated") else \
            "no retry or recovery followed"
    secs = f", {fault['sim_time_s']:.2f} s" if fault.get("sim_time_s") is not None else ""
    return f"{fault['kind']} at step {fault['timestep']}{secs}{where}; {then}"


def _print_faults(report: RunReport, counts: Mapping[str, Mapping[str, int]],
                  console: Console) -> None:
    for e in report.episodes:
        for fault in e.faults:
            console.print(f"episode {e.index} (seed {e.seed}): fault {fault_text(fault)}",
                          soft_wrap=True, highlight=False)
        if e.faults_note:
            console.print(f"episode {e.index} (seed {e.seed}): [yellow]{e.faults_note}[/]",
                          soft_wrap=True, highlight=False)
    if counts or report.options.faults:
        line = "; ".join(f"{k} {c['fired']} fired in {c['episodes']} episode(s), "
                         f"{c['recovered']} recovered, {c['tolerated']} tolerated"
                         for k, c in counts.items()) or "none fired"
        console.print(f"faults: {line}", soft_wrap=True, highlight=False)


_STOPPED = {"aborted_episode_ended": "the simulator ended the episode before the task ended",
            "aborted_budget_exhausted": "the task's budget ran out",
            "aborted_stalled": "every active phase is held: no transition can fire",
            "aborted_fenced": "a newer harness took over the runtime",
            "timeout": "the run's time limit", "max_ticks": "the run's tick limit"}


def why_text(why: Mapping[str, Any] | None) -> str:
    """One line of an episode's :func:`~harness_bt.run.why.why_not_done`: where it failed,
    the reason, and the evidence as JSON (a traceback is left to the trace)."""
    if not why:
        return ""
    by = why.get("by")
    if "stopped" in why and isinstance(by, Mapping) and by.get("source") == "console":
        asker = ", ".join(f"{k} {by[k]}" for k in ("client", "peer") if by.get(k))
        head = f"stopped from the console ({by.get('control') or 'stop'}" + (
            f" by {asker})" if asker else ")")
    elif "stopped" in why:
        head = _STOPPED.get(str(why["stopped"]), "stopped by the runner")
    else:
        head = " ".join(str(p) for p in (
            f"in phase {why['phase']}" if why.get("phase") else "",
            f"at {why['node']}" if why.get("node") else "",
            why.get("reason") or "",
            f"(command {why.get('command_reason')})" if why.get("command_reason") else "",
            f"after {why['cause']}" if why.get("cause") else "") if p)
    evidence = why.get("evidence")
    if isinstance(evidence, Mapping) and "traceback" in evidence:
        evidence = {k: v for k, v in evidence.items() if k != "traceback"}
    text = json.dumps(evidence, default=str, ensure_ascii=False) if evidence else ""
    return f": {head}" + (f": {text}" if text else "")
