"""Chaos runs: a task through a real ZeroMQ runtime process while one fault class is injected,
audited from the runtime's own records (``tests/benchmarks/chaos.py`` prints the table)."""

from runtime_bridge.testing.chaos.processes import PICK_AND_PLACE, Workload
from runtime_bridge.testing.chaos.scenarios import FAULTS, RunOutcome, run_once
from runtime_bridge.testing.chaos.truth import RunTruth, audit, read_exec_log

__all__ = ["FAULTS", "PICK_AND_PLACE", "RunOutcome", "RunTruth", "Workload", "audit",
           "read_exec_log", "run_once"]
