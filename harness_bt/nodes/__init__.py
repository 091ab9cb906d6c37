"""Behaviour-tree nodes of the harness (py_trees behaviours) and the node-type registry.

Leaves: :class:`SkillAction`, :class:`Evaluate`, :class:`Observe`, :class:`Check`,
:class:`WaitFor`, :class:`DerivePose` (poses as data). Decorators: :class:`Retry`, and the
flow decorators on the run's clock (:class:`Timeout`, :class:`Delay`, :class:`Repeat`,
:class:`ForceSuccess`, :class:`ForceFailure`, :class:`KeepRunningUntilFailure`). Idioms
(plain functions returning subtrees): :func:`recover`, :func:`act_and_evaluate`. Each node's
docstring says what its SUCCESS, FAILURE and RUNNING mean; each has a :class:`NodeManifest`
(ports, description) for files and drawings.
"""

from harness_bt.nodes.base import (
    HarnessNode,
    NodeManifest,
    NodeType,
    Port,
    assign_paths,
    iter_nodes,
)
from harness_bt.nodes.conditions import Check, Observe, WaitFor
from harness_bt.nodes.decorators import RecoveryDone, RecoveryGate, RecoveryGuard, Retry
from harness_bt.nodes.evaluate import Evaluate
from harness_bt.nodes.flow import (
    Delay,
    ForceFailure,
    ForceSuccess,
    KeepRunningUntilFailure,
    Repeat,
    Timeout,
)
from harness_bt.nodes.idioms import act_and_evaluate, recover
from harness_bt.nodes.poses import DerivedPose, DerivePose
from harness_bt.nodes.registry import NodeRegistry, describe_tree
from harness_bt.nodes.skill_action import SkillAction

__all__ = [
    "Check",
    "Delay",
    "DerivePose",
    "DerivedPose",
    "Evaluate",
    "ForceFailure",
    "ForceSuccess",
    "HarnessNode",
    "KeepRunningUntilFailure",
    "NodeManifest",
    "NodeRegistry",
    "NodeType",
    "Observe",
    "Port",
    "RecoveryDone",
    "RecoveryGate",
    "RecoveryGuard",
    "Repeat",
    "Retry",
    "SkillAction",
    "Timeout",
    "WaitFor",
    "act_and_evaluate",
    "assign_paths",
    "describe_tree",
    "iter_nodes",
    "recover",
]
