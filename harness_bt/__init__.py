"""harness-bt: traceable robot tasks from intent to physical result.

The orchestration core: a :class:`Task` is a statechart of phases (:class:`Phase`,
:class:`Compound`, :class:`Parallel`, :class:`Final`, transitions with :func:`on`), each atomic
phase ticking a py_trees tree of harness nodes (:mod:`harness_bt.nodes`); a :class:`TaskRunner`
ticks it against a :class:`RuntimeBridge` through the command :class:`Ledger` and traces every
change.
"""

from harness_bt._version import __version__
from harness_bt.budget import Backoff, BreakerBoard, CircuitBreaker, Exhaustion, TaskBudget
from harness_bt.clock import Clock, FakeClock, SimClock, SystemClock
from harness_bt.context import GuardContext, Outcome, OutcomeKind
from harness_bt.errors import BridgeError, CommandError, DefinitionError, HarnessError
from harness_bt.evaluation import EvaluationResult, EvaluatorRegistry
from harness_bt.ledger import Ledger
from harness_bt.run.result import TaskResult
from harness_bt.run.runner import TaskRunner
from harness_bt.run.settings import RunnerSettings, RunParts
from harness_bt.runtime.bridge import RuntimeBridge
from harness_bt.skill import Lifecycle, Postcondition, Skill, SkillContract, SkillRegistry
from harness_bt.task import Compound, Final, History, On, Parallel, Phase, Task, on
from harness_bt.trace import Trace, TraceReader
from harness_bt.world import WorldModel

__all__ = [
    "Backoff",
    "BreakerBoard",
    "BridgeError",
    "CircuitBreaker",
    "Clock",
    "CommandError",
    "Compound",
    "DefinitionError",
    "EvaluationResult",
    "EvaluatorRegistry",
    "Exhaustion",
    "FakeClock",
    "Final",
    "GuardContext",
    "HarnessError",
    "History",
    "Ledger",
    "Lifecycle",
    "On",
    "Outcome",
    "OutcomeKind",
    "Parallel",
    "Phase",
    "Postcondition",
    "RunParts",
    "RunnerSettings",
    "RuntimeBridge",
    "SimClock",
    "Skill",
    "SkillContract",
    "SkillRegistry",
    "SystemClock",
    "Task",
    "TaskBudget",
    "TaskResult",
    "TaskRunner",
    "Trace",
    "TraceReader",
    "WorldModel",
    "__version__",
    "on",
]
