"""The evaluation driver: hands episodes to a pool and records each finished one once.

:func:`evaluate` skips every spec the store has recorded already, keeps the pool's slots full,
and commits each result the moment it arrives. An episode whose worker died is handed out
again (same spec, so the same seed) up to ``max_attempts`` times in all; an episode that killed
its worker that often is recorded with outcome ``worker_crashed``, not retried for ever. An
episode that raised (a task, scene or fault the simulator refuses, a bug) is not recorded: the
driver stops handing out work, lets the episodes in flight finish (they are recorded), and
raises ``EPISODE_ERROR`` with the first error, so a rerun after the fix runs what is missing.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_bt.errors import HarnessError
from harness_bt.eval.plan import EpisodeKey, EpisodeSpec
from harness_bt.eval.store import ResultsStore
from harness_bt.eval.workers import Event, Pool

__all__ = ["EvalRun", "OnRecord", "evaluate", "failure_row"]

#: Called after every recorded episode: (row, run so far).
OnRecord = Callable[[dict[str, Any], "EvalRun"], None]


@dataclass
class EvalRun:
    """What one call of :func:`evaluate` did."""

    planned: int
    skipped: int
    recorded: int = 0
    succeeded: int = 0
    reruns: int = 0
    duplicates: int = 0
    crashes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    driver_s: float = 0.0  # time spent in the driver itself (store writes, bookkeeping)

    @property
    def to_run(self) -> int:
        return self.planned - self.skipped


def failure_row(spec: EpisodeSpec, outcome: str, reason: str, error: str) -> dict[str, Any]:
    """The row of an episode that produced no result of its own."""
    return {"task": spec.task, "digest": spec.digest, "condition": spec.condition,
            "episode": spec.key.episode, "seed": spec.seed, "scene": spec.scene,
            "outcome": outcome, "reason": reason, "false_success": False, "unknown": False,
            "error": error}


def evaluate(specs: Sequence[EpisodeSpec], store: ResultsStore, pool: Pool, *,
             max_attempts: int = 2, on_record: OnRecord | None = None) -> EvalRun:
    """Run every spec not yet in ``store`` on ``pool`` (see the module docstring)."""
    done = store.recorded()
    server = [s for s in specs if s.sim_url is not None]
    todo = deque(s for s in specs if s.sim_url is not None or s.key not in done)
    run = EvalRun(planned=len(specs), skipped=len(specs) - len(todo))
    attempts: Counter[EpisodeKey] = Counter()
    worker_attempts: Counter[str | None] = Counter()
    skip = {k.episode for k in done} if server else set()

    def record(row: dict[str, Any], n: int) -> None:
        began = time.perf_counter()
        key = EpisodeKey(row["digest"], row["condition"], str(row["episode"]))
        if store.record(row, attempts=n):
            run.recorded += 1
            run.succeeded += row.get("outcome") == "succeeded"
            skip.add(key.episode)
        else:
            run.duplicates += 1
        run.driver_s += time.perf_counter() - began
        if on_record is not None:
            on_record(row, run)

    def handle(event: Event) -> None:
        spec = event.spec
        if event.kind == "row" and event.row is not None:
            record(event.row, attempts[spec.key] + 1 if spec.sim_url is None else 1)
        elif event.kind == "error":
            run.errors.append(f"{spec.task} episode {spec.key.episode}: {event.detail}")
            todo.clear()
        elif event.kind == "crashed":
            run.crashes.append(f"{spec.task} {spec.key.episode}: {event.detail}")
            if spec.sim_url is not None:  # a server worker: its queue moved on; start it again
                worker_attempts[spec.worker_id] += 1
                if worker_attempts[spec.worker_id] < max_attempts:
                    todo.appendleft(spec)
                return
            attempts[spec.key] += 1
            if attempts[spec.key] >= max_attempts:
                record(failure_row(spec, "worker_crashed", "worker_crashed", event.detail),
                       attempts[spec.key])
            else:
                run.reruns += 1
                todo.appendleft(spec)

    while todo or pool.free < _capacity(pool):
        while todo and pool.free > 0:
            spec = todo.popleft()
            pool.submit(spec, skip=skip if spec.sim_url is not None else ())
        for event in pool.wait():
            handle(event)
    if run.errors:
        raise HarnessError("EPISODE_ERROR", f"{len(run.errors)} episode(s) raised; the first: "
                           f"{run.errors[0]}", fix="fix the cause and run the same command "
                           "again: recorded episodes are kept, the rest run")
    return run


def _capacity(pool: Pool) -> int:
    return int(getattr(pool, "workers", 1))
