"""The exported names are the public surface; this test pins them."""

from __future__ import annotations

import harness_bt
import harness_bt.nodes
import harness_bt.testing


def test_top_level_exports_are_pinned() -> None:
    assert sorted(harness_bt.__all__) == sorted([
        "Backoff", "BreakerBoard", "BridgeError", "CircuitBreaker", "Clock", "CommandError",
        "Compound", "DefinitionError", "EvaluationResult", "EvaluatorRegistry", "Exhaustion",
        "FakeClock", "Final", "GuardContext", "HarnessError", "Ledger", "Lifecycle", "On",
        "Outcome", "OutcomeKind", "Parallel", "Phase", "Postcondition", "RuntimeBridge",
        "SimClock", "Skill", "SkillContract", "SkillRegistry", "SystemClock", "Task",
        "TaskBudget", "TaskResult", "TaskRunner", "Trace", "TraceReader", "WorldModel",
        "__version__", "on",
    ])
    for name in harness_bt.__all__:
        assert hasattr(harness_bt, name), name


def test_node_and_testing_exports_are_pinned() -> None:
    assert sorted(harness_bt.nodes.__all__) == sorted([
        "Check", "Delay", "Evaluate", "ForceFailure", "ForceSuccess", "HarnessNode",
        "KeepRunningUntilFailure", "NodeManifest", "NodeRegistry", "NodeType",
        "Observe", "Port", "RecoveryDone", "RecoveryGate", "RecoveryGuard", "Repeat", "Retry",
        "SkillAction", "Timeout", "WaitFor", "act_and_evaluate", "assign_paths", "build_tree",
        "describe_tree", "iter_nodes", "recover",
    ])
    assert harness_bt.testing.__all__ == ["FakeRuntime", "FakeScene", "Script"]


def test_every_leaf_documents_its_statuses() -> None:
    for name in ("SkillAction", "Evaluate", "Observe", "Check", "WaitFor", "Retry", "Timeout",
                 "Delay", "Repeat", "ForceSuccess", "ForceFailure", "KeepRunningUntilFailure"):
        doc = getattr(harness_bt.nodes, name).__doc__ or ""
        for word in ("SUCCESS", "FAILURE"):
            assert word in doc, (name, word)
