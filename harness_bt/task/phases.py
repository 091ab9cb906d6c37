"""The phases a task is declared from: :class:`Phase` (atomic, binds one behaviour tree),
:class:`Compound` (nested phases, one active at a time), :class:`Parallel` (regions active side
by side), :class:`Final` (a terminal reason) and :class:`History` (a pseudo-phase inside a
compound: a transition to it re-enters the compound where it was left), and the transitions
between them (:func:`on`). :class:`harness_bt.Task` compiles them into a statechart."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import py_trees

from harness_bt.context import GuardContext

if TYPE_CHECKING:
    from harness_bt.nodes.base import NodeType
    from harness_bt.plugins import Registry

__all__ = ["Compound", "Final", "History", "On", "Parallel", "Phase", "PhaseSpec", "TreeRecipe",
           "TreeSource", "atomic_ids", "children", "on", "walk"]


@runtime_checkable
class TreeRecipe(Protocol):
    """A tree built per run from a description (a node-spec dict compiled by
    :mod:`harness_bt.authoring`): ``build`` is given the run's node registry (None: the
    recipe's own) and the task's parameter values, and returns a fresh tree."""

    def build(self, nodes: Registry[NodeType] | None, params: Mapping[str, Any]
              ) -> py_trees.behaviour.Behaviour: ...


TreeSource = Callable[[], py_trees.behaviour.Behaviour] | TreeRecipe


@dataclass(frozen=True, slots=True)
class On:
    """A transition: on ``event`` (an outcome word, ``done``, or a raw chart event) go to
    ``target``, if ``reason`` (when given) equals the outcome's reason and ``guard`` (when given)
    returns True. Transitions of a phase are tried in order."""

    event: str
    target: str
    reason: str | None = None
    guard: Callable[[GuardContext], bool] | None = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.event, "target": self.target}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.guard is not None:
            out["guard"] = getattr(self.guard, "__name__", "guard")
        if self.description:
            out["description"] = self.description
        return out


def on(event: str, target: str, *, reason: str | None = None,
       guard: Callable[[GuardContext], bool] | None = None, description: str = "") -> On:
    """``on("failed", "recover_grasp", reason="POSTCONDITION_NOT_MET")``."""
    return On(event, target, reason, guard, description)


@dataclass(frozen=True)
class PhaseSpec:
    id: str
    transitions: tuple[On, ...] = ()
    description: str = ""

    @property
    def kind(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Phase(PhaseSpec):
    """An atomic phase: ``tree`` is a factory (called once per run) or a :class:`TreeRecipe`
    (a node-spec dict compiled by :func:`harness_bt.authoring.new_task`)."""

    tree: TreeSource | None = None

    def __init__(self, id: str, tree: TreeSource, *, transitions: Sequence[On] = (),
                 description: str = "") -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "tree", tree)
        object.__setattr__(self, "transitions", tuple(transitions))
        object.__setattr__(self, "description", description)

    @property
    def kind(self) -> str:
        return "atomic"


@dataclass(frozen=True)
class Compound(PhaseSpec):
    """Nested phases, one active at a time; ``initial`` defaults to the first."""

    phases: tuple[PhaseSpec, ...] = ()
    initial: str | None = None

    def __init__(self, id: str, phases: Sequence[PhaseSpec], *, initial: str | None = None,
                 transitions: Sequence[On] = (), description: str = "") -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "phases", tuple(phases))
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "transitions", tuple(transitions))
        object.__setattr__(self, "description", description)

    @property
    def kind(self) -> str:
        return "compound"


@dataclass(frozen=True)
class Parallel(PhaseSpec):
    """Regions active side by side (each an atomic or compound phase)."""

    regions: tuple[PhaseSpec, ...] = ()

    def __init__(self, id: str, regions: Sequence[PhaseSpec], *, transitions: Sequence[On] = (),
                 description: str = "") -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "regions", tuple(regions))
        object.__setattr__(self, "transitions", tuple(transitions))
        object.__setattr__(self, "description", description)

    @property
    def kind(self) -> str:
        return "parallel"


@dataclass(frozen=True)
class Final(PhaseSpec):
    """A final state. At the top level its ``reason`` (default: its id) ends the task and must be
    ``done`` or start with ``aborted_``."""

    reason: str = ""

    def __init__(self, id: str, *, reason: str | None = None, description: str = "") -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "reason", reason if reason is not None else id)
        object.__setattr__(self, "transitions", ())
        object.__setattr__(self, "description", description)

    @property
    def kind(self) -> str:
        return "final"


@dataclass(frozen=True)
class History(PhaseSpec):
    """A history pseudo-phase inside a :class:`Compound`: a transition that targets it
    re-enters the compound in the phase that was active when the compound was last left
    (``deep``: the innermost phase, through nested compounds; shallow: the compound's direct
    phase, which starts again from its own initial phase when it is a compound). Before the
    compound was ever left, it enters ``default`` (default: the compound's initial phase).
    It is never active itself and has no transitions."""

    deep: bool = False
    default: str | None = None

    def __init__(self, id: str, *, deep: bool = False, default: str | None = None,
                 description: str = "") -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "deep", deep)
        object.__setattr__(self, "default", default)
        object.__setattr__(self, "transitions", ())
        object.__setattr__(self, "description", description)

    @property
    def kind(self) -> str:
        return "history"

    @property
    def type(self) -> str:
        """``shallow`` or ``deep``, as python-statemachine and SCXML name them."""
        return "deep" if self.deep else "shallow"


def children(spec: PhaseSpec) -> tuple[PhaseSpec, ...]:
    """The phases directly inside ``spec`` (a compound's include its history phases)."""
    if isinstance(spec, Compound):
        return spec.phases
    if isinstance(spec, Parallel):
        return spec.regions
    return ()


def walk(specs: Sequence[PhaseSpec]) -> Iterator[PhaseSpec]:
    """Every phase, pre-order."""
    for spec in specs:
        yield spec
        yield from walk(children(spec))


def atomic_ids(spec: PhaseSpec) -> list[str]:
    """The ids of the atomic phases in ``spec`` (itself included)."""
    return [s.id for s in walk([spec]) if isinstance(s, Phase)]
