"""Build a task spec in Python: the same :class:`~harness_bt.authoring.model.TaskSpec` a YAML file
gives, so a Python-built task dumps to YAML and loads back equal. Trees come from
:mod:`harness_bt.authoring.tree`.

>>> from harness_bt.authoring import builder as b, tree as t
>>> spec = b.task("hello", [
...     b.phase("work", t.success("ok"), transitions=[b.on("succeeded", "done")]),
...     b.final("done")])
>>> [p.id for p in spec.phases]
['work', 'done']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness_bt.authoring.model import (
    AtomicSpec,
    BudgetSpec,
    CompoundSpec,
    FinalSpec,
    HistorySpec,
    ParallelSpec,
    ParamSpec,
    TaskSpec,
    TransitionSpec,
)

__all__ = ["budget", "compound", "final", "history", "on", "parallel", "phase", "task"]

Phase = AtomicSpec | CompoundSpec | ParallelSpec | FinalSpec | HistorySpec


def _given(**fields: Any) -> dict[str, Any]:
    """Only what was given, so the spec holds what a hand-written file would."""
    return {k: v for k, v in fields.items() if v is not None and v != "" and v != ()}


def on(event: str, target: str, *, reason: str | None = None, guard: str | None = None,
       when: str | None = None, description: str = "") -> TransitionSpec:
    """``on("failed", "aborted_pick", when="outcome.reason == 'NO_PROGRESS'")``."""
    return TransitionSpec(**_given(event=event, target=target, reason=reason, guard=guard,
                                   when=when, description=description))


def phase(id: str, tree: Mapping[str, Any], *, transitions: Sequence[TransitionSpec] = (),
          description: str = "") -> AtomicSpec:
    """An atomic phase ticking ``tree``."""
    return AtomicSpec(**_given(id=id, tree=dict(tree), description=description,
                               transitions=list(transitions) or None))


def compound(id: str, phases: Sequence[Phase], *, initial: str | None = None,
             transitions: Sequence[TransitionSpec] = (), description: str = "") -> CompoundSpec:
    """Nested phases, one active at a time."""
    return CompoundSpec(**_given(id=id, phases=list(phases), initial=initial,
                                 description=description,
                                 transitions=list(transitions) or None))


def parallel(id: str, regions: Sequence[Phase], *, transitions: Sequence[TransitionSpec] = (),
             description: str = "") -> ParallelSpec:
    """Regions active side by side."""
    return ParallelSpec(**_given(id=id, regions=list(regions), description=description,
                                 transitions=list(transitions) or None))


def final(id: str, *, reason: str | None = None, description: str = "") -> FinalSpec:
    """A final state (top level: ``done`` or ``aborted_<why>``)."""
    return FinalSpec(**_given(id=id, kind="final", reason=reason, description=description))


def history(id: str, *, deep: bool = False, default: str | None = None,
            description: str = "") -> HistorySpec:
    """A history phase, inside a compound: a transition to it resumes the compound."""
    return HistorySpec(**_given(id=id, kind="history", type="deep" if deep else None,
                                default=default, description=description))


def budget(*, max_retries: int | None = None, max_time_s: float | None = None) -> BudgetSpec:
    return BudgetSpec(**_given(max_retries=max_retries, max_time_s=max_time_s))


def task(name: str, phases: Sequence[Phase], *, initial: str | None = None,
         budget: BudgetSpec | None = None, description: str = "", instruction: str = "",
         version: str = "1", blackboard: Mapping[str, Any] | None = None,
         guards: Mapping[str, str] | None = None,
         subtrees: Mapping[str, Mapping[str, Any]] | None = None,
         includes: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
         scene: str | None = None,
         params: Mapping[str, ParamSpec | Mapping[str, Any]] | None = None) -> TaskSpec:
    """A task spec; check and build it with :func:`harness_bt.authoring.build_task`. ``params``:
    name -> declaration (a :class:`ParamSpec` or ``{"type": ..., "default": ...}``)."""
    return TaskSpec(**_given(
        name=name, phases=list(phases), initial=initial, budget=budget,
        description=description, instruction=instruction,
        version=None if version == "1" else version,
        blackboard=dict(blackboard) if blackboard else None,
        guards=dict(guards) if guards else None,
        subtrees={k: dict(v) for k, v in subtrees.items()} if subtrees else None,
        includes=list(includes) or None, metadata=dict(metadata) if metadata else None,
        scene=scene, params={k: v if isinstance(v, ParamSpec) else ParamSpec.model_validate(v)
                             for k, v in params.items()} if params else None))
