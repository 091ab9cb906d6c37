"""Tasks written in Python: load one from a ``.py`` file, and turn a core
:class:`~harness_bt.Task` back into a :class:`~harness_bt.authoring.model.TaskSpec` (so it can be
dumped as YAML) when its trees are node-spec dicts."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_bt.authoring import builder as b
from harness_bt.authoring.model import TaskSpec, TransitionSpec
from harness_bt.authoring.neutral import DictTree
from harness_bt.authoring.params import Binding, bind_values, check_value, describe, python_params
from harness_bt.errors import DefinitionError
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem, Report
from harness_bt.task import Compound, Final, History, Parallel, Phase, PhaseSpec, Task

__all__ = ["load_python", "spec_from_task"]

_PY_KINDS = {str: "string", int: "integer", float: "number", bool: "boolean", list: "vector"}
_NAMES = ("spec", "SPEC", "task", "TASK", "build_spec", "build_task", "build", "make_task")


def load_python(path: str | os.PathLike[str], *,
                params: Mapping[str, Any] | None = None) -> TaskSpec | Task:
    """Import a Python task file and return its task: the first of ``spec``, ``task``,
    ``build_spec``, ``build_task``, ``build``, ``make_task``, ``<stem>``, ``<stem>_task``,
    ``<stem>_spec`` it defines (a :class:`TaskSpec` or :class:`~harness_bt.Task`, or a
    function returning one), else its only module-level one.

    A function's keyword parameters are the task's parameters (their types from the
    annotations, else from the defaults; no default: required), or the module's ``PARAMS``
    (name -> :class:`~harness_bt.authoring.model.ParamSpec` or its dict) declares them: ``params``
    (name -> value, or text read by the declared type) are checked against them and passed
    in, and a :class:`~harness_bt.Task` it returns carries the values. A ``TaskSpec`` that
    declares ``params`` itself is bound when it is built (``load_task``)."""
    path = Path(path)
    name = f"harness_task_{path.stem}_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise DefinitionError("INVALID_TASK_FILE", f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except DefinitionError:
        raise
    except Exception as exc:
        raise _raised(path, "importing it", exc) from exc
    finally:
        sys.modules.pop(name, None)
    given = dict(params or {})
    names = [*_NAMES, path.stem, f"{path.stem}_task", f"{path.stem}_spec"]
    for attr in names:
        value = getattr(module, attr, None)
        if value is None:
            continue
        binding = Binding()
        if callable(value) and not isinstance(value, TaskSpec | Task):
            binding.declared = python_params(value, getattr(module, "PARAMS", None))
            _bind(binding, given, path, attr)
            try:
                inspect.signature(value).bind(**binding.values)
            except TypeError as exc:
                raise DefinitionError(
                    "INVALID_TASK_FILE", f"{path}: {attr}() does not take every parameter "
                    f"PARAMS declares ({', '.join(sorted(binding.values))}): {exc}",
                    fix="give the function a keyword parameter for each name in PARAMS"
                ) from None
            try:
                value = value(**binding.values)
            except DefinitionError:
                raise
            except Exception as exc:
                raise _raised(path, f"{attr}()", exc) from exc
        if isinstance(value, TaskSpec | Task):
            return _carry(value, binding, given, path)
    found = [v for v in vars(module).values() if isinstance(v, TaskSpec | Task)]
    if len(found) == 1:
        return _carry(found[0], Binding(), given, path)
    raise DefinitionError(
        "INVALID_TASK_FILE", f"{path}: found no task (looked for {', '.join(names)} and for one "
        "module-level TaskSpec or Task)", fix="define `def task() -> Task` (or TaskSpec)")


def _raised(path: Path, what: str, exc: Exception) -> DefinitionError:
    """The error for an exception the task file's own code raised: where in the file (its
    deepest frame there) and what."""
    line = next((f.lineno for f in reversed(traceback.extract_tb(exc.__traceback__))
                 if Path(f.filename) == path), None)
    return DefinitionError(
        "INVALID_TASK_FILE", f"{path}: {what} raised {type(exc).__name__}: {exc}",
        where=f"{path}:{line}" if line else str(path), fix="fix the error in the task file")


def _bind(binding: Binding, given: dict[str, Any], path: Path, function: str) -> None:
    """Bind a task function's parameters (those ``given`` names it declares); raise on any
    problem."""
    for pname, decl in binding.declared.items():
        if decl.required:
            continue
        try:
            binding.values[pname] = check_value(decl, decl.default)
        except ValueError as exc:
            binding.problems.append(Problem(
                "INVALID_PARAM_DEFAULT", f"the default of parameter {pname!r} of {function}() "
                f"must be {describe(decl)}: {exc}", str(path), fix="fix the default"))
    mine = {k: v for k, v in given.items() if k in binding.declared}
    bind_values(binding, mine, origin="params",
                where=lambda pname: f"{path} (parameter {pname!r} of {function}())")
    Report(list(binding.problems)).raise_for_errors(str(path))


def _carry(made: TaskSpec | Task, binding: Binding, given: dict[str, Any],
           path: Path) -> TaskSpec | Task:
    """The made task with the bound values; values for names nothing declares refused."""
    rest = sorted(k for k in given if k not in binding.declared)
    if isinstance(made, TaskSpec) and made.params:
        rest = [k for k in rest if k not in made.params]
    if rest:
        known = sorted({*binding.declared, *(made.params if isinstance(made, TaskSpec)
                                             else ())})
        problems = [Problem("UNDECLARED_PARAM", f"the task declares no parameter {k!r}; its "
                            f"parameters: {', '.join(known) or '(none)'}"
                            f"{did_you_mean(k, known)}", f"params {k}={_text(given[k])}",
                            fix="declare it as a keyword parameter of task() (or in PARAMS)")
                    for k in rest]
        Report(problems).raise_for_errors(str(path))
    if isinstance(made, Task) and binding.values:
        made.params = {**binding.values, **made.params}
    return made


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _transitions(spec: PhaseSpec, guards: dict[str, str]) -> list[TransitionSpec]:
    out = []
    for t in spec.transitions:
        when = guard = None
        if t.guard is not None:
            text = getattr(t.guard, "expression", None)
            if text is not None and getattr(t.guard, "inline", False):
                when = text
            else:
                guard = getattr(t.guard, "__name__", "guard")
                if text is not None:
                    guards[guard] = text
        out.append(b.on(t.event, t.target, reason=t.reason, guard=guard, when=when,
                        description=t.description))
    return out


def _phase(spec: PhaseSpec, guards: dict[str, str]) -> Any:
    if isinstance(spec, Final):
        return b.final(spec.id, reason=None if spec.reason == spec.id else spec.reason,
                       description=spec.description)
    if isinstance(spec, History):
        return b.history(spec.id, deep=spec.deep, default=spec.default,
                         description=spec.description)
    transitions = _transitions(spec, guards)
    if isinstance(spec, Compound):
        return b.compound(spec.id, [_phase(c, guards) for c in spec.phases], initial=spec.initial,
                          transitions=transitions, description=spec.description)
    if isinstance(spec, Parallel):
        return b.parallel(spec.id, [_phase(c, guards) for c in spec.regions],
                          transitions=transitions, description=spec.description)
    assert isinstance(spec, Phase)
    tree = spec.tree.spec if isinstance(spec.tree, DictTree) else spec.tree
    if not isinstance(tree, Mapping):
        raise DefinitionError(
            "NOT_A_DOCUMENT", f"phase {spec.id!r}: its tree is a Python factory, which has no "
            "YAML form", fix="give the tree as a node-spec dict, or build the task with "
            "harness_bt.authoring.builder and harness_bt.authoring.tree")
    return b.phase(spec.id, tree, transitions=transitions, description=spec.description)


def spec_from_task(task: Task) -> TaskSpec:
    """The spec of a core task whose trees are node-spec dicts (guards by name; guards the
    spec loader compiled keep their expressions)."""
    guards: dict[str, str] = {}
    phases = [_phase(p, guards) for p in task.phases]
    budget = None
    if task.budget.max_retries is not None or task.budget.max_time_s is not None:
        budget = b.budget(max_retries=task.budget.max_retries,
                          max_time_s=task.budget.max_time_s)
    params = {name: {"type": _PY_KINDS.get(type(value), "string"), "default": value}
              for name, value in task.params.items()}
    return b.task(task.name, phases, initial=task.initial, budget=budget,
                  description=task.description, instruction=task.instruction,
                  version=task.version, blackboard=task.blackboard, guards=guards,
                  scene=task.scene, params=params)
