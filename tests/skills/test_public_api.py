"""The exported names of the skills package and the in-process runtime are pinned."""

from __future__ import annotations

import runtime_bridge.inproc as inproc
import skills
import skills.executors as executors
import skills.perception as perception


def test_skills_exports() -> None:
    assert sorted(skills.__all__) == ["SKILLS", "colour_perception", "evaluator_registry",
                                      "executor_registry", "skill_registry"]
    assert sorted(perception.__all__) == [
        "BUILTIN_OBJECTS", "ColourPerception", "ColourRange", "Detection", "KnownObject",
        "back_project", "colour_perception", "fit_box"]
    assert sorted(executors.__all__) == sorted([
        "CONTROL_PERIOD_S", "EXECUTORS", "ApproachExecutor", "CartesianMove", "Dwell", "Fingers",
        "GraspExecutor", "HomeExecutor", "JointMove", "LiftExecutor", "MoveEeToExecutor",
        "PlaceExecutor", "ReleaseExecutor", "Segment", "SegmentExecutor", "SegmentStep",
        "executor_registry"])
    for module in (skills, perception, executors):
        assert all(hasattr(module, name) for name in module.__all__)


def test_inproc_exports() -> None:
    assert sorted(inproc.__all__) == ["DEFAULT_CAMERAS", "InProcRuntime", "open_runtime"]
    assert all(hasattr(inproc, name) for name in inproc.__all__)


def test_every_executor_has_a_contract_and_back() -> None:
    assert set(executors.EXECUTORS) == {s.name for s in skills.SKILLS}
