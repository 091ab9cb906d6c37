"""One call from a task (or a trace) to a picture: :func:`render`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.task import Task
from harness_bt.trace import TraceReader
from harness_bt.viz.dot import render_dot, to_dot
from harness_bt.viz.frames import Frame, frame_at
from harness_bt.viz.graph import Drawing, drawing
from harness_bt.viz.mermaid import to_mermaid

__all__ = ["FORMATS", "render", "structure_of", "trace_of"]

#: Output formats: text (``dot``, ``mmd``) or rendered by Graphviz (``svg``, ``png``).
FORMATS = ("svg", "png", "dot", "mmd")
TraceLike = TraceReader | str | os.PathLike[str] | Iterable[Mapping[str, Any]]


def trace_of(trace: TraceLike) -> TraceReader:
    """A :class:`TraceReader` from a reader, a JSONL path or a list of events."""
    if isinstance(trace, TraceReader):
        return trace
    if isinstance(trace, str | os.PathLike):
        return TraceReader.open(trace)
    return TraceReader([dict(e) for e in trace])


def structure_of(task: Any) -> dict[str, Any]:
    """The task structure of a :class:`~harness_bt.Task`, a
    :class:`~harness_bt.authoring.TaskSpec` (built with the installed registries), a structure
    dict, or a task file path."""
    if isinstance(task, Task):
        return task.structure()
    if isinstance(task, Mapping):
        return dict(task)
    from harness_bt.authoring import TaskSpec, build_task, load_task

    if isinstance(task, TaskSpec):
        return build_task(task).structure()
    if isinstance(task, str | os.PathLike):
        return load_task(task).structure()
    raise DefinitionError("INVALID_ARGUMENT", f"cannot draw a {type(task).__name__}",
                          fix="pass a Task, a TaskSpec, a task structure or a task file")


def render(task: Any = None, *, trace: TraceLike | None = None, at: int | None = None,
           fmt: str = "svg", fold: bool = True) -> str | bytes:
    """Draw a task's execution graph: the statechart with every phase's tree.

    With ``trace`` (a path to a JSONL trace, a :class:`TraceReader` or its events), nodes are
    coloured by their status after event ``at`` (the end of the run when None): success,
    failure, running, unknown, halted, not ticked; attempts and command states are written on
    them and the active configuration is highlighted. ``task`` defaults to the trace's own
    structure. ``fmt``: ``svg`` (text) or ``png`` (bytes) through Graphviz's ``dot``, or
    ``dot`` / ``mmd`` (Mermaid) text without it. Idioms (``recover``, ``act_and_evaluate``)
    are drawn as one node each unless ``fold=False``.
    """
    if fmt not in FORMATS:
        raise DefinitionError("INVALID_ARGUMENT", f"format {fmt!r} is not one of "
                              f"{', '.join(FORMATS)}", fix="pick one of them")
    reader = trace_of(trace) if trace is not None else None
    if task is None and reader is None:
        raise DefinitionError("INVALID_ARGUMENT", "nothing to draw: give a task or a trace")
    structure = structure_of(task) if task is not None else reader.structure  # type: ignore[union-attr]
    frame: Frame | None = frame_at(reader, at) if reader is not None else None
    d: Drawing = drawing(structure, frame, fold=fold)
    if fmt == "mmd":
        return to_mermaid(d)
    dot = to_dot(d)
    if fmt == "dot":
        return dot
    out = render_dot(dot, fmt)
    return out.decode("utf-8") if fmt == "svg" else out


def write(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write text or bytes to ``path`` (folders made)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        target.write_bytes(data)
    else:
        target.write_text(data, encoding="utf-8")
    return target
