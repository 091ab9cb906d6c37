"""What an evaluation worker keeps from one episode to the next.

A worker process runs many short episodes of the same few tasks. Loading a task (reading and
validating its document, making the node models) and filling the skill, evaluator and runtime
registries from the installed entry points take about a second together, every episode, for
the same result. :func:`task` keeps the loaded tasks of this process by file (path, size and
modification time) and ``--set`` values, :func:`scene` the checked scene documents likewise;
:func:`skills`, :func:`evaluators` and
:func:`runtimes` fill each registry once per process. A task and the registries hold no run
state (every episode builds its own trees, ledger and runner from them), so an episode's
outcome does not depend on what the worker ran before.

A worker is one evaluation's: what it keeps lives as long as the process (a changed task file
is read again; a changed file that the task only refers to, such as a subtree, is not).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_bt.evaluation import EvaluatorRegistry
from harness_bt.plugins import Registry
from harness_bt.runtime.episodes import RuntimeFactory, runtime_registry
from harness_bt.scene.document import Scene, find_scene
from harness_bt.skill import SkillRegistry
from harness_bt.task import Task

__all__ = ["MAX_KEPT", "evaluators", "runtimes", "scene", "skills", "task"]

#: The most loaded tasks (and scenes) one process keeps (the oldest goes first).
MAX_KEPT = 8

_kept: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()


def _key(kind: str, path: Path, params: Mapping[str, Any]) -> tuple[Any, ...]:
    stat = path.stat()
    return (kind, str(path.resolve()), stat.st_size, stat.st_mtime_ns,
            tuple(sorted((str(k), repr(v)) for k, v in params.items())))


def _keep(key: tuple[Any, ...], load: Any) -> Any:
    with _lock:
        found = _kept.get(key)
    if found is not None:
        return found
    loaded = load()
    with _lock:
        if len(_kept) >= MAX_KEPT:
            _kept.pop(next(iter(_kept)))
        _kept[key] = loaded
    return loaded


def task(path: Path, params: Mapping[str, Any], scene: str | None = None) -> Task:
    """The task of ``path`` with ``params`` (``--set`` values), run in ``scene`` when not its
    own (``--scene``), loaded once per file version."""
    from harness_bt.authoring import load_task

    loaded: Task = _keep((*_key("task", path, params), scene),
                         lambda: load_task(path, params=dict(params), scene=scene))
    return loaded


def scene(ref: str, params: Mapping[str, Any]) -> Scene:
    """The scene ``ref`` names (a name or a path), checked with ``params`` bound, once per
    file version."""
    from harness_bt.authoring.scenes import load_scene

    loaded: Scene = _keep(_key("scene", find_scene(ref), params),
                          lambda: load_scene(ref, params=params))
    return loaded


@functools.cache
def skills() -> SkillRegistry:
    """The installed skills, loaded once per process."""
    return SkillRegistry(entry_points=True)


@functools.cache
def evaluators() -> EvaluatorRegistry:
    """The installed evaluators, loaded once per process."""
    return EvaluatorRegistry(entry_points=True)


@functools.cache
def runtimes() -> Registry[RuntimeFactory]:
    """The installed runtimes (``harness_bt.bridges``), loaded once per process."""
    return runtime_registry(entry_points=True)
