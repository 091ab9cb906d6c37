"""Loading a task file of any kind the project reads: what ``harness run`` and the benchmarks use.

- ``.yaml`` / ``.yml`` / ``.json`` / ``.xml``: read and checked as a whole by
  :func:`harness_bt.spec.load_task` (every problem with its line, nothing built on failure);
- ``.py``: imported by :func:`harness_bt.spec.load_python`; a :class:`~harness_bt.spec.TaskSpec`
  it returns is checked the same way, a ready :class:`~harness_bt.Task` is taken as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness_bt.errors import DefinitionError
from harness_bt.phases import Task

__all__ = ["TASK_SUFFIXES", "load_task"]

TASK_SUFFIXES = (".yaml", ".yml", ".json", ".xml", ".py")


def load_task(path: str | os.PathLike[str]) -> Task:
    """The task in ``path``, checked against the installed skills and node types."""
    from harness_bt.spec import build_task, load_python
    from harness_bt.spec import load_task as load_document

    file = Path(path)
    if not file.is_file():
        raise DefinitionError("TASK_NOT_FOUND", f"no task file at {str(file)!r}", where=str(file),
                              fix="give the path of a task file, e.g. trees/pick_cube.yaml")
    suffix = file.suffix.lower()
    if suffix not in TASK_SUFFIXES:
        raise DefinitionError("UNKNOWN_TASK_FORMAT", f"{file}: unknown task file type "
                              f"{file.suffix!r}", where=str(file),
                              fix=f"use one of {', '.join(TASK_SUFFIXES)}")
    if suffix != ".py":
        return load_document(file)
    made = load_python(file)
    if isinstance(made, Task):
        return made
    return build_task(made, base_dir=file.parent)
