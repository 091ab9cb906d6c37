"""Internal node types (the parts of the ``recover`` idiom, the always-RUNNING stub) are
built from documents as before, but users are never offered them: not in the known names
of an error, not as a did-you-mean suggestion."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.authoring import check_file
from harness_bt.errors import DefinitionError
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.testing.example import example_skills

INTERNAL = ["recovery_done", "recovery_gate", "recovery_guard", "running"]


def test_the_registry_lists_every_type_but_the_internal_ones() -> None:
    registry = NodeRegistry()
    assert sorted(n for n in registry.names() if registry.hidden(n)) == INTERNAL
    assert not set(INTERNAL) & set(registry.listed())
    assert {"sequence", "recover", "success", "failure", "retry"} <= set(registry.listed())
    assert registry.get("running").manifest.to_dict()["internal"] is True
    assert "internal" not in registry.get("sequence").manifest.to_dict()


def test_an_unknown_type_neither_lists_nor_suggests_an_internal_one() -> None:
    with pytest.raises(DefinitionError) as err:
        NodeRegistry().get("recovery_gat")
    assert err.value.message.startswith("unknown node type 'recovery_gat'; known: "
                                        "act_and_evaluate, check, delay")
    known = err.value.message.split("; known: ")[1].split(";")[0].split(", ")
    assert known == NodeRegistry().listed() and not set(INTERNAL) & set(known)
    assert err.value.message.endswith("did you mean 'recover'?")


def test_a_document_error_lists_no_internal_type_but_still_builds_one(tmp_path: Path) -> None:
    task = tmp_path / "t.yaml"
    body = ("name: t\nphases:\n  - id: work\n    tree: {type: %s, name: n}\n    transitions:\n"
            "      - {event: succeeded, target: done}\n      - {event: failed, target: "
            "aborted_work}\n  - {id: done, kind: final}\n  - {id: aborted_work, kind: final}\n")
    task.write_text(body % "runing")
    (problem,) = check_file(task, skills=example_skills()).report.problems
    assert problem.code == "UNKNOWN_NODE_TYPE"
    known = problem.message.split("; known: ")[1].split(";")[0].split(", ")
    assert not set(INTERNAL) & set(known)
    task.write_text(body % "running")  # still a valid document
    assert check_file(task, skills=example_skills()).report.ok
