"""Episodes as Ray tasks: ``harness eval --ray`` (a local Ray instance) or ``--ray ADDRESS``
(an existing cluster, e.g. ``ray://head:10001`` or ``auto``).

Each episode is one Ray task (one CPU) that takes the spec as JSON and returns its messages as
JSON. At most ``workers`` tasks are in flight, so ``--workers`` means the same with processes
and with Ray. Ray's own retries are off (``max_retries=0``): a task whose worker process died
comes back as a ``crashed`` event and the driver decides, as for local processes, whether the
episode runs again. Every node of a cluster needs harness-bt (and the task files, at the same
paths) installed where its Ray workers run.

Ray is an optional extra: without it :class:`RayPool` raises ``RAY_MISSING`` saying how to
install it.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

import orjson

from harness_bt.errors import DefinitionError
from harness_bt.eval.episode import DEFAULT_EPISODE_FN
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.eval.workers import Event, run_in_worker

__all__ = ["RayPool", "import_ray"]


def import_ray() -> Any:
    """The ``ray`` module, or a clear error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise DefinitionError(
            "RAY_MISSING", "--ray needs Ray, which is not installed in this environment",
            fix="pip install 'harness-bt[ray]' (or run without --ray: local worker "
                "processes)") from None
    return ray


def _ray_episode(spec_json: bytes, episode_fn: str) -> bytes:
    """The body of one Ray task."""
    spec = EpisodeSpec.from_dict(orjson.loads(spec_json))
    return orjson.dumps(run_in_worker(spec, episode_fn))


class RayPool:
    """See the module docstring. ``address``: None for a local instance (started here with
    ``workers`` CPUs and shut down by :meth:`close`), else the cluster to join."""

    def __init__(self, workers: int, *, address: str | None = None,
                 episode_fn: str = DEFAULT_EPISODE_FN) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        ray = import_ray()
        self._ray = ray
        self.workers = workers
        self.episode_fn = episode_fn
        self._own = not ray.is_initialized()
        # Ray replaces builtins.print in the driver for its progress bars unless told not to
        os.environ.setdefault("RAY_TQDM_PATCH_PRINT", "0")
        if self._own:
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "configure_logging": False}
            if address:
                kwargs["address"] = address
            else:
                kwargs["num_cpus"] = workers
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise DefinitionError("RAY_UNREACHABLE", f"--ray {address or ''}: Ray did "
                                      f"not start or connect: {exc}",
                                      fix="check the address (ray status on the head node), "
                                          "or pass --ray alone for a local instance") from None
        self._task = ray.remote(num_cpus=1, max_retries=0)(_ray_episode)
        self._flight: dict[Any, EpisodeSpec] = {}

    @property
    def free(self) -> int:
        return self.workers - len(self._flight)

    def submit(self, spec: EpisodeSpec, *, skip: Collection[str] = ()) -> None:
        if spec.sim_url is not None:
            raise DefinitionError("INVALID_OPTION", "--sim with --ray: a GenManip server's "
                                  "workers are driven from local processes",
                                  fix="drop --ray (the server hosts the parallel simulators)")
        ref = self._task.remote(orjson.dumps(spec.to_dict()), self.episode_fn)
        self._flight[ref] = spec

    def wait(self) -> list[Event]:
        if not self._flight:
            return []
        ready, _ = self._ray.wait(list(self._flight), num_returns=1)
        events: list[Event] = []
        for ref in ready:
            spec = self._flight.pop(ref)
            try:
                items = orjson.loads(self._ray.get(ref))
            except self._ray.exceptions.RayTaskError as exc:
                events.append(Event("error", spec, detail=str(exc).splitlines()[0],
                                    code="RAY_TASK_ERROR"))
                continue
            except self._ray.exceptions.RayError as exc:  # the worker process died
                events.append(Event("crashed", spec, detail=f"{type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0] if str(exc) else ''}"))
                continue
            for item in items:
                kind = item["kind"]
                events.append(Event(kind, spec, row=item.get("row"),
                                    detail=item.get("detail", ""), code=item.get("code", "")))
        return events

    def close(self) -> None:
        for ref in list(self._flight):
            self._ray.cancel(ref, force=True)
        self._flight.clear()
        if self._own and self._ray.is_initialized():
            self._ray.shutdown()
