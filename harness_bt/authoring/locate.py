"""Where a task's includes and a planner's task library are found, wherever the task file and
the working directory are: an include relative to the file that names it, then in the
installed task library; ``--library DIR`` as given, then the installed library.

The installed library is the directory named by ``HARNESS_LIBRARY`` when set, else the
``trees/`` directory of the harness-bt checkout this package runs from (an editable install,
as ``make setup`` makes). An include written as the checkout names it (``trees/steps.yaml``)
or by its name in the library (``steps.yaml``) finds it there."""

from __future__ import annotations

import os
from pathlib import Path

from harness_bt.errors import DefinitionError

__all__ = ["LIBRARY_ENV", "find_include", "installed_library", "resolve_library"]

#: names the installed task library when it is not the checkout's trees/
LIBRARY_ENV = "HARNESS_LIBRARY"


def installed_library() -> Path | None:
    """The installed task library (see the module docstring), or None when there is none."""
    named = os.environ.get(LIBRARY_ENV)
    if named:
        path = Path(named).expanduser()
        return path.resolve() if path.is_dir() else None
    checkout = Path(__file__).resolve().parents[2] / "trees"
    return checkout if checkout.is_dir() else None


def _in_library(item: str, library: Path) -> list[Path]:
    """Where ``item`` would be in the library: by its name there, or written as the
    checkout names it (``trees/steps.yaml``)."""
    rel = Path(item)
    out = [library / rel]
    if len(rel.parts) > 1 and rel.parts[0] == library.name:
        out.append(library.joinpath(*rel.parts[1:]))
    return out


def find_include(item: str, here: Path) -> tuple[Path | None, list[Path]]:
    """The file an ``includes:`` entry names, for a file in folder ``here``, and every place
    looked at (for the error when none holds it)."""
    first = (here / item).resolve()
    looked = [first]
    if first.is_file() or Path(item).is_absolute():
        return (first if first.is_file() else None), looked
    library = installed_library()
    for place in _in_library(item, library) if library is not None else []:
        looked.append(place.resolve())
        if place.is_file():
            return place.resolve(), looked
    return None, looked


def resolve_library(directory: str | os.PathLike[str]) -> Path:
    """A task library directory as given (absolute, or relative to the working directory),
    else the installed library when it names it (``trees``, or a folder inside it). A clear
    error lists where it looked."""
    given = Path(directory)
    if given.is_dir():
        return given
    library = installed_library()
    looked = [str(given.resolve())]
    if library is not None and not given.is_absolute():
        for place in [library] if str(given) in (library.name, ".") else \
                _in_library(str(given), library):
            looked.append(str(place))
            if place.is_dir():
                return place
    raise DefinitionError(
        "LIBRARY_NOT_FOUND", f"no task library at {str(directory)!r} (looked in "
        f"{', '.join(looked)})", where=str(directory),
        fix="pass --library DIR naming a directory of task files, or set "
            f"{LIBRARY_ENV} to the installed library")
