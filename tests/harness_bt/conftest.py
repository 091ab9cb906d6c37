"""Traces of the running example (plain, and with recorded camera frames), written once per
session."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt import FakeClock, TaskRunner
from harness_bt.run.settings import RunParts
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


class _Painted:
    """A bridge that hands on the fake runtime's observations with a painted camera image
    (a gradient with the cup as a red square), so a run records real frames."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def poll(self) -> object:
        import dataclasses

        import numpy as np

        from harness_bt.runtime.observation import CameraFrame

        result = self.inner.poll()  # type: ignore[attr-defined]
        out = []
        for obs in result.observations:
            rgb = np.zeros((96, 128, 3), dtype=np.uint8)
            rgb[..., 2] = np.linspace(60, 200, 128, dtype=np.uint8)[None, :]
            rgb[40:60, 50 + obs.timestep % 20:70 + obs.timestep % 20] = (220, 30, 30)
            k = np.array([[100.0, 0, 64], [0, 100.0, 48], [0, 0, 1]])
            frame = CameraFrame(rgb=rgb, depth=None, intrinsics=k,
                                position=np.array([0.0, 0.0, -1.0]),
                                quaternion_wxyz=np.array([1.0, 0, 0, 0]))
            out.append(dataclasses.replace(obs, cameras={"front": frame}))
        return dataclasses.replace(result, observations=tuple(out))


@pytest.fixture(scope="session")
def framed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The slip scenario with camera frames recorded beside its trace (run.frames.tar)."""
    from harness_bt.recording import FrameRecorder, frames_path
    from harness_bt.trace import Trace
    from harness_bt.world import scripted_perception

    path = tmp_path_factory.mktemp("framed") / "run.jsonl"
    clock = FakeClock()
    runtime, _ = example._scenario("slip", clock)
    trace = Trace(path, clock=clock)
    recorder = FrameRecorder(frames_path(path), trace, rate_hz=4.0)
    runner = TaskRunner(
        example.fetch_cup_task(),
        bridge=_Painted(runtime),
        clock=clock,
        skills=example.example_skills(),
        run_id="example",
        trace=trace,
        parts=RunParts(perception=recorder.wrap(scripted_perception)),
    )
    runner.run(max_ticks=500)
    runner.close()
    recorder.close()
    return path
