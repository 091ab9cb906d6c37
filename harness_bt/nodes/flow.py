"""Flow decorators on the run's clock: :class:`Timeout`, :class:`Delay`, :class:`Repeat`,
:class:`ForceSuccess`, :class:`ForceFailure`, :class:`KeepRunningUntilFailure` (the common
decorators of BehaviorTree.CPP, so its trees import one to one).

py_trees' own ``Timeout`` reads the wall clock; these read the injected clock
(``context.now``), so a fake clock drives them in tests like everything else.
"""

from __future__ import annotations

import math
from typing import Any

import py_trees
from py_trees.common import Status

from harness_bt.context import OutcomeKind
from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import GatedDecorator, HarnessNode, NodeManifest, Port

__all__ = ["Delay", "ForceFailure", "ForceSuccess", "KeepRunningUntilFailure", "Repeat",
           "Timeout"]

Behaviour = py_trees.behaviour.Behaviour
_CHILD = Port("child", "tree", True)


def _seconds(kind: str, name: str, value: Any, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise DefinitionError(
            "INVALID_NODE", f"{kind} {name!r}: seconds={value!r} must be a "
            f"{'non-negative' if allow_zero else 'positive'} finite number", node_path=name)
    return float(value)


class Timeout(GatedDecorator):
    """Cut the child short when it has been running ``seconds`` (BT.CPP ``Timeout``).

    - **RUNNING**: the child is running and time is left.
    - **SUCCESS**: the child succeeded in time.
    - **FAILURE**: the child failed (its outcome passes through), or the time ran out: the
      child is halted (a running command is cancelled) and the outcome is ``failed`` with
      reason ``TIMEOUT``.
    """

    MANIFEST = NodeManifest(
        "timeout", "decorator", "Halt and fail the child after `seconds` on the run's clock.",
        (_CHILD, Port("seconds", "float", True, description="longest run of the child")),
        {"SUCCESS": "the child succeeded in time", "FAILURE": "the child failed, or TIMEOUT",
         "RUNNING": "the child is running"},
    )

    def __init__(self, name: str, child: Behaviour, *, seconds: float) -> None:
        super().__init__(name=name, child=child)
        self.seconds = _seconds("timeout", name, seconds)
        self._deadline = math.inf

    def params(self) -> dict[str, Any]:
        return {"seconds": self.seconds}

    def initialise(self) -> None:
        self._deadline = self.context.now + self.seconds

    def gate(self) -> Status | None:
        if self.context.now < self._deadline:
            return None
        return self.fail(OutcomeKind.FAILED, "TIMEOUT", seconds=self.seconds)


class Delay(GatedDecorator):
    """Wait ``seconds`` before ticking the child the first time (BT.CPP ``Delay``).

    - **RUNNING**: waiting, or the child is running.
    - **SUCCESS** / **FAILURE**: as the child.
    """

    MANIFEST = NodeManifest(
        "delay", "decorator", "Wait `seconds`, then tick the child.",
        (_CHILD, Port("seconds", "float", True, description="wait before the first tick")),
        {"SUCCESS": "the child succeeded", "FAILURE": "the child failed",
         "RUNNING": "waiting, or the child is running"},
    )

    def __init__(self, name: str, child: Behaviour, *, seconds: float) -> None:
        super().__init__(name=name, child=child)
        self.seconds = _seconds("delay", name, seconds, allow_zero=True)
        self._start_at = math.inf

    def params(self) -> dict[str, Any]:
        return {"seconds": self.seconds}

    def initialise(self) -> None:
        self._start_at = self.context.now + self.seconds

    def gate(self) -> Status | None:
        return Status.RUNNING if self.context.now < self._start_at else None


class Repeat(HarnessNode, py_trees.decorators.Repeat):
    """Run the child ``times`` times in a row, each to success (BT.CPP ``Repeat``);
    ``times=-1`` repeats until it fails.

    - **RUNNING**: the child is running, or succeeded fewer than ``times`` times.
    - **SUCCESS**: the ``times``-th success.
    - **FAILURE**: the child failed (its outcome passes through).
    """

    MANIFEST = NodeManifest(
        "repeat", "decorator", "Run the child `times` times, each to success.",
        (_CHILD, Port("times", "int", True, description="successes needed; -1: forever")),
        {"SUCCESS": "the child succeeded `times` times", "FAILURE": "the child failed",
         "RUNNING": "the child is running or has runs to go"},
    )

    def __init__(self, name: str, child: Behaviour, *, times: int) -> None:
        if isinstance(times, bool) or not isinstance(times, int) or (times < 1 and times != -1):
            raise DefinitionError("INVALID_NODE", f"repeat {name!r}: times={times!r} must be "
                                  "an int >= 1 (or -1: until it fails)", node_path=name)
        super().__init__(name=name, child=child, num_success=times)

    def params(self) -> dict[str, Any]:
        return {"times": self.num_success}


class ForceSuccess(HarnessNode, py_trees.decorators.FailureIsSuccess):
    """The child's failure counts as success (BT.CPP ``ForceSuccess``).

    - **RUNNING**: the child is running.
    - **SUCCESS**: the child ended, either way.
    - **FAILURE**: never.
    """

    MANIFEST = NodeManifest(
        "force_success", "decorator", "A failure of the child counts as success.", (_CHILD,),
        {"SUCCESS": "the child ended", "RUNNING": "the child is running", "FAILURE": "never"},
    )

    def __init__(self, name: str, child: Behaviour) -> None:
        super().__init__(name=name, child=child)


class ForceFailure(HarnessNode, py_trees.decorators.SuccessIsFailure):
    """The child's success counts as failure (BT.CPP ``ForceFailure``).

    - **RUNNING**: the child is running.
    - **FAILURE**: the child ended; after a success the outcome is ``failed`` with reason
      ``FORCED_FAILURE``.
    - **SUCCESS**: never.
    """

    MANIFEST = NodeManifest(
        "force_failure", "decorator", "A success of the child counts as failure.", (_CHILD,),
        {"FAILURE": "the child ended", "RUNNING": "the child is running", "SUCCESS": "never"},
    )

    def __init__(self, name: str, child: Behaviour) -> None:
        super().__init__(name=name, child=child)

    def update(self) -> Status:
        if self.decorated.status == Status.SUCCESS:
            return self.fail(OutcomeKind.FAILED, "FORCED_FAILURE")
        return self.decorated.status


class KeepRunningUntilFailure(HarnessNode, py_trees.decorators.SuccessIsRunning):
    """Run the child again after each success until it fails (BT.CPP
    ``KeepRunningUntilFailure``).

    - **RUNNING**: the child is running, or it succeeded (it runs again next tick).
    - **FAILURE**: the child failed (its outcome passes through).
    - **SUCCESS**: never.
    """

    MANIFEST = NodeManifest(
        "keep_running_until_failure", "decorator", "Run the child again until it fails.",
        (_CHILD,),
        {"RUNNING": "the child is running or succeeded", "FAILURE": "the child failed",
         "SUCCESS": "never"},
    )

    def __init__(self, name: str, child: Behaviour) -> None:
        super().__init__(name=name, child=child)
