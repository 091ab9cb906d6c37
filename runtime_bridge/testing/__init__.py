"""Test rigs for runtimes, for the test suite and the benchmarks; nothing in the product imports
them (``tests/test_layers.py`` checks it).

- :mod:`~runtime_bridge.testing.fault_proxy`: a ZeroMQ proxy between a bridge and a runtime that
  drops, delays, duplicates, reorders, corrupts or partitions messages on command;
- :mod:`~runtime_bridge.testing.telemetry_faults`: the same for the telemetry stream (XSUB/XPUB);
- :mod:`~runtime_bridge.testing.chaos`: chaos runs, a task through a real runtime process while
  one fault class is injected, audited from the runtime's own records.
"""
