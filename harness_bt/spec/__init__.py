"""Task documents: the YAML format (modelled in pydantic), its reader, the Python builder, the
dumper and the JSON Schema. Every format goes through one neutral model, :class:`TaskSpec`;
every document is checked as a whole (:mod:`harness_bt.validate`) before anything is built.

>>> from harness_bt.spec import load_task              # doctest: +SKIP
>>> task = load_task("trees/pick_cube.yaml")           # doctest: +SKIP
"""

from harness_bt.spec.build import compile_guard, to_neutral
from harness_bt.spec.dump import dump_yaml, spec_to_data
from harness_bt.spec.library import Library, Registries
from harness_bt.spec.loader import (
    build_task,
    check_file,
    check_spec,
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
    LibrarySpec,
    ParallelSpec,
    TaskSpec,
    TransitionSpec,
)
from harness_bt.spec.problems import Problem, Report, Severity, SpecError
from harness_bt.spec.python import load_python, spec_from_task
from harness_bt.spec.schema import render_schema, task_schema
from harness_bt.spec.source import Document, Mark, read_yaml

__all__ = [
    "AtomicSpec",
    "BudgetSpec",
    "CompoundSpec",
    "Document",
    "FinalSpec",
    "Library",
    "LibrarySpec",
    "Mark",
    "ParallelSpec",
    "Problem",
    "Registries",
    "Report",
    "Severity",
    "SpecError",
    "TaskSpec",
    "TransitionSpec",
    "build_task",
    "check_file",
    "check_spec",
    "compile_guard",
    "dump_yaml",
    "load_python",
    "load_spec",
    "load_task",
    "neutral_form",
    "read_yaml",
    "render_schema",
    "spec_from_task",
    "spec_to_data",
    "task_schema",
    "to_neutral",
    "validate_file",
    "validate_spec",
]
