"""The structural layer: a document against the pydantic models (the task skeleton and the
node models made from the registries' manifests), every pydantic error rewritten as a
:class:`Problem` that says what, where (``file:line:column``), the value, and a fix."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from harness_bt.authoring.model import EVENTS, LibrarySpec, TaskSpec, phase_tag
from harness_bt.authoring.nodes import SKILL_TAG, SUBTREE_TAG, node_tag
from harness_bt.authoring.placeholders import has_placeholders
from harness_bt.authoring.registries import Registries
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem
from harness_bt.source import DocPath, Document, format_path

__all__ = ["Structure", "check_library", "check_task", "check_tree_shape", "find_trees",
           "is_template", "node_of", "nonfinite"]

TagFn = Callable[[Any], str | None]
_TYPES = {"string_type": "text", "int_type": "a whole number", "float_type": "a number",
          "bool_type": "true or false", "list_type": "a list", "dict_type": "a mapping",
          "model_type": "a mapping", "literal_error": "one of the allowed values"}
_PHASE_KINDS = ("atomic", "compound", "parallel", "final", "history")


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _has(container: Any, key: Any) -> bool:
    if isinstance(container, dict):
        return key in container
    return isinstance(container, list) and isinstance(key, int) and 0 <= key < len(container)


def find_trees(data: Any) -> list[DocPath]:
    """Where the trees of a task or library document are (found leniently in raw data)."""
    out: list[DocPath] = []
    if not isinstance(data, dict):
        return out
    if isinstance(data.get("subtrees"), dict):
        out += [("subtrees", name) for name in data["subtrees"]]

    def phases(items: Any, path: DocPath) -> None:
        if not isinstance(items, list):
            return
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            if "tree" in item:
                out.append((*path, i, "tree"))
            for key in ("phases", "regions"):
                phases(item.get(key), (*path, i, key))

    phases(data.get("phases"), ("phases",))
    return out


def is_template(doc: Document, tree_path: DocPath, registries: Registries) -> bool:
    """A subtree with ``{name}`` in its values: checked per use (a copy with the use's
    values), not where it is defined."""
    if tree_path[:1] != ("subtrees",):
        return False
    try:
        tree = doc.get(tree_path)
    except (KeyError, IndexError, TypeError):
        return False
    return has_placeholders(tree, registries.models)


def nonfinite(doc: Document) -> list[Problem]:
    """Every infinite or NaN number in a document (YAML allows ``.inf`` and ``.nan``)."""
    out = []
    for path, value in doc.walk():
        if isinstance(value, float) and not math.isfinite(value):
            out.append(Problem("NON_FINITE", f"non-finite number {value!r} "
                               f"at {format_path(path) or 'the top'}", doc.where(path),
                               fix="write a finite number (no .inf or .nan)",
                               path=format_path(path)))
    return out


class Structure:
    """Maps pydantic errors on one validated object (at ``base`` in ``doc``) to problems."""

    def __init__(self, doc: Document, registries: Registries) -> None:
        self.doc = doc
        self.registries = registries

    def path_of(self, data: Any, loc: tuple[Any, ...], tag: TagFn) -> tuple[DocPath, bool]:
        """The document path of a pydantic location (union tags dropped) and whether it
        exists in the data (a missing field's does not)."""
        path: list[str | int] = []
        cur = data
        skipped: set[int] = set()
        for elem in loc:
            if isinstance(cur, dict) and id(cur) not in skipped and tag(cur) == elem:
                skipped.add(id(cur))
                continue
            if _has(cur, elem):
                path.append(elem)
                cur = cur[elem]
            else:
                path.append(elem)
                return tuple(path), False
        return tuple(path), True

    def owner(self, path: DocPath) -> str:
        """What the value at ``path`` belongs to, in words."""
        data = self.doc.data
        if len(path) >= 2 and path[0] == "params":
            return f"parameter {path[1]!r}"
        best = "the task" if isinstance(data, dict) and "phases" in data else "the file"
        cur = data
        for i, part in enumerate(path):
            if _has(cur, part):
                cur = cur[part]
            else:
                break
            here = path[: i + 1]
            if not isinstance(cur, dict):
                continue
            if len(here) >= 2 and here[-2] == "transitions":
                best = f"transition {here[-1]} of {best}"
            elif here == ("budget",):
                best = "the budget"
            elif node_tag(cur) is not None and "tree" not in cur and cur.get(
                    "kind") != "history" and ("type" in cur or "skill" in cur or
                                              "subtree" in cur):
                kind = node_tag(cur)
                kind = "skill leaf" if kind == SKILL_TAG else \
                    "subtree use" if kind == SUBTREE_TAG else kind
                best = f"{kind} {cur.get('name') or cur.get('subtree')!r}"
            elif isinstance(cur.get("id"), str) and ("phases" in here or "regions" in here):
                best = f"phase {cur['id']!r}"
        return best

    def _known(self, container: Any, is_node: bool) -> list[str]:
        if is_node:
            tag = node_tag(container)
            return self.registries.models.fields(tag) if tag else []
        return []

    def problems(self, exc: ValidationError, data: Any, base: DocPath, tag: TagFn,
                 model: type[BaseModel] | None = None) -> list[tuple[Problem, DocPath]]:
        """Each problem with the document path it is about."""
        out = []
        for err in exc.errors():
            rel, _ = self.path_of(data, tuple(err["loc"]), tag)
            path = base + rel
            problem = self._one(err, data, rel, path, tag, model)
            if problem is not None:
                out.append((problem, path))
        return out

    def _container(self, data: Any, rel: DocPath) -> Any:
        cur = data
        for part in rel[:-1]:
            try:
                cur = cur[part]
            except (KeyError, IndexError, TypeError):
                return None
        return cur

    def _one(self, err: Any, data: Any, rel: DocPath, path: DocPath, tag: TagFn,
             model: type[BaseModel] | None) -> Problem | None:
        kind = err["type"]
        field = str(rel[-1]) if rel else ""
        value = err.get("input")
        where = self.doc.where(path, key=kind == "extra_forbidden")
        spot = format_path(path)
        is_node = tag is node_tag
        owner = self.owner(path[:-1] if rel and kind != "value_error" else path)

        def make(code: str, message: str, fix: str) -> Problem:
            return Problem(code, message, where, fix=fix, path=spot)

        if kind == "finite_number":
            return None  # reported once by the non-finite scan
        if kind == "missing":
            return make("MISSING_FIELD", f"{owner} needs {field!r}",
                        f"add '{field}:'" + (f" ({self._port_help(data, rel)})"
                                             if is_node else ""))
        if kind == "extra_forbidden":
            container = self._container(data, rel)
            known = self._known(container, is_node) or self._model_fields(model, path)
            what = "param" if is_node else "field"
            return make("UNKNOWN_FIELD", f"unknown {what} {field!r} of {owner}; known: "
                        f"{', '.join(known)}{did_you_mean(field, known)}",
                        "remove it or fix its spelling")
        if kind == "node_type":
            return self._node_type(value, make)
        if kind == "phase_kind":
            if isinstance(value, dict) and "kind" in value:
                return make("UNKNOWN_PHASE_KIND", f"phase kind {value['kind']!r} is not one of "
                            f"{', '.join(_PHASE_KINDS)}"
                            f"{did_you_mean(str(value['kind']), _PHASE_KINDS)}",
                            "use one of the kinds, or leave kind out and give tree / phases / "
                            "regions")
            if not isinstance(value, dict):
                return make("WRONG_TYPE", f"a phase is a mapping, got {_describe(value)}",
                            "write the phase as 'id: ...' with its keys")
            return make("PHASE_WITHOUT_KIND", f"phase {value.get('id')!r} has no tree, phases "
                        "or regions and is not a final", "give it a tree (atomic), phases "
                        "(compound), regions (parallel), or 'kind: final'")
        if kind == "literal_error" and field == "event":
            return make("UNKNOWN_EVENT", f"unknown event {value!r}; events: "
                        f"{', '.join(EVENTS)}{did_you_mean(str(value), EVENTS)}",
                        "transitions fire on a tree's outcome or on 'done'")
        if kind == "literal_error" and field == "skill":
            skills = self.registries.skills
            known = [] if skills is None else skills.names()
            return make("UNKNOWN_SKILL", f"unknown skill {value!r}; known: "
                        f"{', '.join(known) or '(none)'}{did_you_mean(str(value), known)}",
                        "use a registered skill, or install the package that provides it")
        if kind == "string_pattern_mismatch":
            if field == "id":
                return make("INVALID_ID", f"phase id {value!r} must be an identifier "
                            "(letters, digits, _)", "rename it, e.g. "
                            f"{''.join(c if c.isalnum() else '_' for c in str(value))!r}")
            return make("INVALID_NAME", f"node name {value!r} must be non-empty and contain no "
                        "'/' or '#'", "rename it: node paths are built from names with '/'")
        if kind in ("greater_than_equal", "greater_than", "less_than", "less_than_equal"):
            ctx = err.get("ctx") or {}
            op = {"greater_than_equal": ">=", "greater_than": ">", "less_than": "<",
                  "less_than_equal": "<="}[kind]
            limit = next(iter(ctx.values()), "?")
            code = "INVALID_BUDGET" if "budget" in path else "INVALID_VALUE"
            rest = "for no limit" if code == "INVALID_BUDGET" else "for its default"
            return make(code, f"{field}={value!r} must be {op} {limit}",
                        f"set {field} {op} {limit}, or leave it out {rest}")
        if kind == "string_too_short":
            return make("EMPTY_VALUE", f"{field} of {owner} must not be empty", "write a value")
        if kind == "too_short":
            return make("EMPTY_LIST", f"{field} of {owner} needs at least one item",
                        "add one" if field != "phases" else "a task needs at least one phase")
        if kind in _TYPES:
            expected = _TYPES[kind]
            fix = f"write {expected}"
            if isinstance(value, bool) and kind == "string_type":
                fix = f"quote it ('{str(value).lower()}'): YAML reads yes/no/on/off/true/false "\
                      "as booleans"
            elif isinstance(value, float) and kind == "int_type":
                fix = "write a whole number (no decimal point)"
            elif kind == "literal_error":
                expected = f"one of {(err.get('ctx') or {}).get('expected', '?')}"
                fix = f"write {expected}"
            return make("WRONG_TYPE", f"{field or 'the value'} of {owner} must be {expected}, "
                        f"got {_describe(value)}", fix)
        if kind == "value_error":
            message = str((err.get("ctx") or {}).get("error", err["msg"]))
            return make("INVALID_VALUE", f"{owner}: {message}", "keep one of them")
        return make("INVALID_VALUE", f"{field or 'value'} of {owner}: {err['msg']}"
                    f" (got {_describe(value)})", "see the JSON Schema (harness schema)")

    def _node_type(self, value: Any, make: Callable[[str, str, str], Problem]) -> Problem:
        known = self.registries.nodes.listed()
        if isinstance(value, dict) and "type" in value:
            return make("UNKNOWN_NODE_TYPE", f"unknown node type {value['type']!r}; known: "
                        f"{', '.join(known)}{did_you_mean(str(value['type']), known)}",
                        "use a registered node type (harness nodes lists them), or "
                        "'skill: <name>' for a skill leaf")
        if isinstance(value, dict):
            return make("NODE_WITHOUT_TYPE", f"node {value.get('name')!r} has no 'type'",
                        "give 'type: <node type>', or 'skill: <name>' for a skill leaf, or "
                        "'subtree: <name>' to use a subtree")
        return make("WRONG_TYPE", f"a node is a mapping, got {_describe(value)}",
                    "write the node as 'type: ...' and 'name: ...' with its params")

    def _port_help(self, data: Any, rel: DocPath) -> str:
        container = self._container(data, rel)
        tag = node_tag(container)
        manifest = self.registries.models.manifest(tag) if tag else None
        port = manifest.port(str(rel[-1])) if manifest else None
        if port is None:
            return "required"
        return f"{port.type}" + (f": {port.description}" if port.description else "")

    def _model_fields(self, model: type[BaseModel] | None, path: DocPath) -> list[str]:
        """The fields of the model behind the mapping that holds ``path``'s last key."""
        from harness_bt.authoring import model as m

        where = path[:-1]
        target: Any = None
        if not where:
            target = model
        elif where == ("budget",):
            target = m.BudgetSpec
        elif len(where) == 2 and where[0] == "params":
            target = m.ParamSpec
        elif len(where) >= 2 and where[-2] == "transitions":
            target = m.TransitionSpec
        elif len(where) >= 2 and where[-2] in ("phases", "regions"):
            try:
                container = self.doc.get(where)
            except (KeyError, IndexError, TypeError):
                container = None
            target = {"atomic": m.AtomicSpec, "compound": m.CompoundSpec,
                      "parallel": m.ParallelSpec, "final": m.FinalSpec}.get(
                phase_tag(container) or "")
        if target is None:
            return []
        return [f.alias or n for n, f in target.model_fields.items()]


def lenient_task(data: dict[str, Any], exc: ValidationError, structure: Structure
                 ) -> TaskSpec | None:
    """The task skeleton with its faulty parts mended or left out, so the statechart can still
    be checked while those faults are reported; None when a phase itself is unreadable (its
    checks would only report ghosts of it)."""
    data = copy.deepcopy(data)
    for _ in range(5):
        drop: list[DocPath] = []
        for err in exc.errors():
            path, _ = structure.path_of(data, tuple(err["loc"]), phase_tag)
            if err["type"] == "phase_kind" or (path[:1] == ("phases",) and len(path) < 2):
                return None
            if path[:1] == ("budget",) or (len(path) == 1 and path[0] != "phases"):
                drop.append(path[:1])
            elif "transitions" in path:
                i = path.index("transitions")
                if len(path) > i + 2 and path[i + 2] == "event":
                    _set(data, path[: i + 3], "failed")
                elif len(path) > i + 2 and path[i + 2] != "target":
                    drop.append(path[: i + 3])
                else:
                    drop.append(path[: i + 2])
            elif err["type"] == "string_pattern_mismatch" and path[-1] == "id":
                _set(data, path, "".join(c if c.isalnum() else "_" for c in str(err["input"]))
                     or "_")
            elif len(path) > 2:
                drop.append(path if err["type"] != "missing" else ())
        for path in sorted((p for p in drop if p), key=len, reverse=True):
            _drop(data, path)
        try:
            return TaskSpec.model_validate(data)
        except ValidationError as again:
            exc = again
    return None


def _set(data: Any, path: DocPath, value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def _drop(data: Any, path: DocPath) -> None:
    for part in path[:-1]:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(data, dict):
        data.pop(path[-1], None)
    elif isinstance(data, list) and isinstance(path[-1], int) and path[-1] < len(data):
        data[path[-1]] = None
        while None in data:
            data.remove(None)


def _check(doc: Document, registries: Registries, model: type[BaseModel], what: str
           ) -> tuple[BaseModel | None, list[Problem], set[DocPath]]:
    structure = Structure(doc, registries)
    problems: list[Problem] = []
    spec: BaseModel | None = None
    bad_nodes: set[DocPath] = set()
    if not isinstance(doc.data, dict):
        fields = "name and phases" if model is TaskSpec else "subtrees and guards"
        problems.append(Problem("WRONG_TYPE", f"{what} is a mapping with {fields}, got "
                                f"{_describe(doc.data) if doc.data is not None else 'nothing'}",
                                doc.where(()), fix=f"start the file with the task's keys "
                                f"({fields})"))
        return None, problems, bad_nodes
    try:
        spec = model.model_validate(doc.data)
    except ValidationError as exc:
        problems += [p for p, _ in structure.problems(exc, doc.data, (), phase_tag, model)]
        if model is TaskSpec:
            spec = lenient_task(doc.data, exc, structure)
    for tree_path in find_trees(doc.data):
        found, bad = check_tree_shape(doc, tree_path, registries)
        problems += found
        bad_nodes |= bad
    problems += nonfinite(doc)
    return spec, problems, bad_nodes


def check_tree_shape(doc: Document, tree_path: DocPath, registries: Registries
                     ) -> tuple[list[Problem], set[DocPath]]:
    """The tree at ``tree_path`` against the node models: its problems, and the paths of the
    nodes they are in (their finer checks are skipped)."""
    tree = doc.get(tree_path)
    try:
        registries.models.adapter.validate_python(tree)
    except ValidationError as exc:
        found = Structure(doc, registries).problems(exc, tree, tree_path, node_tag)
        return [p for p, _ in found], {node_of(doc, path, tree_path) for _, path in found}
    return [], set()


def node_of(doc: Document, path: DocPath, tree_path: DocPath) -> DocPath:
    """The path of the node that ``path`` is in (the tree's root at the latest)."""
    probe = path
    while len(probe) > len(tree_path):
        try:
            here = doc.get(probe)
        except (KeyError, IndexError, TypeError):
            here = None
        if isinstance(here, dict) and node_tag(here) is not None:
            return probe
        probe = probe[:-1]
    return tree_path


def check_task(doc: Document, registries: Registries
               ) -> tuple[TaskSpec | None, list[Problem]]:
    """The task skeleton and every tree of a task document: the spec (None when the skeleton
    is invalid) and the problems. Nodes with structural problems go to ``doc.bad_nodes``."""
    spec, problems, bad = _check(doc, registries, TaskSpec, "a task file")
    doc.bad_nodes |= bad
    return spec if isinstance(spec, TaskSpec) else None, problems


def check_library(doc: Document, registries: Registries) -> list[Problem]:
    """An included YAML library (or an imported XML file's trees)."""
    _, problems, bad = _check(doc, registries, LibrarySpec, "an included file")
    doc.bad_nodes |= bad
    return problems
