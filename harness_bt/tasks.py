"""Loading a task file: the minimal reader of the task library (``trees/``).

``load_task(path)`` reads a YAML file in the neutral dict form of
:meth:`harness_bt.phases.Task.from_dict` (``yaml.safe_load``), or a Python file that defines
``task() -> Task``. The authoring layer replaces this reader with its validated TaskSpec.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import yaml

from harness_bt.errors import DefinitionError
from harness_bt.phases import Task

__all__ = ["load_task"]


def load_task(path: str | os.PathLike[str]) -> Task:
    """The task in ``path`` (``.yaml`` / ``.yml``: neutral dict form; ``.py``: ``task()``)."""
    file = Path(path)
    if not file.is_file():
        raise DefinitionError("TASK_NOT_FOUND", f"no task file at {str(file)!r}", where=str(file),
                              fix="give the path of a task file, e.g. trees/pick_cube.yaml")
    if file.suffix in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise DefinitionError("INVALID_YAML", f"{file}: {exc}", where=str(file),
                                  fix="fix the YAML syntax") from None
        if not isinstance(data, dict):
            raise DefinitionError("INVALID_TASK", f"{file}: expected a mapping with name and "
                                  f"phases, got {type(data).__name__}", where=str(file))
        try:
            return Task.from_dict(data)
        except DefinitionError as exc:
            raise DefinitionError(exc.code, f"{file}: {exc.message}", where=str(file),
                                  fix=exc.fix, details=exc.details) from None
    if file.suffix == ".py":
        spec = importlib.util.spec_from_file_location(f"_harness_task_{file.stem}", file)
        if spec is None or spec.loader is None:
            raise DefinitionError("INVALID_TASK", f"cannot import {file}", where=str(file))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        build = getattr(module, "task", None)
        if not callable(build):
            raise DefinitionError("INVALID_TASK", f"{file} defines no task() function",
                                  where=str(file), fix="define task() -> harness_bt.Task")
        task = build()
        if not isinstance(task, Task):
            raise DefinitionError("INVALID_TASK", f"{file}: task() returned "
                                  f"{type(task).__name__}, not a Task", where=str(file))
        return task
    raise DefinitionError("UNKNOWN_TASK_FORMAT", f"{file}: unknown task file type "
                          f"{file.suffix!r}", where=str(file), fix="use .yaml or .py")
