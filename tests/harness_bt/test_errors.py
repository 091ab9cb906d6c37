"""Errors cross process boundaries whole: a worker's error reaches its parent with every
field (``pickle`` here is the standard library's own round trip of our own objects)."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from harness_bt.errors import BridgeError, DefinitionError, HarnessError
from harness_bt.problems import Problem, Report, SpecError


def _raise(error: HarnessError) -> None:
    raise error


@pytest.mark.parametrize("error", [
    HarnessError("BOOM", "it broke", fix="do not", details={"k": [1, 2]}),
    DefinitionError("LAYOUT_FAILED", "no room", where="scene.yaml:3:1"),
    BridgeError("TIMEOUT", "no answer", command_id="c#1", node_path="a/b"),
])
def test_an_error_pickles_with_every_field(error: HarnessError) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert back.to_dict() == error.to_dict()


def test_a_spec_error_keeps_its_report() -> None:
    report = Report()
    report.add(Problem("UNKNOWN_SKILL", "unknown skill 'grap'", "task.yaml:4:7"))
    error = SpecError("task.yaml", report)
    back = pickle.loads(pickle.dumps(error))
    assert str(back) == str(error) and back.report.problems == error.report.problems


def test_an_error_raised_in_a_worker_process_reaches_the_parent() -> None:
    with ProcessPoolExecutor(1) as pool:
        future = pool.submit(_raise, DefinitionError("NO_SCENE", "no scene", fix="give one"))
        with pytest.raises(DefinitionError) as info:
            future.result(timeout=60)
    assert info.value.code == "NO_SCENE" and info.value.fix == "give one"
