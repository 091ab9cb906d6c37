"""Tree nodes for Python-built specs: plain functions returning the node dicts a YAML file
holds (``{"type": "sequence", "name": ..., "children": [...]}``). Only what is given goes in,
so a dumped spec reads like a hand-written one. :func:`node` makes any registered type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "act_and_evaluate", "check", "delay", "evaluate", "failure", "force_failure",
    "force_success", "inverter", "keep_running_until_failure", "node", "observe", "parallel",
    "recover", "repeat", "retry", "running", "selector", "sequence", "skill", "subtree",
    "success", "timeout", "wait_for",
]

Node = dict[str, Any]
_UNSET: Any = object()


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def node(type: str, name: str, **params: Any) -> Node:
    """Any registered node type: ``node("timeout", "t", seconds=2.0, child=...)``. Params
    given as None are left out."""
    out: Node = {"type": type, "name": name}
    out.update((k, _clean(v)) for k, v in params.items() if v is not None and v is not _UNSET)
    return out


def sequence(name: str, children: Sequence[Node], *, memory: bool | None = None) -> Node:
    return node("sequence", name, memory=memory, children=list(children))


def selector(name: str, children: Sequence[Node], *, memory: bool | None = None) -> Node:
    return node("selector", name, memory=memory, children=list(children))


def parallel(name: str, children: Sequence[Node], *, policy: str | None = None) -> Node:
    return node("parallel", name, policy=policy, children=list(children))


def inverter(name: str, child: Node) -> Node:
    return node("inverter", name, child=child)


def retry(name: str, child: Node, *, attempts: int | None = None,
          backoff: Mapping[str, float] | None = None,
          retry_on: Sequence[str] | None = None) -> Node:
    return node("retry", name, attempts=attempts, backoff=backoff, retry_on=retry_on,
                child=child)


def recover(name: str, attempt: Node, recovery: Node, *, budget: int | None = None,
            backoff: Mapping[str, float] | None = None) -> Node:
    return node("recover", name, budget=budget, backoff=backoff, attempt=attempt,
                recovery=recovery)


def timeout(name: str, child: Node, seconds: float) -> Node:
    return node("timeout", name, seconds=seconds, child=child)


def delay(name: str, child: Node, seconds: float) -> Node:
    return node("delay", name, seconds=seconds, child=child)


def repeat(name: str, child: Node, times: int) -> Node:
    return node("repeat", name, times=times, child=child)


def force_success(name: str, child: Node) -> Node:
    return node("force_success", name, child=child)


def force_failure(name: str, child: Node) -> Node:
    return node("force_failure", name, child=child)


def keep_running_until_failure(name: str, child: Node) -> Node:
    return node("keep_running_until_failure", name, child=child)


def skill(name: str, skill: str, *, params: Mapping[str, Any] | None = None,
          inputs: Mapping[str, str] | None = None, objects: Mapping[str, str] | None = None,
          premises: Sequence[str] | None = None, snapshot: str | None = None,
          output: str | None = None, handover: bool | None = None,
          no_progress_s: float | None = None) -> Node:
    """A leaf by skill (the ``skill:`` shorthand of a ``skill_action``)."""
    out = node("_", name, params=params, inputs=inputs, objects=objects, premises=premises,
               snapshot=snapshot, output=output, handover=handover,
               no_progress_s=no_progress_s)
    del out["type"]
    return {"skill": skill, **out}


def act_and_evaluate(name: str, skill: str, *, params: Mapping[str, Any] | None = None,
                     inputs: Mapping[str, str] | None = None,
                     objects: Mapping[str, str] | None = None,
                     snapshot: str | None = None, premises: Sequence[str] | None = None,
                     max_observations: int | None = None) -> Node:
    return node("act_and_evaluate", name, skill=skill, params=params, inputs=inputs,
                objects=objects, snapshot=snapshot, premises=premises,
                max_observations=max_observations)


def evaluate(name: str, command: str, *, postconditions: Sequence[Mapping[str, Any]] | None = None,
             max_observations: int | None = None, observation_timeout_s: float | None = None,
             output: str | None = None) -> Node:
    return node("evaluate", name, command=command, postconditions=postconditions,
                max_observations=max_observations,
                observation_timeout_s=observation_timeout_s, output=output)


def observe(name: str, objects: Sequence[str] | None = None, *,
            min_confidence: float | None = None, timeout_s: float | None = None,
            record: str | None = None) -> Node:
    return node("observe", name, objects=objects, min_confidence=min_confidence,
                timeout_s=timeout_s, record=record)


def check(name: str, objects: Sequence[str] | None = None, *, max_age_s: float | None = None,
          min_confidence: float | None = None, relations: Sequence[str] | None = None,
          snapshot: str | None = None, record: str | None = None) -> Node:
    return node("check", name, objects=objects, max_age_s=max_age_s,
                min_confidence=min_confidence, relations=relations, snapshot=snapshot,
                record=record)


def wait_for(name: str, *, key: str | None = None, equals: Any = _UNSET,
             when: str | None = None, seconds: float | None = None,
             timeout_s: float | None = None) -> Node:
    out = node("wait_for", name, key=key, when=when, seconds=seconds, timeout_s=timeout_s)
    if equals is not _UNSET:
        out["equals"] = _clean(equals)
    return out


def success(name: str) -> Node:
    return node("success", name)


def failure(name: str) -> Node:
    return node("failure", name)


def running(name: str) -> Node:
    return node("running", name)


def subtree(ref: str, *, name: str | None = None, remap: Mapping[str, str] | None = None,
            values: Mapping[str, Any] | None = None, autoremap: bool | None = None) -> Node:
    """Use the subtree named ``ref`` here."""
    out: Node = {"subtree": ref}
    for key, value in (("name", name), ("remap", remap), ("values", values),
                       ("autoremap", autoremap)):
        if value is not None:
            out[key] = _clean(value)
    return out
