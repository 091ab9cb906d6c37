"""The evaluation package's exported names are pinned; the statistics (scipy) load only when
one of their names is used, so ``harness`` starts without them."""

from __future__ import annotations

import subprocess
import sys

import harness_bt.eval


def test_eval_exports_are_pinned() -> None:
    assert sorted(harness_bt.eval.__all__) == sorted([
        "Comparison", "EpisodeKey", "EpisodeSpec", "EvalConfig", "EvalResult", "EvalRun",
        "ResultsStore", "compare_paired", "condition_label", "evaluate", "run_evaluation",
        "summarize", "task_digest", "wilson"])
    for name in harness_bt.eval.__all__:
        assert hasattr(harness_bt.eval, name), name


def test_the_command_line_does_not_import_scipy_to_start() -> None:
    code = ("import sys, harness_bt.cli, harness_bt.eval; "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
