"""The episode queue (scenes x seeds) and the per-episode results, shared by all workers of one
simulator, as upstream GenManip distributes its episodes."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["EpisodeBook", "QueuedEpisode"]


@dataclass(frozen=True, slots=True)
class QueuedEpisode:
    """One episode to run: its position in the queue, the scene (``task``, as GenManip names
    it) and the layout seed."""

    index: int
    task: str
    seed: int


class EpisodeBook:
    """Hands out episodes in order (every scene, then every seed) and keeps their results.

    ``final_metric()`` is ``{scene: mean success}`` over the recorded episodes, the dict
    GenManip sends with ``{"obs": None}`` when the queue is empty; a scene whose episodes are
    not judged (no success condition) is left out of it.
    """

    def __init__(self, tasks: tuple[str, ...], episodes: int, base_seed: int = 0) -> None:
        self.tasks = tasks
        self._queue = [QueuedEpisode(i * episodes + k, task, base_seed + k)
                       for i, task in enumerate(tasks) for k in range(episodes)]
        self._next = 0
        self._results: list[dict[str, Any]] = []
        self._skipped: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        return len(self._queue)

    def next(self) -> QueuedEpisode | None:
        with self._lock:
            if self._next >= len(self._queue):
                return None
            spec = self._queue[self._next]
            self._next += 1
            return spec

    def record(self, result: dict[str, Any]) -> None:
        with self._lock:
            self._results.append(dict(result))

    def skip(self, spec: QueuedEpisode, worker_id: str, steps: int) -> None:
        """An episode abandoned by a ``/reset`` before it ended: no result (as upstream)."""
        with self._lock:
            self._skipped.append({"index": spec.index, "task": spec.task, "seed": spec.seed,
                                  "worker_id": worker_id, "steps": steps})

    def results(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._results]

    def last(self) -> dict[str, Any] | None:
        """The episode recorded last (a copy), None before any."""
        with self._lock:
            return dict(self._results[-1]) if self._results else None

    def skipped(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._skipped]

    def final_metric(self) -> dict[str, float]:
        with self._lock:
            out: dict[str, float] = {}
            for task in self.tasks:
                rows = [r for r in self._results if r["task"] == task]
                values = [r["success"] for r in rows if r["success"] is not None]
                if values or not rows:
                    out[task] = float(sum(values) / len(values)) if values else 0.0
            return out
