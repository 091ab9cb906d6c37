"""One document, checked as a whole before anything is built: structure, includes, every
node, the statechart, the blackboard flow and the budgets. Every problem is reported at once,
in file order."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from harness_bt.authoring.domains import SceneFacts, facts_loader
from harness_bt.authoring.expand import Expander
from harness_bt.authoring.library import Library
from harness_bt.authoring.model import TaskSpec
from harness_bt.authoring.params import bind_params, unused_params
from harness_bt.authoring.registries import Registries
from harness_bt.authoring.validate.blackboard import check_blackboard, guard_reads
from harness_bt.authoring.validate.instructions import check_instructions
from harness_bt.authoring.validate.nodes import check_nodes, iter_nodes
from harness_bt.authoring.validate.params import check_copy, substitute_phases
from harness_bt.authoring.validate.structure import check_task, find_trees, is_template
from harness_bt.expr import ExprError, compile_expr
from harness_bt.problems import Problem, Report, Severity
from harness_bt.source import Document, format_path
from harness_bt.task.rules import GUARD_ROOTS, check_chart, walk_phases

__all__ = ["Checked", "check_document"]

_WHERE = re.compile(r"^(?P<file>.*):(?P<line>\d+):(?P<col>\d+)$")


@dataclass
class Checked:
    """A checked document: the report, the spec (None when its skeleton is invalid), the
    library of subtrees and guards it can use, and its parameters' values (name -> value).
    ``task``: a Python file's task built from tree factories, which has no document form
    (``spec`` is then None)."""

    doc: Document
    report: Report
    spec: TaskSpec | None
    library: Library
    registries: Registries = field(repr=False)
    params: dict[str, Any] = field(default_factory=dict)
    task: Any = None
    #: the facts of the scene the task names (read when first needed: a for_each over a
    #: group or an expression)
    scene: Callable[[], SceneFacts | None] | None = field(default=None, repr=False)


def _budgets(spec: TaskSpec, doc: Document, registries: Registries) -> list[Problem]:
    """Node retry bounds that the task budget can never pay for."""
    limit = spec.budget.max_retries if spec.budget is not None else None
    if limit is None:
        return []
    out = []
    for at in walk_phases(spec.phases):
        if at.phase.kind != "atomic":
            continue
        for path, node, tag in iter_nodes(doc, (*at.path, "tree"), registries):
            key = {"retry": "attempts", "recover": "budget"}.get(tag, "")
            value = node.get(key) if key else None
            if isinstance(value, int) and not isinstance(value, bool) and value - 1 > limit:
                out.append(Problem(
                    "RETRIES_EXCEED_TASK_BUDGET",
                    f"{tag} {node.get('name')!r} allows {value - 1} retries but the task "
                    f"budget has max_retries={limit}: the task budget runs out first",
                    doc.where((*path, key)), severity=Severity.WARNING,
                    fix=f"lower {key} to {limit + 1} or raise the task's max_retries",
                    path=format_path((*path, key))))
    return out


def _order(problems: list[Problem], files: list[str]) -> list[Problem]:
    def key(item: tuple[int, Problem]) -> tuple[int, int, int, int]:
        i, p = item
        m = _WHERE.match(p.where)
        if m is None:
            return (len(files), 0, 0, i)
        rank = files.index(m["file"]) if m["file"] in files else len(files)
        return (rank, int(m["line"]), int(m["col"]), i)
    return [p for _, p in sorted(enumerate(problems), key=key)]


def check_document(doc: Document, registries: Registries, *,
                   problems: list[Problem] | None = None,
                   params: Mapping[str, Any] | None = None, origin: str = "--set",
                   scene: str | None = None) -> Checked:
    """Check a task document (``problems``: what reading it found already) with its
    parameters bound to ``params`` over their defaults (``origin``: where those came from,
    for the problems: ``--set``). ``scene``: the scene the task will run in, when not the one
    it names (``--scene``): its loops' groups and objects are that scene's."""
    report = Report()
    report.extend(problems or [])
    if doc.data is None:
        if not report.errors:
            report.add(Problem("EMPTY_FILE", "the file holds no task", doc.file,
                               fix="write a task: name, phases, ..."))
        return Checked(doc, report, None, Library(documents=[doc]), registries)
    binding = bind_params(doc, params, origin=origin)
    report.extend(binding.problems)
    report.extend(check_instructions(doc, binding))
    written = copy.deepcopy(doc.data)
    found, used = substitute_phases(doc, binding, registries, find_trees(doc.data))
    report.extend(found)
    spec, found = check_task(doc, registries)
    report.extend(found)
    if spec is not None and used:
        spec = _as_written(spec, written)
    library = Library.gather(doc, registries, report)
    for d in library.documents:
        for tree_path in find_trees(d.data):
            if not is_template(d, tree_path, registries):
                report.extend(check_nodes(d, tree_path, registries))
    report.extend(_guard_texts(library))
    facts = facts_loader(doc.data, doc.path, binding.values, scene)
    expander = Expander(library, registries.models, report, params=dict(binding.values),
                        on_copy=check_copy(report, registries), scene=facts)
    for tree_path in find_trees(doc.data):
        if tree_path[0] == "phases":
            expander.expand(doc.get(tree_path), doc, tree_path)
    report.extend(unused_params(doc, binding, used | expander.used_names))
    data = doc.data if isinstance(doc.data, dict) else {}
    for name in data.get("subtrees") or {}:
        if name not in expander.used_subtrees and isinstance(name, str):
            report.add(Problem("UNUSED_SUBTREE", f"subtree {name!r} is defined but no phase "
                               "uses it", doc.where(("subtrees", name), key=True),
                               fix="use it with '{subtree: " + name + "}' or remove it",
                               severity=Severity.WARNING, path=f"subtrees.{name}"))
    uses = list(expander.uses)
    if spec is not None:
        report.extend(check_chart(spec.phases, initial=spec.initial, where=doc.where,
                                  guards={*library.guards, *registries.guards}))
        uses += guard_reads(spec, doc, library)
        report.extend(_budgets(spec, doc, registries))
    defaults = set(data.get("blackboard") or {}) | set(expander.defaults)
    report.extend(check_blackboard(uses, defaults))
    report.problems = _order(report.problems, [d.file for d in library.documents])
    return Checked(doc, report, spec, library, registries, params=dict(binding.values),
                   scene=facts)


def _as_written(spec: TaskSpec, data: object) -> TaskSpec:
    """The spec of the document as written (its trees keep their ``{name}`` uses)."""
    try:
        return TaskSpec.model_validate(data)
    except ValidationError:
        return spec  # the trees were not the fault: the lenient skeleton stands


def _guard_texts(library: Library) -> list[Problem]:
    """Each named guard (in any document of the library) must parse."""
    out = []
    for guard in library.guards.values():
        if not isinstance(guard.text, str):
            continue
        try:
            compile_expr(guard.text, roots=GUARD_ROOTS)
        except ExprError as exc:
            out.append(Problem("INVALID_EXPRESSION", f"guard {guard.name!r}: {exc.message} at "
                               f"column {exc.column} of {guard.text!r}",
                               guard.doc.where(guard.path),
                               fix=exc.fix or "see harness_bt.expr",
                               path=format_path(guard.path)))
    return out
