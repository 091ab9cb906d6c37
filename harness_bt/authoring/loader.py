"""Load, check and build tasks: the entry points of :mod:`harness_bt.authoring`.

Every path goes the same way: read (a reader of :mod:`harness_bt.authoring.readers`) -> check the
whole document (:func:`harness_bt.authoring.validate.check.check_document`) -> build the core task
through the neutral dict form. Nothing is built unless the whole document passed; a refused
document raises :class:`~harness_bt.problems.SpecError` listing every problem with its
place. :func:`load_task` takes a task file of any format the project reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_bt.authoring.compile import compile_task, to_neutral
from harness_bt.authoring.library import Library
from harness_bt.authoring.locate import find_include
from harness_bt.authoring.model import TaskSpec
from harness_bt.authoring.readers import read_document
from harness_bt.authoring.readers.btcpp import read_btcpp, task_document
from harness_bt.authoring.readers.btcpp.bindings import read_palette
from harness_bt.authoring.readers.python import load_python, spec_from_task
from harness_bt.authoring.registries import GuardFn, Registries
from harness_bt.authoring.validate.check import Checked, check_document
from harness_bt.authoring.writers.btcpp import export_xml
from harness_bt.authoring.writers.yaml import spec_to_data
from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import NodeType
from harness_bt.plugins import Registry, did_you_mean
from harness_bt.problems import Problem, Report, Severity, SpecError
from harness_bt.skill import SkillRegistry
from harness_bt.source import Document
from harness_bt.task import Task

__all__ = ["TASK_SUFFIXES", "build_task", "check_file", "check_spec", "drop_included",
           "export_btcpp", "import_btcpp",
           "load_spec", "load_task", "neutral_form", "validate_file", "validate_spec"]

PathLike = str | os.PathLike[str]
NodeTypes = Registry[NodeType]
Params = Mapping[str, Any]
#: The task files :func:`load_task` reads.
TASK_SUFFIXES = (".yaml", ".yml", ".json", ".xml", ".py")


def check_file(path: PathLike, *, nodes: NodeTypes | None = None,
               skills: SkillRegistry | None = None,
               guards: Mapping[str, GuardFn] | None = None,
               text: str | None = None, params: Params | None = None,
               scene: str | None = None) -> Checked:
    """Read and check one task file of any format :data:`TASK_SUFFIXES` names (``text``: its
    content, when not read from disk) against the given registries (default: what is
    installed), its parameters bound to ``params`` (name -> value, or text read by the
    declared type) over their defaults; ``scene``: the scene it will run in when not its own
    (:func:`~harness_bt.authoring.validate.check.check_document`). A Python file is imported
    and the task it makes is checked
    (:func:`~harness_bt.authoring.readers.python.check_python`)."""
    registries = Registries.installed(nodes=nodes, skills=skills, guards=guards)
    if Path(path).suffix.lower() == ".py" and text is None:
        return _check_python(Path(path), registries, params, scene)
    doc, problems = read_document(path, registries, text=text)
    if doc.format == "xml" and isinstance(doc.data, dict):
        try:  # a tree file: checked as the task it makes
            doc = task_document(doc)
            problems = [*problems, *drop_included(doc, registries)]
        except DefinitionError as exc:
            problems = [*problems, Problem(exc.code, exc.message, doc.file, fix=exc.fix or "")]
    return check_document(doc, registries, problems=problems, params=params, scene=scene)


def _check_python(file: Path, registries: Registries, params: Params | None,
                  scene: str | None = None) -> Checked:
    """A Python task file: imported (:func:`load_python`), then the task it makes is checked.
    A ``TaskSpec``, or a ``Task`` whose trees are node-spec dicts, goes through the document
    checks (problems name document paths); a ``Task`` of Python tree factories was checked
    when it was built, and here its trees are built and the skills they command looked up
    (``Checked.task`` holds it, ``spec`` is None). A file that cannot be imported or makes no
    task is one problem."""
    here = Document(str(file), None, path=file, format="python")
    made: TaskSpec | Task | None = None
    try:
        made = load_python(file, params=params)
        spec = made if isinstance(made, TaskSpec) else spec_from_task(made)
    except SpecError as exc:
        return Checked(here, exc.report, None, Library(documents=[here]), registries)
    except DefinitionError as exc:
        if exc.code != "NOT_A_DOCUMENT" or not isinstance(made, Task):
            problem = Problem(exc.code, exc.message, exc.where or str(file), fix=exc.fix or "")
            return Checked(here, Report([problem]), None, Library(documents=[here]), registries)
        return _check_built(made, here, registries)
    doc = Document(str(file), spec_to_data(spec), path=file, format="python")
    mine = {k: v for k, v in (params or {}).items() if isinstance(made, TaskSpec)
            and k in spec.params}
    return check_document(doc, registries, params=mine, origin="params", scene=scene)


def _check_built(task: Task, doc: Document, registries: Registries) -> Checked:
    """A task built from Python tree factories: its trees are built (every problem reported)
    and each skill they command must be known."""
    report = Report()
    try:
        used = task.skill_names(registries.nodes)
    except DefinitionError as exc:
        problems = (exc.details or {}).get("problems") or [exc.message]
        report.extend(Problem("INVALID_TREE", str(p), doc.file,
                              fix="fix the tree factory of the phase named") for p in problems)
        used = set()
    known = registries.skills.names() if registries.skills is not None else []
    for name in sorted(used - set(known)) if registries.skills is not None else ():
        report.add(Problem("UNKNOWN_SKILL", f"a tree of task {task.name!r} commands skill "
                           f"{name!r}, which is not installed; known: {', '.join(known)}"
                           f"{did_you_mean(name, known)}", doc.file,
                           fix="use a known skill, or install the package that provides it"))
    return Checked(doc, report, None, Library(documents=[doc]), registries,
                   params=dict(task.params), task=task)


def check_spec(spec: TaskSpec, *, base_dir: PathLike | None = None,
               nodes: NodeTypes | None = None, skills: SkillRegistry | None = None,
               guards: Mapping[str, GuardFn] | None = None,
               params: Params | None = None, scene: str | None = None) -> Checked:
    """Check a spec built in Python (its includes are relative to ``base_dir``, default the
    working directory; ``scene`` as :func:`check_file`'s). Problems name document paths
    instead of lines."""
    registries = Registries.installed(nodes=nodes, skills=skills, guards=guards)
    here = Path(base_dir) if base_dir is not None else Path.cwd()
    doc = Document(f"<python: {spec.name}>", spec_to_data(spec), path=here / "<python>",
                   format="python")
    return check_document(doc, registries, params=params, origin="params", scene=scene)


def validate_file(path: PathLike, **registries: Any) -> Report:
    """Every problem of a task file (an empty report: it is fine)."""
    return check_file(path, **registries).report


def validate_spec(spec: TaskSpec, **registries: Any) -> Report:
    """Every problem of a Python-built spec."""
    return check_spec(spec, **registries).report


def _passed(checked: Checked) -> Checked:
    checked.report.raise_for_errors(checked.doc.file)
    return checked


def _document(checked: Checked) -> Checked:
    """A checked file that has a document form (a Python file's task of tree factories has
    none)."""
    checked = _passed(checked)
    if checked.spec is None and checked.task is not None:
        raise DefinitionError(
            "NOT_A_DOCUMENT", f"{checked.doc.file}: task {checked.task.name!r} is built from "
            "Python tree factories, which have no document form", where=checked.doc.file,
            fix="load it with load_task(), or write its trees as node-spec dicts "
                "(harness_bt.authoring.builder and harness_bt.authoring.tree)")
    return checked


def load_spec(path: PathLike, *, nodes: NodeTypes | None = None,
              skills: SkillRegistry | None = None,
              guards: Mapping[str, GuardFn] | None = None,
              params: Params | None = None) -> TaskSpec:
    """The spec of a task document, once the whole file passed its checks (with ``params``
    bound, so a refused value is an error here too; the spec keeps its ``{name}`` uses)."""
    checked = _document(check_file(path, nodes=nodes, skills=skills, guards=guards,
                                   params=params))
    assert checked.spec is not None
    return checked.spec


def load_task(path: PathLike, *, nodes: NodeTypes | None = None,
              skills: SkillRegistry | None = None,
              guards: Mapping[str, GuardFn] | None = None,
              params: Params | None = None, scene: str | None = None) -> Task:
    """The task in a file of any format :data:`TASK_SUFFIXES` names, checked as a whole and
    built: a YAML / JSON document, a BehaviorTree.CPP XML tree file (run as a one-phase task),
    or a Python file (a ``TaskSpec`` it makes is checked like a document; a ready
    :class:`~harness_bt.Task` is taken as it is). Without ``skills`` / ``nodes`` the
    registries are what is installed, as :class:`~harness_bt.TaskRunner` has them; ``guards``
    are Python guards by name; ``params`` the values of the task's parameters (name -> value,
    or text read by the declared type, as ``--set`` gives it), over their defaults; ``scene``
    the scene it will run in when not the one it names (``--scene``: its loops' groups are
    that scene's)."""
    file = Path(path)
    if not file.is_file():
        raise DefinitionError("TASK_NOT_FOUND", f"no task file at {str(file)!r}", where=str(file),
                              fix="give the path of a task file, e.g. trees/pick_cube.yaml")
    suffix = file.suffix.lower()
    if suffix not in TASK_SUFFIXES:
        raise DefinitionError("UNKNOWN_TASK_FORMAT", f"{file}: unknown task file type "
                              f"{file.suffix!r}", where=str(file),
                              fix=f"use one of {', '.join(TASK_SUFFIXES)}")
    if suffix == ".py":
        made = load_python(file, params=params)
        if isinstance(made, Task):
            return made
        return build_task(made, base_dir=file.parent, nodes=nodes, skills=skills,
                          guards=guards, params={k: v for k, v in (params or {}).items()
                                                 if k in made.params}, scene=scene)
    return compile_task(_passed(check_file(file, nodes=nodes, skills=skills, guards=guards,
                                           params=params, scene=scene)))


def build_task(spec: TaskSpec, *, base_dir: PathLike | None = None,
               nodes: NodeTypes | None = None, skills: SkillRegistry | None = None,
               guards: Mapping[str, GuardFn] | None = None,
               params: Params | None = None, scene: str | None = None) -> Task:
    """Check a Python-built spec as a whole (``params``: its parameters' values; ``scene``
    as :func:`load_task`'s), then build its task."""
    return compile_task(_passed(check_spec(spec, base_dir=base_dir, nodes=nodes, skills=skills,
                                           guards=guards, params=params, scene=scene)))


def neutral_form(path: PathLike, **registries: Any) -> dict[str, Any]:
    """The neutral dict form of a task file (what
    :func:`~harness_bt.authoring.neutral.task_from_dict` receives)."""
    return to_neutral(_document(check_file(path, **registries)))[0]


def import_btcpp(path: PathLike, *, tree: str | None = None, name: str | None = None,
                 skills: SkillRegistry | None = None, nodes: NodeTypes | None = None,
                 budget: Mapping[str, Any] | None = None,
                 palette: PathLike | None = None) -> TaskSpec:
    """The task of a BehaviorTree.CPP v4 file: the one ``export-xml`` wrote, or one that
    runs one of its trees (see :func:`~harness_bt.authoring.readers.btcpp.task_document`), for
    ``harness import-xml``; ``budget`` when the file gives none (default
    :data:`~harness_bt.authoring.readers.btcpp.DEFAULT_BUDGET`). The whole result is checked
    (problems point into the XML). ``palette``: a file binding the user's own node IDs to
    skills (:mod:`~harness_bt.authoring.readers.btcpp.bindings`)."""
    registries = Registries.installed(nodes=nodes, skills=skills)
    bindings = read_palette(palette, registries) if palette is not None else None
    xml, problems = read_btcpp(path, registries, palette=bindings)
    Report(list(problems)).raise_for_errors(str(path))
    doc = task_document(xml, tree=tree, name=name, budget=dict(budget or {}) or None)
    checked = check_document(doc, registries, problems=drop_included(doc, registries))
    checked.report.raise_for_errors(str(path))
    assert checked.spec is not None
    return checked.spec


def drop_included(doc: Document, registries: Registries) -> list[Problem]:
    """An exported task's file holds the trees of the files it includes too (so Groot2 shows
    them); they are taken from those files, and one changed in the XML is reported (a
    warning: edit the included file instead)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    subtrees = data.get("subtrees")
    if not data.get("includes") or not isinstance(subtrees, dict) or not subtrees:
        return []
    probe = Document(doc.file, {"includes": data["includes"]}, path=doc.path, format="xml")
    library = Library.gather(probe, registries, Report())
    out = []
    for name, sub in library.subtrees.items():
        if name in subtrees and sub.doc is not probe:
            tree = subtrees.pop(name)
            if tree != sub.tree:
                out.append(Problem(
                    "INCLUDED_TREE_CHANGED", f"tree {name!r} differs from the one in "
                    f"{sub.doc.file}, which the task includes: the included one is used",
                    doc.where(("subtrees", name), key=True), severity=Severity.WARNING,
                    fix=f"make the change in {sub.doc.file}", path=f"subtrees.{name}"))
    if not subtrees:
        del data["subtrees"]
    return out


def export_btcpp(path: PathLike, *, out_dir: PathLike | None = None,
                 nodes: NodeTypes | None = None, skills: SkillRegistry | None = None,
                 guards: Mapping[str, GuardFn] | None = None) -> str:
    """A task file as BehaviorTree.CPP v4 XML for Groot2 (``harness export-xml``, see
    :mod:`~harness_bt.authoring.writers.btcpp`), once the whole file passed its checks;
    ``out_dir``: where the XML goes, so its includes stay relative to it."""
    checked = _passed(check_file(path, nodes=nodes, skills=skills, guards=guards))
    assert checked.spec is not None
    data = spec_to_data(checked.spec)
    if data.get("includes") and out_dir is not None:
        here = Path(path).resolve().parent
        data["includes"] = [os.path.relpath(find_include(inc, here)[0] or here / inc,
                                            Path(out_dir).resolve())
                            for inc in data["includes"]]
    scene = data.get("scene")
    if isinstance(scene, str) and out_dir is not None and \
            ("/" in scene or scene.lower().endswith((".yaml", ".yml", ".json"))):
        data["scene"] = os.path.relpath(Path(path).resolve().parent / scene,
                                        Path(out_dir).resolve())  # a scene file stays found
    included = {name: sub.tree for name, sub in checked.library.subtrees.items()
                if sub.doc is not checked.doc}
    return export_xml(data, checked.registries, included=included)
