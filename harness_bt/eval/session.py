"""One evaluation from start to report: check the tasks, plan the episodes, open the pool
(local processes, Ray, or a GenManip server's workers), run what the store lacks, and read back
the rows of this evaluation. ``harness eval`` and ``harness compare`` are thin shells over
:func:`run_evaluation`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.eval.driver import EvalRun, OnRecord, evaluate
from harness_bt.eval.episode import DEFAULT_EPISODE_FN
from harness_bt.eval.plan import EpisodeSpec, condition_label, plan_episodes, task_digest
from harness_bt.eval.reuse import Reuse, refuse_other, survey
from harness_bt.eval.store import STORE_NAME, ResultsStore
from harness_bt.eval.workers import Pool, ProcessPool

__all__ = ["EvalConfig", "EvalResult", "open_pool", "plan", "run_evaluation"]


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and where. ``ray``: None (local processes), ``""`` (a local Ray
    instance) or a cluster address. ``sim_url``: drive a GenManip server's workers ``0 ..
    workers-1`` through its own episode queue instead of seeds. ``traces``: write each
    episode's JSONL trace under ``out/traces`` (the report links the failed ones' replays).
    ``reuse``: accept a store holding another evaluation's episodes (``--reuse``;
    :mod:`harness_bt.eval.reuse`)."""

    tasks: tuple[Path, ...]
    out: Path
    episodes: int = 10
    seed: int = 0
    scene: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    faults: Mapping[str, float] = field(default_factory=dict)
    workers: int = 1
    ray: str | None = None
    sim_url: str | None = None
    traces: bool = True
    episode_fn: str = DEFAULT_EPISODE_FN
    extra: Mapping[str, Any] = field(default_factory=dict)
    max_attempts: int = 2
    reuse: bool = False


@dataclass
class EvalResult:
    """The run's bookkeeping, every row of this evaluation (recorded now or before), and
    what it took from the store."""

    run: EvalRun
    rows: list[dict[str, Any]]
    specs: list[EpisodeSpec]
    reuse: Reuse | None = None


def _check(config: EvalConfig) -> None:
    from harness_bt.authoring import load_task
    from harness_bt.authoring.objects import refuse_missing_objects
    from harness_bt.authoring.scenes import load_scene

    if config.episodes < 1:
        raise DefinitionError("INVALID_OPTION", f"--episodes {config.episodes}: at least 1",
                              fix="pass --episodes 20")
    if config.workers < 1:
        raise DefinitionError("INVALID_OPTION", f"--workers {config.workers}: at least 1",
                              fix="pass --workers 2 (one per core)")
    if not config.tasks:
        raise DefinitionError("INVALID_OPTION", "no task file given",
                              fix="harness eval trees/pick.yaml --episodes 20")
    if config.sim_url is not None and config.ray is not None:
        raise DefinitionError("INVALID_OPTION", "--sim with --ray: a GenManip server's "
                              "workers are driven from local processes",
                              fix="drop --ray (the server hosts the parallel simulators)")
    if config.sim_url is not None and len(config.tasks) != 1:
        raise DefinitionError("INVALID_OPTION", f"--sim runs the server's episodes of one "
                              f"task; got {len(config.tasks)} tasks", fix="give one task file")
    if config.sim_url is not None and config.faults:
        raise DefinitionError("UNSUPPORTED_FAULT", "--inject configures the built-in "
                              f"simulator; the server at {config.sim_url} injects its own",
                              fix="start it with harness sim serve --fault-slip 0.3 ...")
    stems: dict[str, Path] = {}
    for path in config.tasks:
        # an unknown file, a bad --set, a loop over a group --scene lacks: here
        task = load_task(path, params=dict(config.params), scene=config.scene)
        if path.stem in stems and stems[path.stem].resolve() != path.resolve():
            raise DefinitionError("INVALID_OPTION", f"two task files are both called "
                                  f"{path.stem!r} ({stems[path.stem]} and {path})",
                                  fix="rename one: reports name tasks by file name")
        stems[path.stem] = path
        scene = config.scene or task.scene
        if config.sim_url is None and scene is None:
            raise DefinitionError("NO_SCENE", f"task {task.name!r} ({path}) names no scene "
                                  "for the built-in simulator", where=str(path),
                                  fix="add 'scene: NAME' to the task, or pass --scene NAME")
        if config.sim_url is None and scene is not None:
            refuse_missing_objects(path, load_scene(scene, params=task.params),
                                   params=dict(config.params), scene_ref=config.scene)


def plan(config: EvalConfig) -> list[EpisodeSpec]:
    """Check everything that can be checked before a worker starts, then the specs."""
    _check(config)
    traces = str((config.out / "traces").resolve()) if config.traces else None
    if config.sim_url is not None:
        path = config.tasks[0]
        return [EpisodeSpec(task=path.stem, task_file=str(path.resolve()),
                            digest=task_digest(path),
                            condition=condition_label(config.params, {}) + f" @{config.sim_url}",
                            seed=0, scene=config.scene, params=dict(config.params),
                            trace_dir=traces, sim_url=config.sim_url, worker_id=str(k),
                            extra=dict(config.extra))
                for k in range(config.workers)]
    return plan_episodes(list(config.tasks), episodes=config.episodes, seed=config.seed,
                         params=config.params, faults=config.faults, scene=config.scene,
                         trace_dir=traces, extra=config.extra)


@contextmanager
def open_pool(config: EvalConfig) -> Iterator[Pool]:
    """The pool ``config`` asks for, closed (every worker ended) on exit."""
    pool: Pool
    if config.ray is not None:
        from harness_bt.eval.ray_pool import RayPool

        pool = RayPool(config.workers, address=config.ray or None, episode_fn=config.episode_fn)
    else:
        pool = ProcessPool(config.workers, episode_fn=config.episode_fn)
    try:
        yield pool
    finally:
        pool.close()


def run_evaluation(config: EvalConfig, *, store: ResultsStore | None = None,
                   on_record: OnRecord | None = None,
                   on_plan: Any = None) -> EvalResult:
    """Plan, refuse a store of another evaluation (unless ``config.reuse``), run what the
    store lacks, and return this evaluation's rows. ``on_plan(specs, skipped, reuse)`` is
    called once the work is known (a progress bar's total), before any episode runs."""
    specs = plan(config)
    own = store is None
    existed = store is not None or (config.out / STORE_NAME).is_file()
    store = store or ResultsStore.in_dir(config.out)
    try:
        reuse = survey(str(store.path), existed, store.rows(), specs)
        refuse_other(reuse, specs, allowed=config.reuse)
        done = store.recorded()
        if on_plan is not None:
            on_plan(specs, sum(1 for s in specs if s.sim_url is None and s.key in done), reuse)
        with open_pool(config) as pool:
            run = evaluate(specs, store, pool, max_attempts=config.max_attempts,
                           on_record=on_record)
        digests = {s.digest for s in specs}
        conditions = {s.condition for s in specs}
        wanted = {(s.digest, s.condition, s.key.episode) for s in specs}
        rows = [r for c in sorted(conditions) for r in store.rows(digests=digests, condition=c)
                if config.sim_url is not None
                or (r["digest"], r["condition"], r["episode"]) in wanted]
    finally:
        if own:
            store.close()
    return EvalResult(run, rows, specs, reuse)
