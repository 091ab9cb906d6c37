"""Skill contracts (what a command means) and executors (how it runs, step by step) for a
Franka Panda with its hand: ``move_ee_to``, ``approach``, ``grasp``, ``lift``, ``release``,
``place``, ``home``; colour perception (``observe``) and the evaluators ``grasped``,
``placed_on``, ``joints_at``.

Harness side: :mod:`skills.contracts` (registered as ``harness_bt.skills`` entry points),
:mod:`skills.evaluators` (``harness_bt.evaluators``), :mod:`skills.perception`
(``harness_bt.perception``). Runtime side: :mod:`skills.executors` (``harness_bt.executors``).
"""

from skills.contracts import SKILLS, skill_registry
from skills.evaluators import evaluator_registry
from skills.executors import executor_registry
from skills.perception import colour_perception

__all__ = ["SKILLS", "colour_perception", "evaluator_registry", "executor_registry",
           "skill_registry"]
