"""What a :class:`~harness_bt.run.runner.TaskRunner` is given besides its task, its runtime and
its clock: :class:`RunnerSettings` (values: ids, the tick period, intervals, the budget) and
:class:`RunParts` (the collaborators a caller may inject instead of the defaults: ledger,
registries, perception, world model, breakers, and the run record and checkpoint of a durable
run). Both are frozen and built once by the caller (``harness run``, the episodes, a test)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness_bt.errors import DefinitionError

if TYPE_CHECKING:
    from harness_bt.budget import BreakerBoard, TaskBudget
    from harness_bt.evaluation import EvaluatorRegistry
    from harness_bt.ledger import Ledger
    from harness_bt.nodes.registry import NodeRegistry
    from harness_bt.run.run_record import RunCheckpoint, RunRecord
    from harness_bt.world import Perception, WorldModel

__all__ = ["RunParts", "RunnerSettings"]


@dataclass(frozen=True, slots=True)
class RunnerSettings:
    """How one run ticks.

    ``task_id`` (default: the task's name), ``robot_id`` and ``seed`` go into every command and
    trace event; ``tick_period_s`` is the time :meth:`TaskRunner.run` sleeps between ticks;
    ``reconcile_interval_s`` how often an UNKNOWN command is queried again;
    ``drain_timeout_s`` how long a stopped run waits for its open commands (None: twice the
    longest stop budget of the skills, plus two reconcile intervals, plus a second);
    ``progress_interval_s`` how often a durable run writes its progress; ``budget`` replaces
    the task's own budget."""

    task_id: str | None = None
    robot_id: str = ""
    seed: int = 0
    tick_period_s: float = 0.05
    reconcile_interval_s: float = 0.5
    drain_timeout_s: float | None = None
    progress_interval_s: float = 1.0
    budget: TaskBudget | None = None

    def __post_init__(self) -> None:
        period = self.tick_period_s
        if not (isinstance(period, int | float) and not isinstance(period, bool)
                and math.isfinite(period) and period > 0):
            raise DefinitionError("INVALID_RUNNER", f"tick_period_s={period!r} must be a "
                                  "positive number of seconds")


@dataclass(frozen=True, slots=True)
class RunParts:
    """The collaborators of one run a caller may give instead of the defaults (None: a fresh
    one). ``run_record`` / ``resume``: the run record of a durable run and the checkpoint it
    resumes from."""

    ledger: Ledger | None = None
    evaluators: EvaluatorRegistry | None = None
    nodes: NodeRegistry | None = None
    perception: Perception | None = None
    world: WorldModel | None = None
    breakers: BreakerBoard | None = None
    run_record: RunRecord | None = None
    resume: RunCheckpoint | None = None
