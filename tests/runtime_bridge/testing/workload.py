"""A light chaos workload for the test suite: three phases of one ``wait`` command each, with
retries (the second command, the target of the mid-command faults, outlasts the lease), run
against the kinematic backend and the test executors at 100 Hz, so a chaos run takes seconds,
not the pick-and-place task's half minute."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from harness_bt.authoring.neutral import task_from_dict
from harness_bt.skill import Lifecycle, Skill, SkillRegistry
from harness_bt.task import Task
from runtime_bridge.testing.chaos import Workload


class WaitParams(BaseModel):
    steps: int = 25


def _phase(pid: str, target: str, steps: int = 20) -> dict[str, Any]:
    return {"id": pid,
            "tree": {"type": "retry", "name": f"{pid}_retry", "attempts": 6,
                     "backoff": {"base_s": 0.3, "cap_s": 1.0},
                     "child": {"type": "skill_action", "name": f"{pid}_wait", "skill": "wait",
                               "params": {"steps": steps}}},
            "transitions": [{"event": "succeeded", "target": target},
                            {"event": "failed", "target": "aborted_failed"},
                            {"event": "unknown", "target": "aborted_unknown"},
                            {"event": "budget_exhausted", "target": "aborted_budget_exhausted"}]}


def light_task() -> tuple[Task, SkillRegistry]:
    skills = SkillRegistry([Skill(
        "wait", WaitParams, resources=("arm",),
        lifecycle=Lifecycle(start_within_ms=3_000, execution_timeout_ms=10_000,
                            stop_timeout_ms=1_000, retry_safe=True),
        description="wait a number of control steps (the test executors' wait)")])
    task = task_from_dict({
        "name": "light", "initial": "one", "budget": {"max_retries": 15, "max_time_s": 60},
        "phases": [_phase("one", "two"), _phase("two", "three", steps=120), _phase("three", "done"),
                   {"id": "done", "kind": "final"},
                   {"id": "aborted_failed", "kind": "final"},
                   {"id": "aborted_unknown", "kind": "final"},
                   {"id": "aborted_budget_exhausted", "kind": "final"}]})
    return task, skills


LIGHT = Workload(task="tests.runtime_bridge.testing.workload:light_task", backend="kinematic",
                 executors="tests.runtime_bridge.executors:factory", control_hz=100.0,
                 lease_ms=500.0, max_time_s=45.0, kill_at=2, settle_s=0.1, tick_s=0.02,
                 ready_timeout_s=30.0)
