"""The executors of this package by skill name: what its ``harness_bt.executors`` entry points
name (one per skill), and a registry of them for a runtime built in code."""

from __future__ import annotations

from harness_bt.runtime.executor import ExecutorFactory, ExecutorRegistry
from skills.executors import skills
from skills.executors.policy import RunPolicyExecutor

__all__ = ["EXECUTORS", "executor_registry"]

#: skill name -> executor class (built with a command; GenManip-paced: 1/30 s per step).
EXECUTORS: dict[str, ExecutorFactory] = {cls.skill: cls for cls in (
    skills.MoveEeToExecutor, skills.ApproachExecutor, skills.GraspExecutor, skills.LiftExecutor,
    skills.ReleaseExecutor, skills.PlaceExecutor, skills.HomeExecutor, RunPolicyExecutor)}


def executor_registry() -> ExecutorRegistry:
    """This package's executors, as a runtime's executor factory (an unknown skill is refused
    with a :class:`~harness_bt.errors.CommandError`)."""
    return ExecutorRegistry(EXECUTORS, origin="skills.executors")
