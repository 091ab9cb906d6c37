"""One episode, run where a worker runs it: the spec in, one JSON-ready result row out.

:func:`run_episode` loads the task (with the spec's ``--set`` values), opens a fresh in-process
runtime for the spec's scene, seed and faults, runs exactly one episode through
:func:`~harness_bt.run.episodes.run_episodes` (what ``harness run`` does) and reads the row the
results store keeps. A fresh runtime per episode makes the outcome a function of the spec
alone: the simulator runs on the harness's simulation clock, so the same seed gives the same
outcome in any worker, process or Ray task. What does not depend on the episode is kept by the
worker between its episodes: the loaded task and the registries (:mod:`harness_bt.eval.kept`)
and the simulator's PyBullet world (runtime setting ``keep_world``, unless the spec's
``extra`` says otherwise), each laid out afresh per episode.

:func:`run_server_episodes` drives one worker id of a GenManip server (``--sim URL``) until the
server has no episode left, yielding a row per episode keyed by the server's episode id
(``w<worker>.e<n>``: the worker's n-th episode).

:func:`resolve` finds the episode function a worker calls by ``module:name`` (the default is
:func:`run_episode`; the test suite substitutes a rig that kills its worker).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness_bt.authoring.scenes import with_scene
from harness_bt.errors import DefinitionError, HarnessError
from harness_bt.eval import kept
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.plugins import load_reference
from harness_bt.run.episodes import EpisodeReport, percentile, run_episodes
from harness_bt.run.runner import TaskRunner
from harness_bt.runtime.episodes import EpisodeRuntime, RunOptions, runtime_registry
from harness_bt.runtime.settings import RuntimeSettings

__all__ = ["DEFAULT_EPISODE_FN", "EpisodeFn", "resolve", "row_from_report", "run_episode",
           "run_server_episodes"]

#: The episode function workers call unless told otherwise.
DEFAULT_EPISODE_FN = "harness_bt.eval.episode:run_episode"

EpisodeFn = Callable[[EpisodeSpec], dict[str, Any]]


def resolve(name: str) -> EpisodeFn:
    """The function ``module:attribute`` names (through :func:`harness_bt.plugins.load_reference`,
    the one loader of references)."""
    try:
        fn = load_reference(name, "episode function", example=DEFAULT_EPISODE_FN)
    except DefinitionError as exc:
        raise DefinitionError("UNKNOWN_EPISODE_FN", exc.message, fix=exc.fix) from None
    if not callable(fn):
        raise DefinitionError("UNKNOWN_EPISODE_FN", f"{name!r} is not a function",
                              fix="name it module:function")
    return fn


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 3)


def _trace(spec: EpisodeSpec, episode: str) -> str | None:
    if spec.trace_dir is None:
        return None
    slug = "".join(c if c.isalnum() or c in "._-" else "_" for c in spec.condition)
    path = Path(spec.trace_dir) / f"{spec.task}.{spec.digest[:8]}.{slug}.{episode}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


def row_from_report(spec: EpisodeSpec, episode: str, report: EpisodeReport,
                    phase_times: Mapping[str, float], scene: str | None = None
                    ) -> dict[str, Any]:
    """The results store's row for one finished episode."""
    lat = list(report.decision_latency_s)
    visited = [p for p in report.phases_visited if p != report.details.get("final_state")]
    return {
        "task": spec.task, "digest": spec.digest, "condition": spec.condition,
        "episode": episode, "seed": report.seed if spec.sim_url is None else None,
        "scene": scene or spec.scene, "outcome": report.outcome, "reason": report.reason,
        "last_phase": visited[-1] if visited else None,
        "sim_success": report.sim_success, "sim_ended_by": report.sim_ended_by,
        "false_success": report.false_success, "unknown": report.unknown,
        "retries": report.retries, "recoveries": report.recoveries,
        "commands": report.commands, "sim_steps": report.sim_steps,
        "phase_times": _in_entry_order(phase_times, report.phases_visited),
        "decision_latency_p50_ms": _ms(percentile(lat, 50)),
        "decision_latency_p99_ms": _ms(percentile(lat, 99)),
        "sim_time_s": round(report.sim_time_s, 4), "wall_s": round(report.wall_s, 3),
        "trace": report.trace_path, "worker": f"{socket.gethostname()}:{os.getpid()}",
        "faults": [dict(f) for f in report.faults], "faults_asked": dict(spec.faults),
        "faults_note": report.faults_note,
    }


def _in_entry_order(phase_times: Mapping[str, float], visited: tuple[str, ...]
                    ) -> dict[str, float]:
    """Seconds per phase, keyed in the order the episode first entered the phases (the report
    orders phases by it); a phase with a time but no entry comes last."""
    times = {k: round(float(v), 4) for k, v in phase_times.items() if k != "total"}
    order = [p for p in dict.fromkeys(visited) if p in times]
    return {**{p: times[p] for p in order}, **{k: v for k, v in times.items() if k not in order}}


class _LastRunner:
    """A tick hook that keeps the runner (its result holds the per-phase times)."""

    def __init__(self) -> None:
        self.runner: TaskRunner | None = None

    def __call__(self, runner: TaskRunner, index: int, runtime: EpisodeRuntime) -> None:
        self.runner = runner

    def phase_times(self) -> dict[str, float]:
        result = None if self.runner is None else self.runner.result
        return {} if result is None else {k: float(v) for k, v in result.durations.items()}


def _options(spec: EpisodeSpec, task_scene: str | None, params: Mapping[str, Any],
             task_name: str, defaults: Mapping[str, Any] | None = None, *,
             keep: bool = False) -> RunOptions:
    # an episode's extra holds runtime settings and what test rigs read (never the runtime's)
    settings = dict(defaults or {})
    settings.update((k, v) for k, v in spec.extra.items() if k in RuntimeSettings.names())
    if spec.worker_id is not None:
        settings["worker_id"] = spec.worker_id
    options = RunOptions(task=task_name, sim_url=spec.sim_url, episodes=1, seed=spec.seed,
                         faults=dict(spec.faults), scene=spec.scene or task_scene,
                         params=dict(params),
                         runtime_settings=RuntimeSettings.from_mapping(settings))
    if keep and options.scene is not None:  # the worker's checked scene document
        return dataclasses.replace(options, scene_document=kept.scene(options.scene,
                                                                      options.params))
    return with_scene(options)


def run_episode(spec: EpisodeSpec) -> dict[str, Any]:
    """Run one episode of ``spec`` on a fresh in-process simulator (see the module
    docstring) and return its row."""
    task = kept.task(Path(spec.task_file), spec.params, spec.scene)
    options = _options(spec, task.scene, task.params, task.name, {"keep_world": True},
                       keep=True)
    options = dataclasses.replace(options, trace=_trace(spec, str(spec.seed)))
    hook = _LastRunner()
    runtime = kept.runtimes().get(options.bridge, where="--bridge")(options)
    try:
        report = run_episodes(task, options, runtime=runtime, skills=kept.skills(),
                              evaluators=kept.evaluators(), on_tick=hook)
    finally:
        runtime.close()
    if not report.episodes:
        raise HarnessError("NO_EPISODE", f"{spec.task} seed {spec.seed}: the simulator ran no "
                           "episode", fix="check the scene and its number of steps")
    return row_from_report(spec, str(spec.seed), report.episodes[0], hook.phase_times(),
                           options.scene)


def run_server_episodes(spec: EpisodeSpec, *, skip: Callable[[str], bool] | None = None
                        ) -> Iterator[dict[str, Any]]:
    """Drive GenManip worker ``spec.worker_id`` at ``spec.sim_url`` until the server has no
    episode left; one row per episode (see the module docstring). An episode ``skip`` says is
    recorded already is still run (the server's queue decides what comes next) but yields
    nothing."""
    from harness_bt.authoring import load_task

    task = load_task(Path(spec.task_file), params=dict(spec.params), scene=spec.scene)
    options = _options(spec, task.scene, task.params, task.name)
    runtime = runtime_registry(entry_points=True).get("inproc", where="--sim")(options)
    try:
        n = 0
        while True:
            episode = f"w{spec.worker_id}.e{n}"
            hook = _LastRunner()
            began = time.perf_counter()
            report = run_episodes(task, dataclasses.replace(options, trace=_trace(spec, episode)),
                                  on_tick=hook, runtime=runtime)
            if not report.episodes:
                return
            n += 1
            if skip is not None and skip(episode):
                continue
            row = row_from_report(spec, episode, report.episodes[0], hook.phase_times(),
                                  options.scene)
            row["wall_s"] = round(time.perf_counter() - began, 3)
            yield row
    finally:
        runtime.close()
