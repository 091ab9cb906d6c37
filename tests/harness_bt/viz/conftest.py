"""Traces of the running example, written once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt import FakeClock, TaskRunner
from harness_bt.testing import example


@pytest.fixture(scope="session")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """scenario -> trace file; ``unknown`` is the occlusion scenario with one look allowed
    (the grasp cannot be judged: the task ends aborted_unknown)."""
    root = tmp_path_factory.mktemp("traces")
    out = {}
    for scenario in ("clean", "slip", "budget"):
        path = root / f"{scenario}.jsonl"
        example.run_example(scenario, trace=str(path))
        out[scenario] = path
    clock = FakeClock()
    runtime, _ = example._scenario("occlusion", clock)
    runner = TaskRunner(example.fetch_cup_task(max_observations=1), bridge=runtime, clock=clock,
                        skills=example.example_skills(), run_id="example",
                        trace=root / "unknown.jsonl")
    runner.run(max_ticks=500)
    runner.close()
    out["unknown"] = root / "unknown.jsonl"
    return out
