"""What the harness needs from a runtime, and what a runtime needs from a skills package: the
seams between ``harness_bt`` and the packages that execute commands.

- :mod:`~harness_bt.runtime.bridge`: :class:`~harness_bt.runtime.bridge.RuntimeBridge`, the
  harness's view of any runtime (dispatch, cancel, query, poll);
- :mod:`~harness_bt.runtime.episodes`: :class:`~harness_bt.runtime.episodes.EpisodeRuntime`, a
  runtime over a step-driven simulator, and how ``harness run`` opens one by name;
- :mod:`~harness_bt.runtime.executor`: :class:`~harness_bt.runtime.executor.Executor`, how a
  runtime runs one command step by step (provided by skills packages);
- :mod:`~harness_bt.runtime.faults`: :class:`~harness_bt.runtime.faults.FaultFired`, a fault
  a simulator injected, as the harness's trace records it;
- :mod:`~harness_bt.runtime.observation`: :class:`~harness_bt.runtime.observation.Observation`,
  what a runtime sees.
"""
