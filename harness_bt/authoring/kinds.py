"""What a YAML file given to ``harness validate`` is, and the checks of the two kinds that are
not tasks: a scene document (``objects:`` and no ``phases:``) and a library of subtrees
(``subtrees:`` or ``guards:`` and no ``phases:``, like ``trees/steps.yaml``, which tasks
include). Everything else is read as a task."""

from __future__ import annotations

import os
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from harness_bt.authoring.expand import Expander
from harness_bt.authoring.library import Library
from harness_bt.authoring.readers import read_document
from harness_bt.authoring.registries import Registries
from harness_bt.authoring.scenes import check_scene
from harness_bt.authoring.validate.nodes import check_nodes
from harness_bt.authoring.validate.structure import check_library, find_trees, is_template
from harness_bt.problems import Report

__all__ = ["DocumentKind", "check_library_file", "check_scene_file", "document_kind"]

_NAMES = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class DocumentKind(StrEnum):
    TASK = "task"
    SCENE = "scene"
    LIBRARY = "library"


def document_kind(path: str | os.PathLike[str], text: str | None = None) -> DocumentKind:
    """Task, scene or subtree library, from the top-level keys of a YAML / JSON file (any
    other file, or one that does not parse, is a task: the task checks say what is wrong)."""
    file = Path(path)
    if file.suffix.lower() not in (".yaml", ".yml", ".json"):
        return DocumentKind.TASK
    try:
        data = yaml.safe_load(text if text is not None else file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return DocumentKind.TASK
    if not isinstance(data, dict) or "phases" in data:
        return DocumentKind.TASK
    if "objects" in data:
        return DocumentKind.SCENE
    if "subtrees" in data or "guards" in data:
        return DocumentKind.LIBRARY
    return DocumentKind.TASK


def check_scene_file(path: str | os.PathLike[str],
                     params: dict[str, Any] | None = None) -> tuple[str, Report]:
    """A scene document checked on its own (its parameters at their defaults, or ``params``):
    a summary line and every problem."""
    scene, report = check_scene(path, params=params)
    if scene is None:
        return "", report
    judged = "judged by its success condition" if scene.judged else "not judged"
    return (f"scene {scene.name}: {len(scene.spec.objects)} objects "
            f"({', '.join(scene.spec.objects)}), {judged}"), report


def check_library_file(path: str | os.PathLike[str],
                       registries: Registries | None = None) -> tuple[str, Report]:
    """A library of subtrees (and guards) checked on its own: its structure, its includes,
    every subtree that takes no inputs node by node, and every subtree use in it naming a
    subtree that exists. A subtree with inputs (``{obj}``) has its nodes checked where a task
    uses it, with the values it is given."""
    registries = registries or Registries.installed()
    report = Report()
    doc, problems = read_document(path, registries)
    report.extend(problems)
    if doc.data is None:
        return "", report
    report.extend(check_library(doc, registries))
    library = Library.gather(doc, registries, report)
    for d in library.documents:
        for tree_path in find_trees(d.data):
            if not is_template(d, tree_path, registries):
                report.extend(check_nodes(d, tree_path, registries))
    data = doc.data if isinstance(doc.data, dict) else {}
    inputs = {name: "{" + name + "}" for name in _NAMES.findall(yaml.safe_dump(data))}
    expander = Expander(library, registries.models, report, params=inputs)
    for name in data.get("subtrees") or {}:
        sub = library.subtrees.get(name)
        if sub is not None and sub.doc is doc:
            expander.expand(sub.tree, doc, sub.path, stack=(name,))
    subtrees = sorted(n for n, s in library.subtrees.items() if s.doc is doc)
    return (f"library: {len(subtrees)} subtrees ({', '.join(subtrees)})"
            + (f", {len(library.guards)} guards" if library.guards else "")), report
