"""Planners as plug-ins: the ``harness_bt.planners`` entry-point group (:mod:`harness_bt.plugins`)
maps a name to a factory ``(PlannerOptions) -> Planner``. harness-bt ships ``templates`` (no
model) and ``openai`` (an OpenAI-compatible chat-completions endpoint); a package of your own
adds one by naming it in its ``setup.cfg``::

    [options.entry_points]
    harness_bt.planners =
        mine = my_package.planner:make_planner
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from harness_bt.planner.model import Planner
from harness_bt.plugins import Group, Registry

__all__ = [
    "API_KEY_ENV",
    "URL_ENV",
    "PlannerFactory",
    "PlannerOptions",
    "open_planner",
    "planner_registry",
]

#: where the model planner's endpoint and key come from when not given on the command line
URL_ENV = "HARNESS_PLANNER_URL"
API_KEY_ENV = "HARNESS_PLANNER_API_KEY"


@dataclass(frozen=True)
class PlannerOptions:
    """What a planner is configured with: a model planner's endpoint (``url``, the base
    under which ``/chat/completions`` is served), its model name, API key, and how long one
    call may take; ``transport`` replaces the network (tests)."""

    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout_s: float = 30.0
    transport: httpx.BaseTransport | None = None

    @classmethod
    def from_env(cls, *, url: str | None = None, model: str | None = None,
                 timeout_s: float = 30.0) -> PlannerOptions:
        """Options from the command line over the environment (``HARNESS_PLANNER_URL``,
        ``HARNESS_PLANNER_API_KEY``)."""
        return cls(url=url or os.environ.get(URL_ENV) or None, model=model,
                   api_key=os.environ.get(API_KEY_ENV) or None, timeout_s=timeout_s)


PlannerFactory = Callable[[PlannerOptions], Planner]


def planner_registry(*, entry_points: bool = False) -> Registry[Any]:
    """Planner factories by name;
    with ``entry_points=True`` filled from the ``harness_bt.planners`` entry points."""
    registry: Registry[Any] = Registry("planner")
    if entry_points:
        registry.load(Group.PLANNERS)
    return registry


def open_planner(name: str, options: PlannerOptions, *,
                 registry: Registry[Any] | None = None) -> Planner:
    """The planner ``name`` made with ``options`` (an unknown name is refused, listing the
    installed ones)."""
    factory = (registry if registry is not None else planner_registry(entry_points=True)).get(
        name, where="--planner")
    planner: Planner = factory(options)
    return planner
