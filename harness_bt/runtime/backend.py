"""The backend seam: a robot or a simulator that a runtime drives, one control step at a time.

Runtimes (``runtime_bridge``: the in-process runtime, the ZeroMQ runtime server) host executors
and step a :class:`Backend`. Backends are found by name in the ``harness_bt.backends``
entry-point group; each entry point is a :data:`BackendFactory`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from harness_bt.plugins import Group, Registry
from harness_bt.runtime.observation import Observation

__all__ = ["Backend", "BackendFactory", "backend_registry"]


@runtime_checkable
class Backend(Protocol):
    """A robot or simulator a runtime drives (Franka + Panda hand, GenManip actions).

    ``reset`` starts an episode and returns its first observation; ``step`` applies one action
    dict (see :mod:`runtime_bridge.host.merge`) and returns the next observation. A simulator
    that ends an episode inside a step returns the next episode's first observation (``reset``
    True); one with no episode left raises ``BridgeError`` code ``EPISODES_DONE``. Holding is
    an ordinary action (zero ee delta, identity rotation, the last gripper target), so a backend
    needs nothing else for it. ``control_period_s`` is the time one step stands for.
    """

    control_period_s: float

    def reset(self) -> Observation: ...

    def step(self, action: Mapping[str, Any]) -> Observation: ...

    def close(self) -> None: ...


#: Builds a backend stepping ``dt`` seconds per control step: ``factory(dt=..., **options)``
#: (``options``: what the backend takes, e.g. ``task`` and ``seed`` for the built-in simulator,
#: ``url`` for a GenManip server).
BackendFactory = Callable[..., Backend]


def backend_registry(*, entry_points: bool = False) -> Registry[BackendFactory]:
    """Backend factories by name;
    with ``entry_points=True`` filled from the ``harness_bt.backends`` entry points."""
    registry: Registry[BackendFactory] = Registry("backend")
    if entry_points:
        registry.load(Group.BACKENDS)
    return registry
