"""Task documents end to end: the format (:mod:`~harness_bt.spec.model`, modelled in
pydantic), one reader per format (:mod:`~harness_bt.spec.readers`: YAML, BehaviorTree.CPP
XML, Python files; :mod:`~harness_bt.spec.builder` and :mod:`~harness_bt.spec.tree` to build
a spec in code), the expression language (:mod:`~harness_bt.spec.expr`), one validation pass
(:mod:`~harness_bt.spec.validate`: every problem at once, each with ``file:line:column``) and
the compilation to a :class:`~harness_bt.Task` (:mod:`~harness_bt.spec.compile`,
:mod:`~harness_bt.spec.trees`). Every format goes through one neutral model,
:class:`TaskSpec`; every document is checked as a whole before anything is built.

>>> from harness_bt.spec import load_task              # doctest: +SKIP
>>> task = load_task("trees/pick_cube.yaml")           # doctest: +SKIP

The names below are loaded on first use, so the run-time parts of the framework (node types
evaluating expressions, a Python-built task checking its chart) can use the low layers of this
package without loading the readers and the compiler.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_bt.spec.compile import compile_guard, compile_task, to_neutral
    from harness_bt.spec.dump import dump_yaml, spec_to_data
    from harness_bt.spec.library import Library
    from harness_bt.spec.loader import (
        TASK_SUFFIXES,
        build_task,
        check_file,
        check_spec,
        export_btcpp,
        import_btcpp,
        load_spec,
        load_task,
        neutral_form,
        validate_file,
        validate_spec,
    )
    from harness_bt.spec.model import (
        AtomicSpec,
        BudgetSpec,
        CompoundSpec,
        FinalSpec,
        HistorySpec,
        LibrarySpec,
        ParallelSpec,
        ParamSpec,
        TaskSpec,
        TransitionSpec,
    )
    from harness_bt.spec.problems import Problem, Report, Severity, SpecError
    from harness_bt.spec.readers import read_document
    from harness_bt.spec.readers.python import load_python, spec_from_task
    from harness_bt.spec.readers.yaml import read_yaml
    from harness_bt.spec.registries import Registries
    from harness_bt.spec.schema import render_schema, task_schema
    from harness_bt.spec.source import Document, Mark
    from harness_bt.spec.trees import build_tree, check_tree
    from harness_bt.spec.validate.check import Checked, check_document

_EXPORTS = {
    "harness_bt.spec.compile": ("compile_guard", "compile_task", "to_neutral"),
    "harness_bt.spec.dump": ("dump_yaml", "spec_to_data"),
    "harness_bt.spec.library": ("Library",),
    "harness_bt.spec.loader": ("TASK_SUFFIXES", "build_task", "check_file", "check_spec",
                               "export_btcpp", "import_btcpp", "load_spec", "load_task",
                               "neutral_form", "validate_file", "validate_spec"),
    "harness_bt.spec.model": ("AtomicSpec", "BudgetSpec", "CompoundSpec", "FinalSpec",
                              "HistorySpec", "LibrarySpec", "ParallelSpec", "ParamSpec", "TaskSpec",
                              "TransitionSpec"),
    "harness_bt.spec.problems": ("Problem", "Report", "Severity", "SpecError"),
    "harness_bt.spec.readers": ("read_document",),
    "harness_bt.spec.readers.python": ("load_python", "spec_from_task"),
    "harness_bt.spec.readers.yaml": ("read_yaml",),
    "harness_bt.spec.registries": ("Registries",),
    "harness_bt.spec.schema": ("render_schema", "task_schema"),
    "harness_bt.spec.source": ("Document", "Mark"),
    "harness_bt.spec.trees": ("build_tree", "check_tree"),
    "harness_bt.spec.validate.check": ("Checked", "check_document"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "TASK_SUFFIXES",
    "AtomicSpec",
    "BudgetSpec",
    "Checked",
    "CompoundSpec",
    "Document",
    "FinalSpec",
    "HistorySpec",
    "Library",
    "LibrarySpec",
    "Mark",
    "ParallelSpec",
    "ParamSpec",
    "Problem",
    "Registries",
    "Report",
    "Severity",
    "SpecError",
    "TaskSpec",
    "TransitionSpec",
    "build_task",
    "build_tree",
    "check_document",
    "check_file",
    "check_spec",
    "check_tree",
    "compile_guard",
    "compile_task",
    "dump_yaml",
    "export_btcpp",
    "import_btcpp",
    "load_python",
    "load_spec",
    "load_task",
    "neutral_form",
    "read_document",
    "read_yaml",
    "render_schema",
    "spec_from_task",
    "spec_to_data",
    "task_schema",
    "to_neutral",
    "validate_file",
    "validate_spec",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
