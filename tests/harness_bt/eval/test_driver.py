"""The driver against a scripted pool (no process): skips what is recorded, reruns an episode
whose worker died once, records ``worker_crashed`` after the second death, stops on an
episode that raised and keeps what finished."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from pathlib import Path

import pytest

from harness_bt.errors import HarnessError
from harness_bt.eval.driver import evaluate
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.eval.store import ResultsStore
from harness_bt.eval.workers import Event
from harness_bt.testing.eval_rigs import quick_episode


class ScriptedPool:
    """Runs each spec at once with :func:`quick_episode`; ``crash`` (seed -> deaths) and
    ``fail`` (seeds that raise) script what goes wrong. ``workers`` slots."""

    def __init__(self, workers: int = 2, crash: dict[int, int] | None = None,
                 fail: Collection[int] = ()) -> None:
        self.workers = workers
        self.crash = dict(crash or {})
        self.fail = set(fail)
        self.flight: deque[EpisodeSpec] = deque()
        self.submitted: list[int] = []

    @property
    def free(self) -> int:
        return self.workers - len(self.flight)

    def submit(self, spec: EpisodeSpec, *, skip: Collection[str] = ()) -> None:
        assert self.free > 0
        self.flight.append(spec)
        self.submitted.append(spec.seed)

    def wait(self) -> list[Event]:
        spec = self.flight.popleft()
        if self.crash.get(spec.seed, 0) > 0:
            self.crash[spec.seed] -= 1
            return [Event("crashed", spec, detail="killed")]
        if spec.seed in self.fail:
            return [Event("error", spec, detail="UNKNOWN_FAULT: unknown fault(s) spin",
                          code="UNKNOWN_FAULT")]
        return [Event("row", spec, row=quick_episode(spec)), Event("done", spec)]

    def close(self) -> None:
        pass


def specs(n: int) -> list[EpisodeSpec]:
    return [EpisodeSpec(task="pick", task_file="/t/pick.yaml", digest="d", condition="clean",
                        seed=s) for s in range(n)]


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    s = ResultsStore.in_dir(tmp_path, clock=lambda: 0.0)
    yield s  # type: ignore[misc]
    s.close()


def test_every_episode_is_recorded_once_and_a_rerun_runs_nothing(store: ResultsStore) -> None:
    pool = ScriptedPool()
    run = evaluate(specs(5), store, pool)
    assert (run.planned, run.skipped, run.recorded, run.succeeded) == (5, 0, 5, 3)
    again = ScriptedPool()
    rerun = evaluate(specs(5), store, again)
    assert (rerun.skipped, rerun.recorded, again.submitted) == (5, 0, [])
    assert [r["seed"] for r in store.rows()] == [0, 1, 2, 3, 4]


def test_an_episode_whose_worker_died_runs_again_with_its_seed_and_is_recorded_once(
        store: ResultsStore) -> None:
    pool = ScriptedPool(crash={2: 1})
    run = evaluate(specs(4), store, pool)
    assert pool.submitted == [0, 1, 2, 3, 2]  # back in the queue, first in line
    assert (run.recorded, run.reruns, len(run.crashes)) == (4, 1, 1)
    assert {r["seed"]: (r["outcome"], r["attempts"]) for r in store.rows()} == {
        0: ("aborted", 1), 1: ("succeeded", 1), 2: ("succeeded", 2), 3: ("aborted", 1)}


def test_an_episode_that_kills_its_worker_twice_is_recorded_worker_crashed(
        store: ResultsStore) -> None:
    pool = ScriptedPool(crash={1: 5})
    run = evaluate(specs(3), store, pool)
    assert pool.submitted == [0, 1, 2, 1]
    row = {r["seed"]: r for r in store.rows()}[1]
    assert (row["outcome"], row["reason"], row["attempts"], row["error"]) == (
        "worker_crashed", "worker_crashed", 2, "killed")
    assert run.recorded == 3
    assert evaluate(specs(3), store, ScriptedPool()).recorded == 0  # not retried for ever


def test_an_episode_that_raises_stops_the_run_and_keeps_what_finished(
        store: ResultsStore) -> None:
    pool = ScriptedPool(workers=1, fail={2})
    with pytest.raises(HarnessError, match=r"EPISODE_ERROR: 1 episode\(s\) raised; the first: "
                       "pick episode 2: UNKNOWN_FAULT: unknown fault") as err:
        evaluate(specs(5), store, pool)
    assert "run the same command again" in str(err.value)
    assert pool.submitted == [0, 1, 2]
    assert [r["seed"] for r in store.rows()] == [0, 1]  # the error is not recorded
    fixed = ScriptedPool()
    assert evaluate(specs(5), store, fixed).recorded == 3
    assert fixed.submitted == [2, 3, 4]


def test_progress_is_reported_after_every_recorded_episode(store: ResultsStore) -> None:
    seen: list[tuple[int, int, int]] = []
    evaluate(specs(4), store, ScriptedPool(),
             on_record=lambda row, run: seen.append((row["seed"], run.recorded, run.succeeded)))
    assert seen == [(0, 1, 0), (1, 2, 1), (2, 3, 2), (3, 4, 2)]
