"""Load, check and build task documents: the entry points of :mod:`harness_bt.spec`.

Every path goes the same way: read (YAML with marks, or a Python-built spec) -> check the
whole document (:func:`harness_bt.validate.check_document`) -> build the core task through
the neutral dict form. Nothing is built unless the whole document passed; a refused document
raises :class:`~harness_bt.spec.problems.SpecError` listing every problem with its place.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness_bt.context import GuardContext
from harness_bt.errors import DefinitionError
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.phases import Task
from harness_bt.skill import SkillRegistry
from harness_bt.spec.build import build, to_neutral
from harness_bt.spec.dump import spec_to_data
from harness_bt.spec.library import Registries, read_document
from harness_bt.spec.model import TaskSpec
from harness_bt.spec.problems import Problem, Report
from harness_bt.spec.source import Document
from harness_bt.validate.check import Checked, check_document

__all__ = ["build_task", "check_file", "check_spec", "load_spec", "load_task",
           "neutral_form", "validate_file", "validate_spec"]

GuardFn = Callable[[GuardContext], bool]
PathLike = str | os.PathLike[str]


def _registries(nodes: NodeRegistry | None, skills: SkillRegistry | None,
                guards: Mapping[str, GuardFn] | None) -> Registries:
    return Registries(nodes=nodes, skills=skills, guards=dict(guards or {}))


def check_file(path: PathLike, *, nodes: NodeRegistry | None = None,
               skills: SkillRegistry | None = None,
               guards: Mapping[str, GuardFn] | None = None,
               text: str | None = None) -> Checked:
    """Read and check one task file (``text``: its content, when not read from disk)."""
    registries = _registries(nodes, skills, guards)
    doc, problems = read_document(path, registries, text=text)
    if doc.format == "xml" and isinstance(doc.data, dict):
        from harness_bt.btcpp import task_document  # a tree file: checked as the task it makes

        try:
            doc = task_document(doc)
        except DefinitionError as exc:
            problems = [*problems, Problem(exc.code, exc.message, doc.file, fix=exc.fix or "")]
    return check_document(doc, registries, problems=problems)


def check_spec(spec: TaskSpec, *, base_dir: PathLike | None = None,
               nodes: NodeRegistry | None = None, skills: SkillRegistry | None = None,
               guards: Mapping[str, GuardFn] | None = None) -> Checked:
    """Check a spec built in Python (its includes are relative to ``base_dir``, default the
    working directory). Problems name document paths instead of lines."""
    registries = _registries(nodes, skills, guards)
    here = Path(base_dir) if base_dir is not None else Path.cwd()
    doc = Document(f"<python: {spec.name}>", spec_to_data(spec), path=here / "<python>",
                   format="python")
    return check_document(doc, registries)


def validate_file(path: PathLike, **registries: Any) -> Report:
    """Every problem of a task file (an empty report: it is fine)."""
    return check_file(path, **registries).report


def validate_spec(spec: TaskSpec, **registries: Any) -> Report:
    """Every problem of a Python-built spec."""
    return check_spec(spec, **registries).report


def _passed(checked: Checked) -> Checked:
    checked.report.raise_for_errors(checked.doc.file)
    return checked


def load_spec(path: PathLike, *, nodes: NodeRegistry | None = None,
              skills: SkillRegistry | None = None,
              guards: Mapping[str, GuardFn] | None = None) -> TaskSpec:
    """The spec of a task file, once the whole file passed its checks."""
    checked = _passed(check_file(path, nodes=nodes, skills=skills, guards=guards))
    assert checked.spec is not None
    return checked.spec


def load_task(path: PathLike, *, nodes: NodeRegistry | None = None,
              skills: SkillRegistry | None = None,
              guards: Mapping[str, GuardFn] | None = None) -> Task:
    """Load a task file (YAML; or BehaviorTree.CPP XML through a YAML that includes it) and
    build its :class:`~harness_bt.Task`. Without ``skills`` / ``nodes`` the registries come
    from the entry points, as :class:`~harness_bt.TaskRunner` does; ``guards`` are Python
    guards by name."""
    return build(_passed(check_file(path, nodes=nodes, skills=skills, guards=guards)))


def build_task(spec: TaskSpec, *, base_dir: PathLike | None = None,
               nodes: NodeRegistry | None = None, skills: SkillRegistry | None = None,
               guards: Mapping[str, GuardFn] | None = None) -> Task:
    """Check a Python-built spec as a whole, then build its task."""
    return build(_passed(check_spec(spec, base_dir=base_dir, nodes=nodes, skills=skills,
                                    guards=guards)))


def neutral_form(path: PathLike, **registries: Any) -> dict[str, Any]:
    """The neutral dict form of a task file (what :meth:`Task.from_dict` receives)."""
    return to_neutral(_passed(check_file(path, **registries)))[0]
