"""The one plug-in mechanism: every extension point of harness-bt is an entry-point group,
loaded by :func:`load_group` into a per-instance :class:`Registry`.

==========================  ================  ===============================================
group                       entry-point name  object
==========================  ================  ===============================================
``harness_bt.skills``       skill name        a :class:`~harness_bt.skill.SkillContract`
``harness_bt.executors``    skill name        the :data:`~harness_bt.runtime.executor.
                                              ExecutorFactory` that runs that skill
``harness_bt.evaluators``   evaluator name    an evaluator function
``harness_bt.perception``   perception name   a factory ``() -> Perception``
``harness_bt.nodes``        node type name    a :class:`~harness_bt.nodes.base.NodeType`
``harness_bt.bridges``      runtime name      a :data:`~harness_bt.runtime.episodes.
                                              RuntimeFactory`
``harness_bt.backends``     backend name      a :data:`~harness_bt.runtime.backend.
                                              BackendFactory`
``harness_bt.commands``     subcommand        a typer app or a function (``harness NAME``)
``harness_bt.scenes``       scene name        a scene document: a path (``str`` / ``Path``)
                                              or a zero-argument function returning one
``harness_bt.predicates``   predicate name    a :class:`~harness_bt.scene.predicates.
                                              Predicate` for scene success conditions
``harness_bt.policies``     policy name       a :class:`~policies.registry.
                                              PolicyKind` (``harness policy serve``)
``harness_bt.planners``     planner name      a factory ``(PlannerOptions) -> Planner``
                                              (:mod:`harness_bt.planner`)
==========================  ================  ===============================================

A package ships its extensions by naming them in its own ``setup.cfg`` (or
``pyproject.toml``); two packages can be installed side by side as long as they do not offer
the same name in the same group. A name offered twice (by two packages, or by a package and
the built-ins) is refused with both origins named: nothing is silently shadowed.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from harness_bt.errors import DefinitionError

__all__ = ["Group", "Origin", "Registry", "closest", "did_you_mean", "load_group", "load_reference"]

T = TypeVar("T")


class Group(StrEnum):
    """The entry-point groups (see the module docstring)."""

    SKILLS = "harness_bt.skills"
    EXECUTORS = "harness_bt.executors"
    EVALUATORS = "harness_bt.evaluators"
    PERCEPTION = "harness_bt.perception"
    NODES = "harness_bt.nodes"
    BRIDGES = "harness_bt.bridges"
    BACKENDS = "harness_bt.backends"
    COMMANDS = "harness_bt.commands"
    SCENES = "harness_bt.scenes"
    PREDICATES = "harness_bt.predicates"
    POLICIES = "harness_bt.policies"
    PLANNERS = "harness_bt.planners"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a registered item came from: ``source`` (``entry point pkg.mod:attr``, ``built
    in (harness_bt.nodes)``, ``code``) and, for an entry point, the ``package`` (distribution)
    that declares it."""

    source: str
    package: str | None = None

    def __str__(self) -> str:
        return f"{self.source} of package {self.package!r}" if self.package else self.source


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name ``name`` is most likely a misspelling of (None: none is close)."""
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in names}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return close[0] if close else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` when a close match exists, else ``""``."""
    close = closest(name, known)
    return f"; did you mean {close!r}?" if close else ""


class Registry(Generic[T]):
    """Name -> object, per instance. Refuses a second registration of a name (naming both
    origins) and reports unknown names with the known ones.

    ``kind`` ("skill", "bridge", "node type") is used in messages; ``validate`` (optional) is
    called on each registration and raises to refuse it.
    """

    def __init__(self, kind: str, *, validate: Callable[[str, T], None] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._origin: dict[str, Origin] = {}
        self._validate = validate

    def register(self, name: str, item: T, *, origin: Origin | str = "code") -> T:
        where = origin if isinstance(origin, Origin) else Origin(origin)
        if not isinstance(name, str) or not name.strip():
            raise DefinitionError(
                "INVALID_NAME", f"a {self.kind} needs a non-empty name, got {name!r}")
        if name in self._items:
            raise self._clash(name, where)
        if self._validate is not None:
            self._validate(name, item)
        self._items[name] = item
        self._origin[name] = where
        return item

    def _clash(self, name: str, second: Origin) -> DefinitionError:
        first = self._origin[name]
        return DefinitionError(
            "DUPLICATE_REGISTRATION",
            f"{self.kind} {name!r} is offered twice: by {first} and by {second}; refusing the "
            "second",
            fix="uninstall one of the two packages, or rename one of the two "
                f"{self.kind}s (or build a fresh registry)",
            details={"name": name, "origins": [str(first), str(second)]})

    def get(self, name: str, *, where: str | None = None) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = self.listed()
            raise DefinitionError(
                f"UNKNOWN_{self.kind.upper().replace(' ', '_')}",
                f"unknown {self.kind} {name!r}; known: {', '.join(known) or '(none)'}"
                f"{did_you_mean(name, known)}",
                where=where,
                details={"name": name, "known": known},
            ) from None

    def load(self, group: Group | str, *,
             on_error: Callable[[DefinitionError], None] | None = None) -> list[str]:
        """Register every entry point of ``group`` (see :func:`load_group`)."""
        return load_group(group, self, on_error=on_error)

    def names(self) -> list[str]:
        return sorted(self._items)

    def listed(self) -> list[str]:
        """The names offered to users (in errors, suggestions and listings): every name
        but the :meth:`hidden` ones."""
        return [n for n in sorted(self._items) if not self.hidden(n)]

    def hidden(self, name: str) -> bool:
        """Whether ``name`` is left out of :meth:`listed` (none is, unless a subclass says)."""
        return False

    def origin(self, name: str) -> Origin:
        return self._origin[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[tuple[str, T]]:
        return [(k, self._items[k]) for k in sorted(self._items)]


#: distribution folder -> its package name (reading a name parses the package's METADATA file:
#: a registry that loads its entry points once per episode would parse them all every time)
_PACKAGE_NAMES: dict[str, str] = {}


def _package(ep: EntryPoint) -> str | None:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None
    where = getattr(dist, "_path", None)  # a PathDistribution's *.dist-info / *.egg-info
    if where is None:
        return str(dist.name)
    key = str(where)
    name = _PACKAGE_NAMES.get(key)
    if name is None:
        name = _PACKAGE_NAMES[key] = str(dist.name)
    return name


def load_group(group: Group | str, registry: Registry[Any], *,
               on_error: Callable[[DefinitionError], None] | None = None) -> list[str]:
    """Register every entry point of ``group`` in ``registry``; returns the names loaded.

    A name the registry already holds (built in, or offered by another package) is refused
    with both origins named. An entry point that fails to import raises
    ``ENTRY_POINT_FAILED`` naming its package. With ``on_error``, either is reported there and
    the entry point skipped (the CLI's subcommands: a broken plug-in must not take the whole
    CLI down)."""
    loaded = []
    found = sorted(entry_points(group=str(group)), key=lambda ep: (ep.name, _package(ep) or ""))
    for ep in found:
        origin = Origin(f"entry point {ep.value}", _package(ep))
        if ep.name in registry:
            clash = registry._clash(ep.name, origin)
            if on_error is None:
                raise clash
            on_error(clash)
            continue
        try:
            item = ep.load()
        except Exception as exc:
            error = DefinitionError(
                "ENTRY_POINT_FAILED", f"{registry.kind} {ep.name!r} ({origin}, group {group}) "
                f"failed to load: {exc!r}",
                fix=f"reinstall package {origin.package!r}, or uninstall it" if origin.package
                else "reinstall the package that provides it")
            if on_error is None:
                raise error from exc
            on_error(error)
            continue
        registry.register(ep.name, item, origin=origin)
        loaded.append(ep.name)
    return loaded


def load_reference(reference: str, what: str, *, example: str = "mypackage.module:name"
                   ) -> Any:
    """``package.module:attribute`` -> that object (an explicit choice on a command line,
    beside the installed plug-ins), with an error that names what failed."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise DefinitionError("INVALID_REFERENCE", f"{what} {reference!r} is not of the form "
                              "package.module:attribute", fix=f"e.g. {example}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DefinitionError("INVALID_REFERENCE", f"{what} {reference!r}: cannot import "
                              f"{module_name!r} ({exc})",
                              fix="install the package that provides it") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise DefinitionError("INVALID_REFERENCE", f"{what} {reference!r}: {module_name!r} "
                              f"has no {attr!r}",
                              fix="name one of the module's attributes") from None
