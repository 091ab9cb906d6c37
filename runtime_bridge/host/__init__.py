"""The executor host: runs commands on a robot or simulator, one control step at a time.

Shared by the in-process runtime and the ZeroMQ runtime server. The host

- takes commands in (:mod:`~runtime_bridge.host.intake`): submit, cancel and heartbeat,
  idempotent per command id, fenced by control epochs, with pre-emption across epochs;
- runs the control step (:mod:`~runtime_bridge.host.step`): protects locally (leases, start
  budgets, execution and stop timeouts), steps every active executor, merges their shares
  into one action (:mod:`~runtime_bridge.host.merge`), settles the results into events with a
  per-command increasing ``seq``, steps the :class:`~harness_bt.runtime.backend.Backend`;
- journals every change before it acts on it or answers about it
  (:mod:`~runtime_bridge.host.batching` over a :mod:`~runtime_bridge.host.record_store`), so a
  restarted host answers for everything it acknowledged, and reports what was active when it
  died as ABORTED with reason ``RUNTIME_RESTARTED``, never running it again;
- lets requests in during a step without starving the control loop
  (:mod:`~runtime_bridge.host.giveway`).

Its state and records are :mod:`~runtime_bridge.host.core` and
:mod:`~runtime_bridge.host.record`. Time comes from an injected
:class:`~harness_bt.clock.Clock`; tests drive ``step()`` with a fake clock.
"""

from runtime_bridge.host.core import PlanOn
from runtime_bridge.host.giveway import GiveWay
from runtime_bridge.host.intake import Intake
from runtime_bridge.host.step import ControlStep
from runtime_bridge.host.types import EventBatch, HeartbeatResult, HostConfig, StepResult

__all__ = ["EventBatch", "ExecutorHost", "GiveWay", "HeartbeatResult", "HostConfig", "PlanOn",
           "StepResult"]


class ExecutorHost(Intake, ControlStep):
    """Takes commands in and runs them, one control step at a time (see the package
    docstring). Thread-safe: the control loop may call :meth:`step` while another thread
    submits, cancels and queries (only one thread may step). A thread that answers requests
    wraps each one in ``with host.answering():``; a step gives way to it between two commands
    (:attr:`scheduler`, :mod:`runtime_bridge.host.giveway`)."""
