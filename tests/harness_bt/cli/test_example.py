"""``harness example <scenario>`` runs the running example and reports it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.testing.example import SCENARIOS, run_example


def test_every_scenario_ends_the_way_it_should() -> None:
    results = {s: run_example(s).result for s in SCENARIOS}
    ends = {s: (r.outcome, r.reason) for s, r in results.items()}
    assert ends == {
        "clean": ("succeeded", "done"), "slip": ("succeeded", "done"),
        "occlusion": ("succeeded", "done"), "duplicates": ("succeeded", "done"),
        "no-stop": ("aborted", "aborted_budget_exhausted"),
        "budget": ("aborted", "aborted_budget_exhausted"),
    }


def test_cli_prints_the_outcome_and_writes_the_trace(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    assert main(["example", "budget", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "aborted (aborted_budget_exhausted)" in out and "IK_FAILED" in out
    assert trace.read_text().count("\n") > 50
    assert main(["example", "slp"]) == 1
    assert "did you mean 'slip'?" in capsys.readouterr().err
