"""Instance-scoped registries of named things (skills, bridges, node types), filled from the
built-ins and from setup.cfg entry points, so third parties ship their own as packages."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from harness_bt.errors import DefinitionError

__all__ = ["Registry", "did_you_mean"]

T = TypeVar("T")


def did_you_mean(name: str, known: list[str] | tuple[str, ...] | set[str]) -> str:
    """`` did you mean 'x'?`` when a close match exists, else ``""``."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in known}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return f"; did you mean {close[0]!r}?" if close else ""


class Registry(Generic[T]):
    """Name -> object. Refuses duplicates and reports unknown names with the known ones.

    ``kind`` ("skill", "bridge", "node type") is used in messages; ``validate`` (optional) is
    called on each registration and raises to refuse it.
    """

    def __init__(self, kind: str, *, validate: Callable[[str, T], None] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._validate = validate

    def register(self, name: str, item: T, *, origin: str = "code") -> T:
        if not isinstance(name, str) or not name.strip():
            raise DefinitionError(
                "INVALID_NAME", f"a {self.kind} needs a non-empty name, got {name!r}"
            )
        if name in self._items:
            raise DefinitionError(
                "DUPLICATE_REGISTRATION",
                f"{self.kind} {name!r} is already registered (from {self._origin[name]}); "
                f"refusing the second registration from {origin}",
                fix="give it another name or build a fresh registry",
            )
        if self._validate is not None:
            self._validate(name, item)
        self._items[name] = item
        self._origin[name] = origin
        return item

    def get(self, name: str, *, where: str | None = None) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = sorted(self._items)
            raise DefinitionError(
                f"UNKNOWN_{self.kind.upper().replace(' ', '_')}",
                f"unknown {self.kind} {name!r}; known: {', '.join(known) or '(none)'}"
                f"{did_you_mean(name, known)}",
                where=where,
                details={"name": name, "known": known},
            ) from None

    def load_entry_points(self, group: str) -> list[str]:
        """Register every entry point of ``group``; returns the names loaded."""
        loaded = []
        for ep in entry_points(group=group):
            if ep.name in self._items:
                continue
            try:
                item = ep.load()
            except Exception as exc:
                raise DefinitionError(
                    "ENTRY_POINT_FAILED",
                    f"{self.kind} {ep.name!r} from entry point {ep.value!r} (group {group}) "
                    f"failed to load: {exc}",
                    fix="reinstall the package that provides it (pip install -e .)",
                ) from exc
            self.register(ep.name, item, origin=f"entry point {ep.value}")
            loaded.append(ep.name)
        return loaded

    def names(self) -> list[str]:
        return sorted(self._items)

    def origin(self, name: str) -> str:
        return self._origin[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[tuple[str, T]]:
        return [(k, self._items[k]) for k in sorted(self._items)]
