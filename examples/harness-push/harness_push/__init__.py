"""harness-push: a skills package of its own for harness-bt, with one skill, ``push``.

Harness side: :mod:`harness_push.contract` (the ``harness_bt.skills`` entry point ``push``)
and :mod:`harness_push.evaluator` (``harness_bt.evaluators``: ``pushed_to``). Runtime side:
:mod:`harness_push.executor` (``harness_bt.executors``: ``push``). For the built-in simulator:
the scene ``push_cube`` (``harness_bt.scenes``). The task ``tasks/push_cube.yaml`` uses the
skill beside the built-in ``home``. docs/extending.md walks through it.
"""

from harness_push.contract import PUSH, PushParams
from harness_push.evaluator import pushed_to
from harness_push.executor import PushExecutor

__all__ = ["PUSH", "PushExecutor", "PushParams", "pushed_to"]
