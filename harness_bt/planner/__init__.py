"""Planners: from an instruction in words to a library task and its parameters
(docs/planning.md).

A :class:`Planner` is given a :class:`PlanRequest` (the instruction, the :class:`Candidate`
tasks with their templates, typed parameters and scene objects, the attempts so far) and
answers a :class:`Decision`: a :class:`Plan` or a :class:`Refusal`. ``templates``
(:class:`TemplatePlanner`, no model) and ``openai`` (:class:`OpenAIPlanner`, an
OpenAI-compatible endpoint) are the ``harness_bt.planners`` entry points
(:func:`planner_registry`); :func:`engage` plans, runs and plans again after an abort."""

from harness_bt.planner.candidates import library_candidates
from harness_bt.planner.engage import Engagement, engage
from harness_bt.planner.model import (
    Attempt,
    Candidate,
    Decision,
    Plan,
    Planner,
    PlanRequest,
    Refusal,
    RefusalCode,
    SceneObject,
)
from harness_bt.planner.openai import OpenAIPlanner
from harness_bt.planner.registry import PlannerOptions, open_planner, planner_registry
from harness_bt.planner.templates import TemplatePlanner

__all__ = ["Attempt", "Candidate", "Decision", "Engagement", "OpenAIPlanner", "Plan",
           "PlanRequest", "Planner", "PlannerOptions", "Refusal", "RefusalCode", "SceneObject",
           "TemplatePlanner", "engage", "library_candidates", "open_planner",
           "planner_registry"]
