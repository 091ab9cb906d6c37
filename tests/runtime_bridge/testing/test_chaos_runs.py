"""Each fault class, injected into a real runtime process while a harness process runs a
task through it, leaves no double execution, no lost command and no terminal regression, as
audited from the runtime's own records; the task still completes.

The runs use the light workload (seconds each, the chaos harness process);
``tests/benchmarks/chaos.py`` runs the pick-and-place task under every fault class through
``harness run --runtime`` / ``harness resume``, and one such run is here too."""

from __future__ import annotations

import pytest

from runtime_bridge.testing.chaos import FAULTS, PICK_AND_PLACE, run_once
from tests.runtime_bridge.testing.workload import LIGHT

pytestmark = pytest.mark.slow

#: What each fault class must show besides the common properties.
EXPECTED_CHECKS = {
    "runtime_kill": {"restart_reported_in_flight"},
    "harness_kill": {"in_flight_settled"},
    "partition": {"held_on_lease_expiry"},
    "two_harnesses": {"stale_cancel_refused", "stale_dispatch_refused",
                      "no_stale_command_accepted"},
    "hostile": {"hostile_answered"},
    "telemetry_drop": {"telemetry_subscribed", "telemetry_faulted"},
    "telemetry_delay": {"telemetry_subscribed", "telemetry_faulted"},
    "telemetry_silence": {"telemetry_subscribed", "telemetry_silenced", "no_lease_expired"},
}


def assert_sound(outcome) -> None:
    truth = outcome.truth
    assert (truth.double_executions, truth.lost, truth.regressions) == ([], [], []), \
        outcome.to_dict()
    assert truth.dispatched > 0 and truth.runtime_records > 0
    assert outcome.checks["runtime_alive"] and outcome.checks["runtime_clean_exit"]
    failed = sorted(name for name, held in outcome.checks.items() if not held)
    assert failed == [], outcome.to_dict()
    assert EXPECTED_CHECKS.get(outcome.fault, set()) <= set(outcome.checks)


@pytest.mark.parametrize("fault", [f for f in FAULTS if f != "none"])
def test_a_fault_class_leaves_no_double_execution_loss_or_regression(fault, tmp_path):
    outcome = run_once(fault, seed=1, workdir=tmp_path / fault, workload=LIGHT)
    assert_sound(outcome)
    assert (outcome.completed, outcome.outcome) == (True, "done"), outcome.to_dict()
    if fault in ("partition", "harness_kill"):  # the runtime held on its own
        assert outcome.truth.protection_latency_s, outcome.to_dict()


def test_pick_and_place_through_harness_run_survives_a_killed_runtime(tmp_path):
    outcome = run_once("runtime_kill", seed=0, workdir=tmp_path / "pp", workload=PICK_AND_PLACE)
    assert_sound(outcome)
    assert outcome.details["restarted"], outcome.to_dict()
