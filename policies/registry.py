"""Servable policies by name: the ``harness_bt.policies`` entry-point group.

An entry point names a :class:`PolicyKind`: a description, and ``build(settings)`` returning
the per-connection factory :class:`~policies.server.PolicyServer` calls once per
client. :class:`PolicySettings` are the knobs every served policy takes (the imperfection of
the scripted ones and their seed); a policy may ignore the ones it has no use for, and says
which it honours in ``knobs``. A package adds a policy by naming its own ``PolicyKind`` in its
``setup.cfg``::

    [options.entry_points]
    harness_bt.policies =
        wave = my_package.policies:WAVE
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.plugins import Group, Registry
from policies.server import PolicyFactory
from policies.spec import observation_spec

__all__ = ["ACTION_FORMAT", "DEFAULT_POLICY", "PolicyKind", "PolicySettings", "default_policy",
           "policy_metadata", "policy_registry"]

#: What ``harness policy serve`` serves without ``--policy`` (when installed).
DEFAULT_POLICY = "pick"

#: What the built-in policies answer (sent in their metadata).
ACTION_FORMAT: dict[str, Any] = {
    "actions": "float32 (H, 7): dx, dy, dz (metres of end-effector motion per control step, "
               "world frame, each step <= 0.01 m), rx, ry, rz (an axis-angle turn of the hand "
               "about world axes, <= 5 degrees a step), gripper (0 open, 1 closed)",
    "done": "bool, optional: the task is finished once these actions have run",
    "columns": ["dx", "dy", "dz", "rx", "ry", "rz", "gripper"],
    "max_step_m": 0.01,
    "max_step_rad": 0.0873,
}


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """``misgrasp_rate``: per session, the probability that the policy grasps beside its
    target without noticing; ``pose_noise_m``: the standard deviation (metres) of the error on
    the position it perceives, drawn once per session; ``seed``: the root of every session's
    randomness (a session's draws depend on the seed and its session id only)."""

    misgrasp_rate: float = 0.0
    pose_noise_m: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        rate = self.misgrasp_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or \
                not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
            raise DefinitionError("BAD_POLICY_SETTING", f"misgrasp_rate={rate!r} is not a "
                                  "probability", fix="use a number between 0 and 1, e.g. 0.3")
        noise = self.pose_noise_m
        if isinstance(noise, bool) or not isinstance(noise, int | float) or \
                not (math.isfinite(noise) and 0.0 <= noise <= 0.1):
            raise DefinitionError("BAD_POLICY_SETTING", f"pose_noise_m={noise!r} is not a "
                                  "standard deviation in 0..0.1 m",
                                  fix="use metres, e.g. 0.005 for 5 mm")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise DefinitionError("BAD_POLICY_SETTING", f"seed={self.seed!r} is not a "
                                  "non-negative integer", fix="use e.g. 0")

    def to_dict(self) -> dict[str, Any]:
        return {"misgrasp_rate": float(self.misgrasp_rate),
                "pose_noise_m": float(self.pose_noise_m), "seed": int(self.seed)}


@dataclass(frozen=True, slots=True)
class PolicyKind:
    """One servable policy. ``build(settings)`` returns the factory of one connection's
    policy instance; ``knobs`` names the :class:`PolicySettings` fields it honours;
    ``observation_spec(factory)`` the observation it reads (:mod:`policies.spec`; default:
    the format every built-in policy reads)."""

    description: str
    build: Callable[[PolicySettings], PolicyFactory]
    knobs: tuple[str, ...] = ("misgrasp_rate", "pose_noise_m", "seed")
    action_format: dict[str, Any] | None = None
    observation_spec: Callable[[PolicyFactory], dict[str, Any]] | None = None


def _validate(name: str, item: PolicyKind) -> None:
    if not isinstance(item, PolicyKind) or not callable(item.build):
        raise DefinitionError("INVALID_POLICY", f"policy {name!r} is a "
                              f"{type(item).__name__}, not a "
                              "policies.registry.PolicyKind",
                              fix="name a PolicyKind(description, build) in the entry point")


def policy_registry(*, entry_points: bool = False) -> Registry[PolicyKind]:
    """Policies by name;
    with ``entry_points=True`` filled from the ``harness_bt.policies`` entry points."""
    registry: Registry[PolicyKind] = Registry("policy", validate=_validate)
    if entry_points:
        registry.load(Group.POLICIES)
    return registry


def default_policy(registry: Registry[PolicyKind]) -> str:
    """The policy to serve when none is named: :data:`DEFAULT_POLICY`, else the only one."""
    names = registry.names()
    if DEFAULT_POLICY in names:
        return DEFAULT_POLICY
    if len(names) == 1:
        return names[0]
    raise DefinitionError("NO_DEFAULT_POLICY", f"no --policy given, and the default "
                          f"{DEFAULT_POLICY!r} is not installed; installed: "
                          f"{', '.join(sorted(names)) or 'none'}",
                          fix="name one with --policy (harness policy list)")


def policy_metadata(name: str, kind: PolicyKind, settings: PolicySettings,
                    factory: PolicyFactory | None = None) -> dict[str, Any]:
    """What the server sends each client on connect: the policy, its action format, the
    settings (imperfections) it runs with, and the observation it reads (with ``factory``,
    the one served, the spec names the objects it knows)."""
    spec = kind.observation_spec(factory) if kind.observation_spec is not None and \
        factory is not None else observation_spec()
    return {
        "policy": name,
        "description": kind.description,
        "server": "harness-bt",
        "action_format": dict(kind.action_format or ACTION_FORMAT),
        "settings": {k: v for k, v in settings.to_dict().items() if k in kind.knobs},
        "observation_spec": spec,
    }
