"""Task documents end to end: the format (:mod:`~harness_bt.authoring.model`, modelled in
pydantic), one reader per format (:mod:`~harness_bt.authoring.readers`: YAML, BehaviorTree.CPP
XML, Python files; :mod:`~harness_bt.authoring.builder` and
:mod:`~harness_bt.authoring.tree` to build a spec in code), the expression language
(:mod:`~harness_bt.expr`), one validation pass
(:mod:`~harness_bt.authoring.validate`: every problem at once, each with ``file:line:column``) and
the compilation to a :class:`~harness_bt.Task` (:mod:`~harness_bt.authoring.compile`,
:mod:`~harness_bt.authoring.build`). Every format goes through one neutral model,
:class:`TaskSpec`; every document is checked as a whole before anything is built.

>>> from harness_bt.authoring import load_task              # doctest: +SKIP
>>> task = load_task("trees/pick_cube.yaml")           # doctest: +SKIP

The names below are loaded on first use, so the run-time parts of the framework (node types
evaluating expressions, a Python-built task checking its chart) can use the low layers of this
package without loading the readers and the compiler.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_bt.authoring.build import build_tree, check_tree
    from harness_bt.authoring.compile import compile_guard, compile_task, to_neutral
    from harness_bt.authoring.library import Library
    from harness_bt.authoring.loader import (
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
    from harness_bt.authoring.model import (
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
    from harness_bt.authoring.neutral import DictTree, new_task, task_from_dict
    from harness_bt.authoring.readers import read_document
    from harness_bt.authoring.readers.python import load_python, spec_from_task
    from harness_bt.authoring.readers.yaml import read_yaml
    from harness_bt.authoring.registries import Registries
    from harness_bt.authoring.schema import render_schema, task_schema
    from harness_bt.authoring.validate.check import Checked, check_document
    from harness_bt.authoring.writers.yaml import dump_yaml, spec_to_data
    from harness_bt.problems import Problem, Report, Severity, SpecError
    from harness_bt.source import Document, Mark

_EXPORTS = {
    "harness_bt.authoring.compile": ("compile_guard", "compile_task", "to_neutral"),
    "harness_bt.authoring.writers.yaml": ("dump_yaml", "spec_to_data"),
    "harness_bt.authoring.library": ("Library",),
    "harness_bt.authoring.loader": ("TASK_SUFFIXES", "build_task", "check_file", "check_spec",
                               "export_btcpp", "import_btcpp", "load_spec", "load_task",
                               "neutral_form", "validate_file", "validate_spec"),
    "harness_bt.authoring.model": ("AtomicSpec", "BudgetSpec", "CompoundSpec", "FinalSpec",
                              "HistorySpec", "LibrarySpec", "ParallelSpec", "ParamSpec", "TaskSpec",
                              "TransitionSpec"),
    "harness_bt.authoring.neutral": ("DictTree", "new_task", "task_from_dict"),
    "harness_bt.problems": ("Problem", "Report", "Severity", "SpecError"),
    "harness_bt.authoring.readers": ("read_document",),
    "harness_bt.authoring.readers.python": ("load_python", "spec_from_task"),
    "harness_bt.authoring.readers.yaml": ("read_yaml",),
    "harness_bt.authoring.registries": ("Registries",),
    "harness_bt.authoring.schema": ("render_schema", "task_schema"),
    "harness_bt.source": ("Document", "Mark"),
    "harness_bt.authoring.build": ("build_tree", "check_tree"),
    "harness_bt.authoring.validate.check": ("Checked", "check_document"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "TASK_SUFFIXES",
    "AtomicSpec",
    "BudgetSpec",
    "Checked",
    "CompoundSpec",
    "DictTree",
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
    "new_task",
    "read_document",
    "read_yaml",
    "render_schema",
    "spec_from_task",
    "spec_to_data",
    "task_from_dict",
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
