"""Skills, node types and evaluators as installed, described as data.

A skill's entry: its params (:mod:`harness_bt.skill_params`), resources, lifecycle, the
postconditions it asks an evaluator to confirm (with the evaluator that judges each, and the
params under which it applies), and where it comes from (the entry point and the package that
installs it, with the package's version). Postconditions depend on a command's params, so they
are found by asking the contract itself: with sample params, then with each choice of each
``Literal``, ``bool`` or optional field changed in turn.

A node type's entry: its ports, what SUCCESS / FAILURE / RUNNING mean, and whether it is
internal (a part that an idiom builds, hidden from the lists a user reads).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from pydantic import BaseModel, ValidationError

from harness_bt.evaluation import EvaluatorRegistry
from harness_bt.nodes.base import NodeManifest, NodeType
from harness_bt.nodes.registry import INTERNAL_TYPES
from harness_bt.plugins import Origin, Registry
from harness_bt.skill import SkillContract, SkillRegistry
from harness_bt.skill_params import ParamInfo, describe_params

__all__ = [
    "INTERNAL_NODE_TYPES",
    "EvaluatorEntry",
    "NodeEntry",
    "PostconditionEntry",
    "SkillEntry",
    "Source",
    "evaluator_entries",
    "node_entries",
    "skill_entries",
    "source_of",
]

#: Node types kept out of the lists a user reads (:data:`harness_bt.nodes.registry.
#: INTERNAL_TYPES`: the parts idioms build, test stand-ins).
INTERNAL_NODE_TYPES = INTERNAL_TYPES


@dataclass(frozen=True, slots=True)
class Source:
    """Where an entry comes from: ``origin`` (``entry point skills.contracts:GRASP``, ``built
    in (harness_bt.nodes)``), the installing ``package`` and its ``version`` (None for the
    built-ins and for code)."""

    origin: str
    package: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        if self.package is None:
            return self.origin
        return f"{self.package} {self.version or ''}".strip()

    def to_dict(self) -> dict[str, Any]:
        return {"origin": self.origin, "package": self.package, "version": self.version}


def source_of(registry: Registry[Any], name: str) -> Source:
    origin: Origin = registry.origin(name)
    version = None
    if origin.package:
        try:
            version = metadata.version(origin.package)
        except metadata.PackageNotFoundError:
            version = None
    return Source(origin.source, origin.package, version)


def _summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n")[0].split()).replace("``", "")


# ---------------------------------------------------------------------------------- skills


@dataclass(frozen=True, slots=True)
class PostconditionEntry:
    """An evaluator a skill's commands ask for, and when (``""``: always; else the params
    under which it applies, e.g. ``onto='top'``)."""

    evaluator: str
    when: str = ""
    registered: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"evaluator": self.evaluator, "when": self.when or None,
                "registered": self.registered}


@dataclass(frozen=True)
class SkillEntry:
    name: str
    description: str
    version: str
    params_model: str
    params_doc: str
    params: list[ParamInfo]
    resources: tuple[str, ...]
    lifecycle: dict[str, Any]
    postconditions: list[PostconditionEntry]
    source: Source
    #: the package whose executor runs it where this process would run it, None: none here
    executor: Source | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "version": self.version,
            "params_model": self.params_model, "params_doc": self.params_doc,
            "params": [p.to_dict() for p in self.params], "resources": list(self.resources),
            "lifecycle": self.lifecycle,
            "postconditions": [p.to_dict() for p in self.postconditions],
            "evaluators": sorted({p.evaluator for p in self.postconditions}),
            "source": self.source.to_dict(),
            "executor": None if self.executor is None else self.executor.to_dict(),
            **({"notes": self.notes} if self.notes else {}),
        }


_SAMPLES: dict[str, list[Any]] = {
    "str": ["object_a"], "int": [1], "bool": [False],
    "float": [0.05, 0.5, 1.0],
    "list": [[0.5, 0.0, 0.1], [0.5, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0],
             [0.0, -0.55, 0.0, -2.45, 0.0, 1.9, 0.785], [0.0, 0.0], []],
}


def _kind(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "literal"
    for arg in (annotation, *typing.get_args(annotation)):
        target = typing.get_origin(arg) or arg
        if target is list or target is tuple:
            return "list"
        for kind, cls in (("bool", bool), ("int", int), ("float", float), ("str", str)):
            if target is cls:
                return kind
    return "str"


def _candidates(info: Any) -> list[Any]:
    kind = _kind(info.annotation)
    if kind == "literal":
        return list(typing.get_args(info.annotation))
    return list(_SAMPLES[kind])


def _sample(model: type[BaseModel]) -> dict[str, Any] | None:
    """Params that fit ``model``: its defaults, and a value that fits for each required
    field (tried one field at a time; None when no combination fits)."""
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if not info.is_required():
            continue
        key = info.alias or name
        for candidate in _candidates(info):
            trial = {**values, key: candidate}
            try:
                model.model_validate(trial)
            except ValidationError as exc:
                if any(str(e["loc"][0]) == key for e in exc.errors() if e["loc"]):
                    continue
            values[key] = candidate
            break
        else:
            return None
    try:
        model.model_validate(values)
    except ValidationError:
        return None
    return values


def _variations(model: type[BaseModel], base: dict[str, Any]
                ) -> Iterator[tuple[str, dict[str, Any]]]:
    """``base`` with one choice field changed: each other value of a ``Literal``, the other
    truth value of a ``bool``, a value for an optional field that defaults to None."""
    for name, info in model.model_fields.items():
        key = info.alias or name
        current = base.get(key, None if info.is_required() else info.get_default(
            call_default_factory=True))
        kind = _kind(info.annotation)
        if kind == "literal":
            others = [v for v in typing.get_args(info.annotation) if v != current]
        elif kind == "bool":
            others = [not current]
        elif current is None and not info.is_required():
            for value in _candidates(info)[:1]:
                yield f"{key} given", {**base, key: value}
            continue
        else:
            continue
        for value in others:
            yield f"{key}={value!r}", {**base, key: value}


def _postconditions(skill: SkillContract, evaluators: Registry[Any] | None
                    ) -> tuple[list[PostconditionEntry], list[str]]:
    model = skill.params_model
    base = _sample(model)
    if base is None:
        return [], ["postconditions depend on params this catalogue cannot sample"]
    found: dict[str, set[str]] = {}
    tried: list[str] = []
    for label, values in [("", base), *_variations(model, base)]:
        try:
            params = model.model_validate(values)
            names = {p.evaluator for p in skill.postconditions(params)}
        except Exception:  # a variation the contract refuses tells nothing
            continue
        tried.append(label)
        for name in names:
            found.setdefault(name, set()).add(label)
    if not tried:
        return [], ["postconditions depend on params this catalogue cannot sample"]
    out = []
    for name in sorted(found):
        labels = found[name]
        absent = [lab for lab in tried if lab not in labels]
        if not absent:
            when = ""
        elif "" in labels:
            when = "unless " + " or ".join(absent)
        else:
            when = " or ".join(lab for lab in tried if lab in labels)
        out.append(PostconditionEntry(name, when, evaluators is None or name in evaluators))
    return out, []


def _lifecycle(skill: SkillContract) -> dict[str, Any]:
    life = skill.lifecycle
    return {"start_within_ms": life.start_within_ms,
            "execution_timeout_ms": life.execution_timeout_ms,
            "stop_timeout_ms": life.stop_timeout_ms,
            "progress_timeout_ms": life.progress_timeout_ms, "retry_safe": life.retry_safe,
            "needs_fresh_observation_ms": life.needs_fresh_observation_ms,
            "cancel": str(life.cancel)}


def skill_entries(skills: SkillRegistry, *, evaluators: Registry[Any] | None = None,
                  executors: Registry[Any] | None = None) -> list[SkillEntry]:
    """Every skill of ``skills``, by name. With ``evaluators`` each postcondition says
    whether its evaluator is registered; with ``executors`` each skill names the package of
    the executor that runs it (None: no executor for it here)."""
    out = []
    for name, skill in skills.items():
        posts, notes = _postconditions(skill, evaluators)
        executor = source_of(executors, name) if executors is not None and name in executors \
            else None
        out.append(SkillEntry(
            name=name, description=skill.description, version=skill.version,
            params_model=skill.params_model.__name__,
            params_doc=_summary(skill.params_model.__doc__),
            params=describe_params(skill.params_model), resources=tuple(skill.resources),
            lifecycle=_lifecycle(skill), postconditions=posts, source=source_of(skills, name),
            executor=executor, notes=notes))
    return out


# ---------------------------------------------------------------------------------- evaluators


@dataclass(frozen=True)
class EvaluatorEntry:
    name: str
    summary: str
    function: str
    source: Source
    used_by: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "function": self.function,
                "source": self.source.to_dict(), "used_by": self.used_by}


def evaluator_entries(evaluators: EvaluatorRegistry,
                      skills: Sequence[SkillEntry] = ()) -> list[EvaluatorEntry]:
    """Every evaluator, with the skills (of ``skills``) whose postconditions name it."""
    users: dict[str, list[str]] = {}
    for entry in skills:
        for post in entry.postconditions:
            users.setdefault(post.evaluator, []).append(entry.name)
    out = []
    for name, fn in evaluators.items():
        function = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        out.append(EvaluatorEntry(name, _summary(getattr(fn, "__doc__", "")), function,
                                  source_of(evaluators, name), sorted(users.get(name, []))))
    return out


# ---------------------------------------------------------------------------------- node types


@dataclass(frozen=True)
class NodeEntry:
    name: str
    manifest: NodeManifest
    source: Source
    internal: bool

    @property
    def kind(self) -> str:
        return self.manifest.kind

    def to_dict(self) -> dict[str, Any]:
        return {**self.manifest.to_dict(), "internal": self.internal,
                "source": self.source.to_dict()}


def node_entries(nodes: Registry[NodeType], *, internal: bool = False) -> list[NodeEntry]:
    """Every node type, by name; those whose manifest says ``internal`` (built in:
    :data:`INTERNAL_NODE_TYPES`) only when ``internal``."""
    return [NodeEntry(name, nt.manifest, source_of(nodes, name), nt.manifest.internal)
            for name, nt in nodes.items() if internal or not nt.manifest.internal]
