"""Evaluation at scale: many episodes of one or more task versions on local worker processes,
a Ray cluster or a GenManip server's workers, each finished episode recorded once in an SQLite
results store; reports with Wilson intervals and paired comparisons (exact McNemar).

``harness eval`` and ``harness compare`` (:mod:`harness_bt.cli.eval`) use
:func:`run_evaluation`, which says what it reuses of a store (:mod:`~harness_bt.eval.reuse`);
reports read only the store and list every episode (:mod:`~harness_bt.eval.report`,
:mod:`~harness_bt.eval.listing`); two evaluation folders are compared from their stores
(:mod:`~harness_bt.eval.folders`). See docs/evaluating.md.
"""

from harness_bt.eval.driver import EvalRun, evaluate
from harness_bt.eval.plan import EpisodeKey, EpisodeSpec, condition_label, task_digest
from harness_bt.eval.session import EvalConfig, EvalResult, run_evaluation
from harness_bt.eval.store import ResultsStore

_STATS = ("Comparison", "compare_paired", "summarize", "wilson")


def __getattr__(name: str) -> object:
    """The statistics import scipy: only when asked for (the CLI starts faster)."""
    if name in _STATS:
        from harness_bt.eval import stats

        return getattr(stats, name)
    raise AttributeError(f"module 'harness_bt.eval' has no attribute {name!r}")

__all__ = [
    "Comparison",
    "EpisodeKey",
    "EpisodeSpec",
    "EvalConfig",
    "EvalResult",
    "EvalRun",
    "ResultsStore",
    "compare_paired",
    "condition_label",
    "evaluate",
    "run_evaluation",
    "summarize",
    "task_digest",
    "wilson",
]
