"""The planner package's exported names are its public surface; this test pins them."""

from __future__ import annotations

import harness_bt.planner


def test_planner_exports_are_pinned() -> None:
    assert sorted(harness_bt.planner.__all__) == sorted([
        "Attempt", "Candidate", "Decision", "Engagement", "OpenAIPlanner", "Plan",
        "PlanRequest", "Planner", "PlannerOptions", "Refusal", "RefusalCode", "SceneObject",
        "TemplatePlanner", "engage", "library_candidates", "open_planner", "planner_registry"])
    for name in harness_bt.planner.__all__:
        assert hasattr(harness_bt.planner, name), name
