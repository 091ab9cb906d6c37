"""Every object a task names, checked against the scene it names (``harness validate``).

A task names objects in its trees (an ``observe`` or ``check`` list, a ``check`` relation, a
``derive_pose`` object, a skill's object parameters, an action's ``objects`` / ``premises``,
an ``evaluate`` postcondition's object parameters) and in expressions (``world.red_cube...`` in
a ``wait_for`` or a transition guard). Those names are read after the task's parameters are
bound and every subtree use is expanded (:class:`~harness_bt.authoring.expand.Expander`), so an
object passed into ``trees/steps.yaml`` as ``{obj}`` is checked where it is given. A name the
scene lacks would otherwise surface only at run time, as ``NOT_OBSERVED: never seen``.

Which skill parameters name objects: a field marked ``json_schema_extra={"object": True}`` in
the skill's params model, else by name (``object_id``, any ``*_id``, ``holding``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_bt.authoring.expand import Expander
from harness_bt.authoring.nodes import SKILL_TAG, SUBTREE_TAG, node_tag
from harness_bt.authoring.placeholders import PLACEHOLDER
from harness_bt.authoring.scenes import check_scene
from harness_bt.authoring.validate.check import Checked
from harness_bt.errors import DefinitionError
from harness_bt.expr import ExprError, compile_expr
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem, Report, Severity
from harness_bt.scene import find_scene
from harness_bt.source import DocPath, Document, format_path

__all__ = ["ObjectUse", "object_problems", "object_uses", "param_type_problems",
           "refuse_missing_objects", "scene_object_problems"]

#: evaluator parameters that name objects (postconditions of ``evaluate``)
_EVALUATOR_OBJECTS = ("object_id", "target", "target_id", "container", "support")
_ACTIONS = ("skill_action", "act_and_evaluate")


@dataclass(frozen=True)
class ObjectUse:
    """One object name in a task: the name, what names it, where (file:line:column, and the
    subtree uses it came through)."""

    name: str
    by: str
    where: str
    path: str
    via: tuple[str, ...] = ()


def _is_object_param(model: Any, name: str) -> bool:
    fields = getattr(model, "model_fields", {})
    info = fields.get(name)
    extra = getattr(info, "json_schema_extra", None) if info is not None else None
    if isinstance(extra, Mapping) and "object" in extra:
        return bool(extra["object"])
    return name == "holding" or name.endswith("_id")


class _Collector(Expander):
    """An expander that records, for every node it expands, the object names in it."""

    skills: Any = None
    found: list[ObjectUse]
    #: keep names that are still ``{param}`` (the pass that checks parameters' types)
    placeholders: bool = False

    def expand(self, tree: Any, doc: Document, path: DocPath, **kwargs: Any
               ) -> dict[str, Any] | None:
        tag = node_tag(tree)
        if isinstance(tree, dict) and tag not in (None, SUBTREE_TAG):
            kind = "skill_action" if tag == SKILL_TAG else str(tree.get("type"))
            for name, at, by in _names(kind, tree, self.skills):
                if isinstance(name, str) and name and (self.placeholders
                                                        or not PLACEHOLDER.search(name)):
                    self.found.append(ObjectUse(name, f"{kind} {tree.get('name')!r} ({by})",
                                                doc.where((*path, *at)),
                                                format_path((*path, *at)),
                                                tuple(kwargs.get("via", ()))))
        return super().expand(tree, doc, path, **kwargs)


def _names(kind: str, node: dict[str, Any], skills: Any) -> Iterator[tuple[Any, DocPath, str]]:
    """(name, path within the node, which field) of every object name in one node."""
    if kind in ("observe", "check") and isinstance(node.get("objects"), list):
        for i, name in enumerate(node["objects"]):
            yield name, ("objects", i), "objects"
    if kind == "check" and isinstance(node.get("relations"), list):
        for i, text in enumerate(node["relations"]):
            words = text.split() if isinstance(text, str) else []
            if len(words) == 3:
                yield words[0], ("relations", i), "relation subject"
                yield words[2], ("relations", i), "relation target"
    if kind == "derive_pose":
        yield node.get("object"), ("object",), "object"
    if kind == "wait_for" and isinstance(node.get("when"), str):
        for name in _world_reads(node["when"]):
            yield name, ("when",), "world." + name
    if kind == "for_each":
        if isinstance(node.get("over"), list):
            for i, name in enumerate(node["over"]):
                yield name, ("over", i), "over"
        for port, bound in (("over", ()), ("where", ("it",)), ("order", ("items",))):
            if isinstance(node.get(port), str):
                for name in _world_reads(node[port], bound):
                    if name != "objects":  # world.objects: every object, no name
                        yield name, (port,), "world." + name
    if kind in _ACTIONS:
        if isinstance(node.get("objects"), dict):
            for param, name in node["objects"].items():
                yield name, ("objects", param), f"objects.{param}"
        if isinstance(node.get("premises"), list):
            for i, name in enumerate(node["premises"]):
                yield name, ("premises", i), "premises"
        params = node.get("params")
        skill = node.get("skill")
        model = None
        if skills is not None and isinstance(skill, str) and skill in skills.names():
            model = skills.get(skill).params_model
        if isinstance(params, dict):
            for param, name in params.items():
                if _is_object_param(model, str(param)):
                    yield name, ("params", param), f"params.{param}"
    if kind == "evaluate" and isinstance(node.get("postconditions"), list):
        for i, post in enumerate(node["postconditions"]):
            given = post.get("params") if isinstance(post, dict) else None
            for param, name in (given or {}).items():
                if param in _EVALUATOR_OBJECTS:
                    yield name, ("postconditions", i, "params", param), f"postcondition {param}"


def _world_reads(text: str, bound: tuple[str, ...] = ()) -> list[str]:
    try:
        return compile_expr(text, roots=("outcome", "bb", "world"), bound=bound).reads("world")
    except ExprError:
        return []  # the expression checks report it


def object_uses(checked: Checked) -> list[ObjectUse]:
    """Every object name the checked task uses (its trees expanded with its parameters'
    values), in file order, and those in its transition guards and named guards."""
    collector = _Collector(checked.library, checked.registries.models,
                           params=dict(checked.params), scene=checked.scene)
    collector.skills = checked.registries.skills
    collector.found = []
    doc = checked.doc
    for path, value in doc.walk():
        if len(path) >= 2 and path[-1] == "tree" and "phases" in path and \
                isinstance(value, dict):
            collector.expand(value, doc, path)
        if len(path) >= 3 and path[-3] == "transitions" and path[-1] == "when" and \
                isinstance(value, str):
            text = PLACEHOLDER.sub(lambda m: str(checked.params.get(m.group(1), m.group(0))),
                                   value)
            for name in _world_reads(text):
                collector.found.append(ObjectUse(name, f"transition guard (world.{name})",
                                                 doc.where(path), format_path(path)))
    for guard in checked.library.guards.values():
        if isinstance(guard.text, str):
            for name in _world_reads(guard.text):
                collector.found.append(ObjectUse(name, f"guard {guard.name!r} (world.{name})",
                                                 guard.doc.where(guard.path),
                                                 format_path(guard.path)))
    return collector.found


def object_problems(checked: Checked, objects: list[str], scene: str) -> list[Problem]:
    """An ``UNKNOWN_OBJECT`` error for every object name of the task that ``scene`` (its
    ``objects``) lacks, with the scene's objects and a did-you-mean."""
    out: list[Problem] = []
    known = ", ".join(objects)
    seen: set[tuple[str, tuple[str, ...] | str]] = set()
    for use in object_uses(checked):
        # a name passed into a subtree is said once, at the outermost use that passes it
        outer = use.via[0].rpartition(" used at ")[2] if use.via else use.where
        if use.name in objects or (use.name, outer) in seen:
            continue
        seen.add((use.name, outer))
        what = f"{use.by} names object {use.name!r}"
        if use.via:
            what = (f"{use.via[0].partition(' used at ')[0]} used here is given object "
                    f"{use.name!r} (its {use.by} at {use.where})")
        out.append(Problem(
            "UNKNOWN_OBJECT", f"{what}, which scene {scene!r} does not have; its objects: "
            f"{known}{did_you_mean(use.name, objects)}", outer,
            fix="name one of the scene's objects, or add the object to the scene "
                "(or run the task on a scene that has it)", path="" if use.via else use.path))
    return out


def refuse_missing_objects(path: Path, scene: Any, *, params: Mapping[str, Any] | None = None,
                           scene_ref: str | None = None) -> None:
    """Refuse to run the task file ``path`` in ``scene`` (a checked
    :class:`~harness_bt.scene.Scene`; ``scene_ref`` the ``--scene`` it came from, when not the
    task's own) when the task names objects the scene lacks: what ``harness validate`` says,
    said before a simulator starts rather than as "never seen" at run time. A Python file is
    left to ``harness validate`` (checking it again would run it again)."""
    from harness_bt.authoring.loader import check_file

    if path.suffix.lower() == ".py":
        return
    checked = check_file(path, params=params, scene=scene_ref)
    if checked.spec is None or not checked.report.ok:
        return
    Report(object_problems(checked, list(scene.spec.objects), scene.name)).raise_for_errors(
        f"{path} in scene {scene.name!r}")


def _written(spec: Any, path: DocPath) -> Any:
    """The tree at ``path`` as the task wrote it (``{param}`` uses kept)."""
    node = spec
    for part in path:
        node = node[part] if isinstance(part, int) or isinstance(node, dict) else \
            getattr(node, str(part))
    return node


def param_type_problems(checked: Checked) -> list[Problem]:
    """A warning for every task parameter used where an object is named (an ``observe``
    list, a skill's object parameter, a subtree's input that reaches one) but not declared
    ``type: object``: its values (``--set``, a planner's) are then not checked against the
    scene."""
    spec = checked.spec
    if spec is None:
        return []
    collector = _Collector(checked.library, checked.registries.models,
                           params={n: "{" + n + "}" for n in spec.params},
                           scene=checked.scene)
    collector.skills = checked.registries.skills
    collector.found = []
    collector.placeholders = True
    for path, value in checked.doc.walk():
        if len(path) >= 2 and path[-1] == "tree" and "phases" in path and \
                isinstance(value, dict):
            try:
                tree = _written(spec, path)
            except (AttributeError, IndexError, KeyError, TypeError):
                continue
            collector.expand(tree, checked.doc, path)
    out: list[Problem] = []
    reported: set[str] = set()
    for use in collector.found:
        m = PLACEHOLDER.fullmatch(use.name)
        decl = spec.params.get(m.group(1)) if m else None
        if m is None or decl is None or decl.type == "object" or m.group(1) in reported:
            continue
        name = m.group(1)
        reported.add(name)
        out.append(Problem(
            "PARAM_NOT_AN_OBJECT", f"parameter {name!r} is declared {decl.type} but names an "
            f"object ({use.by} at {use.where}): its values are not checked against the scene",
            checked.doc.where(("params", name), key=True), severity=Severity.WARNING,
            fix=f"declare it '{name}: {{type: object, ...}}'", path=f"params.{name}"))
    return out


def scene_object_problems(checked: Checked, base: Path | None) -> list[Problem]:
    """:func:`object_problems` against the scene the checked task names (``base``: the task
    file's folder, for a scene given by a relative path); nothing when the scene does not load
    (:func:`~harness_bt.authoring.scenes.task_scene_problems` reports that)."""
    spec = checked.spec
    if spec is None or not spec.scene:
        return []
    ref = spec.scene
    if base is not None and ("/" in ref or ref.lower().endswith((".yaml", ".yml", ".json"))):
        ref = str((base / ref).resolve())
    try:
        scene, _ = check_scene(find_scene(ref), params=checked.params)
    except DefinitionError:
        return []
    if scene is None:
        return []
    return [*object_problems(checked, list(scene.spec.objects), scene.name),
            *param_type_problems(checked)]
