"""The task library is written once in YAML (``trees/*.yaml``); the Python builders
(``skills/library.py`` and the trees of ``skills/phase_trees.py``) are held to it, so they cannot
drift: every builder is used by a ``trees/<name>.py`` beside its ``trees/<name>.yaml``, and each
such pair builds the same task for its defaults and for every other object of its scene in
each object parameter (and a moved vector), or refuses the same binding with the same code."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import skills.library
from harness_bt.authoring import load_spec, load_task
from harness_bt.authoring.scenes import load_scene
from harness_bt.errors import HarnessError

TREES = Path(__file__).resolve().parents[2] / "trees"


def _builders_used(py: Path) -> set[str]:
    """The names a task file imports from ``skills.library``."""
    tree = ast.parse(py.read_text(), filename=str(py))
    return {alias.name for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "skills.library"
            for alias in node.names}


PYTHON_FILES = sorted(TREES.glob("*.py"))


def _bindings(name: str) -> list[dict[str, Any]]:
    """The defaults ({}), then one parameter moved at a time: each other object of the scene
    for an object parameter, a shifted vector for a vector one."""
    spec = load_spec(TREES / f"{name}.yaml")
    assert spec.scene is not None, f"trees/{name}.yaml names no scene"
    objects = list(load_scene(spec.scene).spec.objects)
    out: list[dict[str, Any]] = [{}]
    for param, decl in spec.params.items():
        if decl.type == "object":
            out += [{param: o} for o in objects if o != decl.default]
        elif decl.type == "vector":
            out.append({param: [v + 0.05 for v in decl.default]})
    return out


CASES = [(py.stem, binding) for py in PYTHON_FILES for binding in _bindings(py.stem)]


def _build(path: Path, binding: dict[str, Any]) -> tuple[Any, ...]:
    try:
        task = load_task(path, params=binding or None)
    except HarnessError as exc:
        return ("refused", exc.code)
    return ("built", task.name, task.structure(), task.blackboard, task.params, task.scene)


def test_every_builder_of_the_library_is_held_to_a_yaml_task() -> None:
    builders = {n for n in skills.library.__all__ if n.endswith("_task")}
    used = set().union(*(_builders_used(py) for py in PYTHON_FILES))
    assert builders <= used, f"not checked against any trees/*.yaml: {sorted(builders - used)}"
    assert all(py.with_suffix(".yaml").exists() for py in PYTHON_FILES)


@pytest.mark.parametrize(("name", "binding"), CASES,
                         ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in b.items()) or 'defaults'}"
                              for n, b in CASES])
def test_the_python_builder_makes_the_yaml_task_for_every_binding(
        name: str, binding: dict[str, Any]) -> None:
    from_yaml = _build(TREES / f"{name}.yaml", binding)
    assert _build(TREES / f"{name}.py", binding) == from_yaml
    if not binding:
        assert from_yaml[0] == "built"
