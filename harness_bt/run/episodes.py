"""Running a task for several episodes against an episodic runtime: what ``harness run`` does.

:func:`run_episodes` opens a runtime (an entry point of ``harness_bt.bridges``), and for each
episode builds a fresh :class:`~harness_bt.run.runner.TaskRunner` (fresh ledger, world model and
perception) on the runtime's simulation clock, ticks it once per simulator step until the task
ends (or the simulator ends the episode first: outcome ``aborted_episode_ended``, stopped by
the runner on the runtime's ``episode_ended`` notice before any tree sees the commands that
the episode's end aborted), then lets
the runtime hold the robot until the simulator gives its own verdict. The report puts the
task's own evaluation beside the simulator's metric; a *false success* is an episode the
harness judged SUCCEEDED that the simulator judged failed.

Decision latency here is wall time: from the moment an observation is handed to the harness
(``poll`` returns) to the dispatch of a command the harness decided on in that tick
(perception, world update, tree tick, contract checks, ledger).
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness_bt.errors import DefinitionError
from harness_bt.evaluation import EvaluatorRegistry
from harness_bt.events import TraceKind
from harness_bt.ledger import Command
from harness_bt.plugins import Registry
from harness_bt.run.faults import fault_counts, fault_outcomes, faults_note, late_faults
from harness_bt.run.loop import StopRule, tick_until_finished
from harness_bt.run.loop import max_ticks as max_ticks_rule
from harness_bt.run.resume import DurableRun
from harness_bt.run.runner import TaskRunner
from harness_bt.run.settings import RunnerSettings, RunParts
from harness_bt.run.why import why_not_done
from harness_bt.runtime.bridge import Ack, PollResult, RuntimeBridge, RuntimeStatus
from harness_bt.runtime.episodes import (
    EpisodeRuntime,
    RunOptions,
    SkillListing,
    runtime_registry,
)
from harness_bt.skill import SkillRegistry
from harness_bt.task import Task
from harness_bt.trace import Trace
from harness_bt.world import Perception, perception_registry

__all__ = [
    "EpisodeReport",
    "RunReport",
    "RunWatch",
    "TickHook",
    "percentile",
    "run_episodes",
]

#: Called after every tick: (runner, episode index, runtime).
TickHook = Callable[[TaskRunner, int, EpisodeRuntime], None]


class RunWatch(Protocol):
    """Something that watches and steers each episode from the run's own thread (the live
    console, :mod:`harness_bt.console`): it sees what the perception sees, is given each
    runner before its first tick, and is called after every tick, where it may hold the run
    (paused) or stop it. It never blocks a stop: a stop it asks for goes through
    :meth:`TaskRunner.stop` like any other."""

    def perception(self, perceive: Perception) -> Perception: ...

    def attach(self, runner: TaskRunner, index: int) -> None: ...

    def ticked(self, runner: TaskRunner) -> None: ...


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100, nearest rank), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class EpisodeReport:
    """One episode: the task's own verdict beside the simulator's."""

    index: int
    seed: int
    outcome: str
    reason: str
    sim_success: bool | None
    sim_ended_by: str
    retries: int
    recoveries: int
    unknown_verdicts: int
    unknown_commands: int
    commands: int
    sim_steps: int
    sim_time_s: float
    wall_s: float
    decision_latency_s: tuple[float, ...]
    phases_visited: tuple[str, ...]
    trace_path: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    #: why it did not end ``done`` (:func:`~harness_bt.run.why.why_not_done`), else None
    why: Mapping[str, Any] | None = None
    #: the injected faults that fired (:func:`~harness_bt.run.faults.fault_outcomes`) and,
    #: for a run that asked for faults, which kinds did not fire
    faults: tuple[Mapping[str, Any], ...] = ()
    faults_note: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.outcome == "succeeded"

    @property
    def false_success(self) -> bool:
        return self.succeeded and self.sim_success is False

    @property
    def unknown(self) -> bool:
        return self.reason == "aborted_unknown" or self.unknown_commands > 0

    def to_dict(self) -> dict[str, Any]:
        lat = list(self.decision_latency_s)
        return {
            "index": self.index, "seed": self.seed, "outcome": self.outcome,
            "reason": self.reason, "succeeded": self.succeeded, "sim_success": self.sim_success,
            "sim_ended_by": self.sim_ended_by, "false_success": self.false_success,
            "unknown": self.unknown, "retries": self.retries, "recoveries": self.recoveries,
            "unknown_verdicts": self.unknown_verdicts,
            "unknown_commands": self.unknown_commands, "commands": self.commands,
            "sim_steps": self.sim_steps, "sim_time_s": round(self.sim_time_s, 3),
            "wall_s": round(self.wall_s, 3),
            "decision_latency_ms": {"p50": _ms(percentile(lat, 50)),
                                    "p99": _ms(percentile(lat, 99)), "n": len(lat)},
            "phases_visited": list(self.phases_visited), "trace": self.trace_path,
            "details": dict(self.details),
            "why": None if self.why is None else dict(self.why),
            "faults": [dict(f) for f in self.faults], "faults_note": self.faults_note,
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 3)


@dataclass(frozen=True)
class RunReport:
    """Every episode of a run, and the rates over them."""

    task: str
    episodes: tuple[EpisodeReport, ...]
    final_metric: Mapping[str, float] | None
    options: RunOptions

    def _rate(self, flags: list[bool]) -> float | None:
        return None if not flags else sum(flags) / len(flags)

    @property
    def success_rate(self) -> float | None:
        return self._rate([e.succeeded for e in self.episodes])

    @property
    def sim_success_rate(self) -> float | None:
        judged = [e.sim_success for e in self.episodes if e.sim_success is not None]
        return self._rate([bool(s) for s in judged])

    @property
    def false_success_count(self) -> int:
        return sum(e.false_success for e in self.episodes)

    @property
    def unknown_count(self) -> int:
        return sum(e.unknown for e in self.episodes)

    @property
    def final_metric_agrees(self) -> bool | None:
        """Whether the simulator's final metric for this task equals the mean of the
        per-episode verdicts read from how each episode ended (None: nothing to compare)."""
        if not self.final_metric or self.task not in self.final_metric or not self.episodes:
            return None
        verdicts = [e.sim_success for e in self.episodes]
        if any(v is None for v in verdicts):
            return None
        mean = sum(bool(v) for v in verdicts) / len(verdicts)
        return abs(mean - float(self.final_metric[self.task])) < 1e-9

    def decision_latency_s(self) -> list[float]:
        return [v for e in self.episodes for v in e.decision_latency_s]

    def to_dict(self) -> dict[str, Any]:
        lat = self.decision_latency_s()
        return {
            "task": self.task,
            "scene": self.options.scene,
            "params": dict(self.options.params),
            "episodes": [e.to_dict() for e in self.episodes],
            "success_rate": self.success_rate,
            "sim_success_rate": self.sim_success_rate,
            "false_success_count": self.false_success_count,
            "unknown_count": self.unknown_count,
            "sim_unjudged_count": sum(e.sim_success is None for e in self.episodes),
            "retries": sum(e.retries for e in self.episodes),
            "recoveries": sum(e.recoveries for e in self.episodes),
            "unknown_verdicts": sum(e.unknown_verdicts for e in self.episodes),
            "commands": sum(e.commands for e in self.episodes),
            "sim_time_s": round(sum(e.sim_time_s for e in self.episodes), 3),
            "wall_s": round(sum(e.wall_s for e in self.episodes), 3),
            "decision_latency_ms": {"p50": _ms(percentile(lat, 50)),
                                    "p99": _ms(percentile(lat, 99)), "n": len(lat)},
            "final_metric": None if self.final_metric is None else dict(self.final_metric),
            "final_metric_agrees": self.final_metric_agrees,
            "faults": fault_counts(e.faults for e in self.episodes),
            "options": {"task": self.options.task, "sim_url": self.options.sim_url,
                        "episodes": self.options.episodes, "seed": self.options.seed,
                        "faults": dict(self.options.faults),
                        "cameras": None if self.options.cameras is None
                        else list(self.options.cameras)},
        }


class _TimedBridge:
    """Passes every call through to the runtime and times observation -> dispatch (wall).
    Each measure goes into the report and, once a runner is attached, into its trace (a
    ``latency`` event, ``clock`` wall), where the console reads the same figures."""

    def __init__(self, inner: RuntimeBridge) -> None:
        self.inner = inner
        self.latencies: list[float] = []
        self._observed_at: float | None = None
        self._runner: TaskRunner | None = None

    def attach(self, runner: TaskRunner) -> None:
        self._runner = runner

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        ack = self.inner.dispatch(command, start_budget_ms=start_budget_ms)
        if self._observed_at is not None and ack.accepted and not ack.duplicate:
            seconds = time.perf_counter() - self._observed_at
            self.latencies.append(seconds)
            if self._runner is not None:
                self._runner.note(TraceKind.LATENCY, which="decision", seconds=seconds,
                                  clock="wall", command_id=command.command_id)
        return ack

    def cancel(self, command_id: str) -> Ack:
        return self.inner.cancel(command_id)

    def query(self, command_id: str) -> RuntimeStatus:
        return self.inner.query(command_id)

    def poll(self) -> PollResult:
        result = self.inner.poll()
        if result.observations:
            self._observed_at = time.perf_counter()
        return result

    def close(self) -> None:
        self.inner.close()


def _only(registry: Registry[Any], name: str | None, what: str, flag: str) -> Any:
    if name:
        return registry.get(name, where=flag)
    names = registry.names()
    if len(names) == 1:
        return registry.get(names[0])
    raise DefinitionError(f"NO_{what.upper()}", f"{len(names)} {what}s installed "
                          f"({', '.join(names) or 'none'}); choose one with {flag}",
                          fix="pip install -e . registers the built-in ones" if not names
                          else f"pass {flag} NAME")


def _scene_perception(make: Callable[..., Perception], options: RunOptions
                      ) -> Callable[[], Perception]:
    """The perception factory, given the run's scene document when the run names a scene and
    the factory takes ``scene`` (its catalogue of objects then comes from the document)."""
    if options.scene is None:
        return make
    scene = options.scene_document
    if scene is None:
        raise DefinitionError(
            "SCENE_NOT_LOADED", f"the run names scene {options.scene!r} but carries no scene "
            "document", fix="load it into the options first: "
                            "harness_bt.authoring.scenes.with_scene(options)")
    try:
        takes_scene = "scene" in inspect.signature(make).parameters
    except (TypeError, ValueError):
        takes_scene = False
    return functools.partial(make, scene=scene) if takes_scene else make


def _runtime_stop(runtime: EpisodeRuntime) -> StopRule:
    """The runtime's say: a reason it gives (``stop_reason``) ends the run as aborted with that
    reason, and an episode the simulator ended (``episode_over``) as
    ``aborted_episode_ended``."""
    def rule(_: TaskRunner) -> tuple[str, str] | None:
        stop_reason = getattr(runtime, "stop_reason", None)
        if isinstance(stop_reason, str):
            return "aborted", stop_reason
        return ("aborted", "aborted_episode_ended") if runtime.episode_over else None
    return rule


def _after_tick(runner: TaskRunner, index: int, runtime: EpisodeRuntime,
                on_tick: TickHook | None, watch: RunWatch | None) -> None:
    if on_tick is not None:
        on_tick(runner, index, runtime)
    if watch is not None:
        watch.ticked(runner)


def _check_executors(task: Task, skills: SkillRegistry, runtime: EpisodeRuntime) -> None:
    """Every skill the task commands must have an executor in the runtime (when the runtime
    can tell): refused before the first step, naming the package that provides it."""
    here = runtime.executable_skills() if isinstance(runtime, SkillListing) else None
    if here is None:
        return
    for name in sorted(task.skill_names() - here):
        origin = skills.origin(name) if name in skills else None
        source = f"; its contract comes from package {origin.package!r}" \
            if origin is not None and origin.package else ""
        raise DefinitionError(
            "NO_EXECUTOR", f"task {task.name!r} uses skill {name!r}, which this runtime cannot "
            f"execute (its executors: {', '.join(sorted(here)) or 'none'}){source}",
            fix="install the package that executes it where the runtime runs (its executors "
                "are named in the harness_bt.executors entry-point group)")


def _trace_path(trace: str | os.PathLike[str] | None, index: int, episodes: int) -> str | None:
    if trace is None:
        return None
    path = Path(trace)
    if episodes <= 1:
        return str(path)
    return str(path.with_name(f"{path.stem}.ep{index}{path.suffix or '.jsonl'}"))


def run_episodes(
    task: Task,
    options: RunOptions,
    *,
    runtime: EpisodeRuntime | None = None,
    skills: SkillRegistry | None = None,
    evaluators: EvaluatorRegistry | None = None,
    durable: DurableRun | None = None,
    on_tick: TickHook | None = None,
    watch: RunWatch | None = None,
) -> RunReport:
    """Run ``task`` for ``options.episodes`` episodes (see the module docstring), as
    ``options`` says (its ``bridge``, ``perception``, ``trace``, ``max_ticks`` and
    ``record_frames`` included). ``runtime`` (opened by the caller, who then closes it)
    replaces the ``options.bridge`` entry point. ``durable`` (one episode only) journals the
    run in its file and, when it holds a checkpoint, resumes from there
    (:mod:`harness_bt.run.resume`). ``watch`` watches and steers each episode
    (:class:`RunWatch`)."""
    bridge, perception, trace = options.bridge, options.perception, options.trace
    max_ticks, record_frames = options.max_ticks, options.record_frames
    if record_frames is not None and trace is None:
        raise DefinitionError("INVALID_OPTION", "recording camera frames needs a trace: the "
                              "frames go beside it", fix="pass --trace run.jsonl too")
    if durable is not None and options.episodes != 1:
        raise DefinitionError("INVALID_OPTION", f"a journaled run is one episode, not "
                              f"{options.episodes}", fix="drop --episodes")
    make_perception = _scene_perception(_only(perception_registry(entry_points=True),
                                              perception, "perception", "--perception"), options)
    skills = skills if skills is not None else SkillRegistry(entry_points=True)
    evaluators = evaluators if evaluators is not None else EvaluatorRegistry(entry_points=True)
    own = runtime is None
    if runtime is None:
        runtime = _only(runtime_registry(entry_points=True), bridge, "bridge", "--bridge")(options)
    assert runtime is not None
    run_id = uuid.uuid4().hex[:8]
    reports: list[EpisodeReport] = []
    recorder = None
    try:
        _check_executors(task, skills, runtime)
        for index in range(options.episodes):
            start = runtime.start_episode()
            if start is None:
                break
            timed = _TimedBridge(runtime)
            path = _trace_path(trace, index, options.episodes)
            recorder, perceive = None, make_perception()
            trace_to: str | Trace | None = path
            if record_frames is not None and path is not None:
                from harness_bt.recording import FrameRecorder, frames_path

                recording = Trace(path, clock=runtime.clock)
                recorder = FrameRecorder(frames_path(path), recording, rate_hz=record_frames)
                want = getattr(runtime, "want_frames", None)  # a simulator rendering on demand
                if callable(want):
                    want("recording", record_frames)
                trace_to = recording
                perceive = recorder.wrap(perceive)
            if watch is not None:
                perceive = watch.perception(perceive)
            runner = TaskRunner(
                task, bridge=timed, clock=runtime.clock, skills=skills, trace=trace_to,
                run_id=f"{run_id}-ep{index}" if durable is None else durable.run_id,
                settings=RunnerSettings(tick_period_s=runtime.control_period_s,
                                        seed=options.seed + index),
                parts=RunParts(perception=perceive, evaluators=evaluators,
                               ledger=None if durable is None else durable.ledger,
                               run_record=None if durable is None else durable.record,
                               resume=None if durable is None else durable.checkpoint))
            timed.attach(runner)
            epoch = getattr(runtime, "epoch", None)  # a runtime that took a control epoch
            if isinstance(epoch, int) and not isinstance(epoch, bool) \
                    and epoch > runner.ledger.epoch:
                runner.ledger.epoch = epoch
            if watch is not None:
                watch.attach(runner, index)
            began = time.perf_counter()
            tick_until_finished(
                runner, sleep=functools.partial(runtime.clock.sleep, runtime.control_period_s),
                stops=(_runtime_stop(runtime), max_ticks_rule(max_ticks)),
                after_tick=functools.partial(_after_tick, runner, index, runtime, on_tick,
                                             watch),
                rest_after_end=True)
            wall = time.perf_counter() - began
            end = runtime.finish_episode()
            runner.close()
            if recorder is not None:
                recorder.close()
            result = runner.result
            assert result is not None
            faults = [*fault_outcomes(runner.trace.events, succeeded=result.outcome == "succeeded",
                                      sim_success=end.sim_success),
                      *late_faults(end.details.get("faults_after_task", ()))]
            reports.append(EpisodeReport(
                index=index, seed=options.seed + index, outcome=result.outcome,
                reason=result.reason, sim_success=end.sim_success, sim_ended_by=end.ended_by,
                retries=result.retries, recoveries=result.recoveries,
                unknown_verdicts=result.unknown_verdicts, unknown_commands=len(result.unknowns),
                commands=len(result.commands), sim_steps=end.steps,
                sim_time_s=float(result.durations.get("total", 0.0)), wall_s=wall,
                decision_latency_s=tuple(timed.latencies),
                phases_visited=tuple(result.phases_visited), trace_path=path,
                why=why_not_done(runner.trace.events, result.reason, result.command_reasons),
                faults=tuple(faults), faults_note=faults_note(options.faults, faults),
                details={"final_state": result.final_state,
                         "command_reasons": {k: v for k, v in result.command_reasons.items()
                                             if result.commands[k] != "SUCCEEDED"},
                         "sim": end.to_dict()}))
        return RunReport(task.name, tuple(reports), runtime.final_metric(), options)
    finally:
        if recorder is not None:  # an episode that raised: keep what it recorded
            recorder.close()
        if own:
            runtime.close()
