"""The run loop: a :class:`~harness_bt.run.runner.TaskRunner` ticks a task against a runtime
(:mod:`~harness_bt.run.runner`), checkpoints its progress (:mod:`~harness_bt.run.checkpoint`,
stored in the run record, :mod:`~harness_bt.run.run_record`) so
:mod:`~harness_bt.run.resume` can take a dead run up again, settles UNKNOWN commands with the
runtime (:mod:`~harness_bt.run.reconcile`), and runs a task for several episodes against an
episodic simulator (:mod:`~harness_bt.run.episodes`, what ``harness run`` does). How a run
ended is a :class:`~harness_bt.run.result.TaskResult`.
"""
