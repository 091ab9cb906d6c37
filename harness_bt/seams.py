"""The seams a plug-in author needs, in one place (pinned by ``tests/test_public_api.py``).

A package that extends harness-bt names its extensions in its own entry-point groups (see
:mod:`harness_bt.plugins`) and builds them from these types:

- a **skill** (``harness_bt.skills``): a :class:`SkillContract`, usually a :class:`Skill` with
  a params model, resources, a :class:`Lifecycle`, a check returning :class:`Violation` s and
  :class:`Postcondition` s;
- its **executor** (``harness_bt.executors``, runtime side): an :data:`ExecutorFactory`
  building an :class:`Executor` from a :class:`Command`; each control step it sees an
  :class:`Observation` and answers an :class:`ExecutorStep` (:class:`ExecutorStatus`, an
  :class:`ActionPart`, progress);
- an **evaluator** (``harness_bt.evaluators``): ``(Postcondition, Observation, WorldView) ->``
  :class:`EvaluationResult` (SUCCEEDED / FAILED / UNKNOWN, with evidence);
- a **perception** (``harness_bt.perception``): a factory of a :data:`Perception`, which turns
  an :class:`Observation` into :class:`ObjectUpdate` s;
- a **node type** (``harness_bt.nodes``): a :class:`NodeType` (a factory and its
  :class:`NodeManifest` of :class:`Port` s), leaves built on :class:`HarnessNode`;
- a **bridge** (``harness_bt.bridges``): a :data:`RuntimeFactory` opening an
  :class:`EpisodeRuntime` (a :class:`RuntimeBridge`) for :class:`RunOptions`;
- a **backend** (``harness_bt.backends``): a :data:`BackendFactory` of a :class:`Backend`.

Time is injected (:class:`Clock`); every deliberate error is a :class:`HarnessError`
(:class:`DefinitionError` at load time, :class:`CommandError` at run time,
:class:`BridgeError` in a transport).
"""

from harness_bt.clock import Clock, FakeClock, SystemClock
from harness_bt.errors import BridgeError, CommandError, DefinitionError, HarnessError
from harness_bt.evaluation import EvaluationResult, Evaluator
from harness_bt.ledger import Command, CommandEvent, EventKind
from harness_bt.nodes.base import HarnessNode, NodeManifest, NodeType, Port
from harness_bt.plugins import Group
from harness_bt.runtime.backend import Backend, BackendFactory
from harness_bt.runtime.bridge import (
    Ack,
    BridgeNotice,
    PollResult,
    RuntimeBridge,
    RuntimeState,
    RuntimeStatus,
)
from harness_bt.runtime.episodes import (
    EpisodeEnd,
    EpisodeRuntime,
    EpisodeStart,
    RunOptions,
    RuntimeFactory,
)
from harness_bt.runtime.executor import (
    ActionPart,
    Executor,
    ExecutorFactory,
    ExecutorStatus,
    ExecutorStep,
)
from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from harness_bt.skill import (
    CancelBehaviour,
    Lifecycle,
    Postcondition,
    Skill,
    SkillContract,
    Violation,
)
from harness_bt.world import ObjectUpdate, Perception, Pose, WorldView

__all__ = [
    "Ack",
    "ActionPart",
    "Backend",
    "BackendFactory",
    "BridgeError",
    "BridgeNotice",
    "CameraFrame",
    "CancelBehaviour",
    "Clock",
    "Command",
    "CommandError",
    "CommandEvent",
    "DefinitionError",
    "EePose",
    "EpisodeEnd",
    "EpisodeRuntime",
    "EpisodeStart",
    "EvaluationResult",
    "Evaluator",
    "EventKind",
    "Executor",
    "ExecutorFactory",
    "ExecutorStatus",
    "ExecutorStep",
    "FakeClock",
    "Group",
    "HarnessError",
    "HarnessNode",
    "Lifecycle",
    "NodeManifest",
    "NodeType",
    "ObjectUpdate",
    "Observation",
    "Perception",
    "PollResult",
    "Port",
    "Pose",
    "Postcondition",
    "RunOptions",
    "RuntimeBridge",
    "RuntimeFactory",
    "RuntimeState",
    "RuntimeStatus",
    "Skill",
    "SkillContract",
    "SystemClock",
    "Violation",
    "WorldView",
]
