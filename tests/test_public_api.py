"""The exported names are the public surface; this test pins them."""

from __future__ import annotations

import harness_bt
import harness_bt.nodes
import harness_bt.testing


def test_top_level_exports_are_pinned() -> None:
    assert sorted(harness_bt.__all__) == sorted([
        "Backoff", "BreakerBoard", "BridgeError", "CircuitBreaker", "Clock", "CommandError",
        "Compound", "DefinitionError", "EvaluationResult", "EvaluatorRegistry", "Exhaustion",
        "FakeClock", "Final", "GuardContext", "HarnessError", "History", "Ledger", "Lifecycle",
        "On",
        "Outcome", "OutcomeKind", "Parallel", "Phase", "Postcondition", "RunParts",
        "RunnerSettings", "RuntimeBridge",
        "SimClock", "Skill", "SkillContract", "SkillRegistry", "SystemClock", "Task",
        "TaskBudget", "TaskResult", "TaskRunner", "Trace", "TraceReader", "WorldModel",
        "__version__", "on",
    ])
    for name in harness_bt.__all__:
        assert hasattr(harness_bt, name), name


def test_node_and_testing_exports_are_pinned() -> None:
    assert sorted(harness_bt.nodes.__all__) == sorted([
        "Check", "Delay", "DerivePose", "DerivedPose", "Evaluate", "ForceFailure",
        "ForceSuccess", "HarnessNode", "KeepRunningUntilFailure", "NodeManifest", "NodeRegistry",
        "NodeType",
        "Observe", "Port", "RecoveryDone", "RecoveryGate", "RecoveryGuard", "Repeat", "Retry",
        "SkillAction", "Timeout", "WaitFor", "act_and_evaluate", "assign_paths",
        "describe_tree", "iter_nodes", "recover",
    ])
    assert harness_bt.testing.__all__ == ["FakeRuntime", "FakeScene", "Script"]


def test_every_leaf_documents_its_statuses() -> None:
    for name in ("SkillAction", "Evaluate", "Observe", "Check", "WaitFor", "DerivePose", "Retry",
                 "Timeout",
                 "Delay", "Repeat", "ForceSuccess", "ForceFailure", "KeepRunningUntilFailure"):
        doc = getattr(harness_bt.nodes, name).__doc__ or ""
        for word in ("SUCCESS", "FAILURE"):
            assert word in doc, (name, word)


def test_authoring_and_visualisation_exports_are_pinned() -> None:
    import harness_bt.authoring
    import harness_bt.authoring.readers
    import harness_bt.authoring.readers.btcpp
    import harness_bt.expr
    import harness_bt.viz

    assert sorted(harness_bt.authoring.__all__) == sorted([
        "TASK_SUFFIXES", "AtomicSpec", "BudgetSpec", "Checked", "CompoundSpec", "Document",
        "FinalSpec", "HistorySpec", "Library", "LibrarySpec", "Mark", "ParallelSpec", "ParamSpec",
        "Problem", "Registries",
        "Report", "Severity", "SpecError", "TaskSpec", "TransitionSpec", "build_task",
        "build_tree", "check_document", "check_file", "check_spec", "check_tree",
        "compile_guard", "compile_task", "dump_yaml", "export_btcpp", "import_btcpp",
        "load_python",
        "load_spec", "load_task", "neutral_form", "new_task", "task_from_dict", "DictTree",
        "read_document", "read_yaml", "render_schema",
        "spec_from_task", "spec_to_data", "task_schema", "to_neutral", "validate_file",
        "validate_spec",
    ])
    assert sorted(harness_bt.viz.__all__) == sorted([
        "COLOURS", "FORMATS", "GRAPHVIZ_HELP", "STATUSES", "Drawing", "Frame", "NodeState",
        "drawing", "frame_at", "frames", "render", "render_dot", "to_dot", "to_mermaid"])
    assert harness_bt.authoring.readers.__all__ == ["read_document"]
    assert sorted(harness_bt.authoring.readers.btcpp.__all__) == ["DEFAULT_BUDGET", "SUPPORTED",
                                                             "read_btcpp", "task_document"]
    assert sorted(harness_bt.expr.__all__) == sorted([
        "MISSING", "Bound", "Condition", "Each", "ExprError", "Expression", "Function", "Name",
        "compile_condition", "compile_expr", "object_view", "run_env"])
    for module in (harness_bt.authoring, harness_bt.viz, harness_bt.authoring.readers,
                   harness_bt.authoring.readers.btcpp, harness_bt.expr):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_the_documents_package_loads_its_names_on_first_use() -> None:
    """``harness_bt.authoring`` names its exports without importing them: the run-time parts of
    the framework use its low layers (expressions, the chart rules) without the compiler."""
    import harness_bt.authoring

    assert set(dir(harness_bt.authoring)) >= set(harness_bt.authoring.__all__)
    assert harness_bt.authoring.load_task.__module__ == "harness_bt.authoring.loader"
    try:
        harness_bt.authoring.not_a_name  # noqa: B018
    except AttributeError as exc:
        assert "not_a_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_the_seams_for_plug_in_authors_are_pinned() -> None:
    import harness_bt.plugins
    import harness_bt.seams

    assert sorted(harness_bt.seams.__all__) == sorted([
        "Ack", "ActionPart", "Backend", "BackendFactory", "BridgeError", "BridgeNotice",
        "CameraFrame", "CancelBehaviour", "Clock", "Command", "CommandError", "CommandEvent",
        "DefinitionError", "EePose", "EpisodeEnd", "EpisodeRuntime", "EpisodeStart",
        "EvaluationResult", "Evaluator", "EventKind", "Executor", "ExecutorFactory",
        "ExecutorStatus", "ExecutorStep", "FakeClock", "Group", "HarnessError", "HarnessNode",
        "Lifecycle", "NodeManifest", "NodeType", "ObjectUpdate", "Observation", "Perception",
        "PollResult", "Port", "Pose", "Postcondition", "RunOptions", "RuntimeBridge",
        "RuntimeFactory", "RuntimeState", "RuntimeStatus", "Skill", "SkillContract",
        "SystemClock", "Violation", "WorldView",
    ])
    assert sorted(harness_bt.plugins.__all__) == [
        "Group", "Origin", "Registry", "closest", "did_you_mean", "load_group",
        "load_reference"]
    assert [g.value for g in harness_bt.plugins.Group] == [
        "harness_bt.skills", "harness_bt.executors", "harness_bt.evaluators",
        "harness_bt.perception", "harness_bt.nodes", "harness_bt.bridges",
        "harness_bt.backends", "harness_bt.commands", "harness_bt.scenes",
        "harness_bt.predicates", "harness_bt.policies", "harness_bt.planners"]
    for module in (harness_bt.seams, harness_bt.plugins):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_catalogue_exports_are_pinned() -> None:
    import harness_bt.authoring.skill_schema
    import harness_bt.catalogue.entries
    import harness_bt.catalogue.scenes
    import harness_bt.skill_params

    assert sorted(harness_bt.skill_params.__all__) == [
        "ParamInfo", "describe_params", "signature", "unit_of"]
    assert sorted(harness_bt.catalogue.entries.__all__) == sorted([
        "INTERNAL_NODE_TYPES", "EvaluatorEntry", "NodeEntry", "PostconditionEntry",
        "SkillEntry", "Source", "evaluator_entries", "node_entries", "skill_entries",
        "source_of"])
    assert sorted(harness_bt.catalogue.scenes.__all__) == ["SceneEntry", "scene_entries",
                                                           "size_text"]
    assert sorted(harness_bt.authoring.skill_schema.__all__) == ["SKILL_NODES", "add_skill_params",
                                                            "params_schema"]
    for module in (harness_bt.skill_params, harness_bt.catalogue.entries,
                   harness_bt.catalogue.scenes, harness_bt.authoring.skill_schema):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)
