"""Find, read and check scene documents; bind their parameters.

A scene is named by a registered name (the ``harness_bt.scenes`` entry points) or by the path
of a YAML file. :func:`check_scene` reports every problem of a document with its
``file:line:column`` (the same reader and the same error wording as task files);
:func:`load_scene` returns a :class:`Scene` ready for a simulator: parameters bound, the
instruction filled in, the success condition compiled.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from harness_bt.authoring.params import check_value, describe
from harness_bt.authoring.readers.yaml import read_yaml
from harness_bt.authoring.validate.structure import Structure
from harness_bt.errors import DefinitionError
from harness_bt.plugins import Registry, did_you_mean
from harness_bt.problems import Problem, Report, Severity
from harness_bt.runtime.episodes import RunOptions
from harness_bt.scene.condition import Condition, compile_success
from harness_bt.scene.document import TABLE_XY, LayoutGoal, Scene, SceneError, find_scene
from harness_bt.scene.model import COLOURS, SceneSpec
from harness_bt.scene.predicates import Predicate, predicate_registry
from harness_bt.source import DocPath, Document, format_path

__all__ = ["REACH_M", "check_scene", "load_scene", "task_scene_problems", "with_scene"]

#: Where the Panda reaches on the table: horizontal distance from its base (metres).
REACH_M = (0.25, 0.80)


# -- checking ------------------------------------------------------------------------------

class _Checker:
    def __init__(self, doc: Document, predicates: Mapping[str, Predicate]) -> None:
        self.doc = doc
        self.predicates = predicates
        self.report = Report()

    def problem(self, code: str, message: str, path: DocPath, fix: str, *, key: bool = False,
                severity: Severity = Severity.ERROR) -> None:
        self.report.add(Problem(code, message, self.doc.where(path, key=key), fix=fix,
                                severity=severity, path=format_path(path)))

    def structure(self) -> SceneSpec | None:
        data = self.doc.data
        if not isinstance(data, dict):
            self.problem("NOT_A_SCENE", "a scene document is a mapping (name, objects, ...)",
                         (), "start from a scene of the library (harness scenes NAME --json)")
            return None
        for path, value in self.doc.walk():
            if isinstance(value, float) and not math.isfinite(value):
                self.problem("NON_FINITE", f"{format_path(path)} is {value}", path,
                             "write a finite number")
        try:
            return SceneSpec.model_validate(data)
        except ValidationError as exc:
            mapper = Structure(self.doc, cast(Any, None))
            for problem, _ in mapper.problems(exc, data, (), lambda _: None, SceneSpec):
                message = problem.message.replace(" of the file", "").removesuffix("; known: ")
                self.report.add(Problem(problem.code, message, problem.where, problem.fix,
                                        problem.severity, problem.path))
            return None

    def objects(self, spec: SceneSpec) -> None:
        for oid, obj in spec.objects.items():
            path: DocPath = ("objects", oid)
            if not oid.replace("_", "").isalnum() or not oid[:1].isalpha() or oid != oid.lower():
                self.problem("INVALID_ID", f"object id {oid!r} must be lower-case letters, "
                             "digits and _", path, "rename it, e.g. 'red_cube'", key=True)
            if isinstance(obj.colour, str) and obj.colour not in COLOURS:
                self.problem("UNKNOWN_COLOUR", f"object {oid!r}: unknown colour "
                             f"{obj.colour!r}; named colours: {', '.join(COLOURS)}"
                             f"{did_you_mean(obj.colour, list(COLOURS))}", (*path, "colour"),
                             "use a named colour or [r, g, b] in 0..1")
            elif isinstance(obj.colour, list) and not all(0.0 <= c <= 1.0 for c in obj.colour):
                self.problem("INVALID_VALUE", f"object {oid!r}: colour components must be in "
                             "0..1", (*path, "colour"), "write e.g. [0.9, 0.8, 0.1]")
            size = [obj.size] * 3 if isinstance(obj.size, float) else obj.size
            if not all(0.005 <= s <= 0.5 for s in size):
                self.problem("INVALID_VALUE", f"object {oid!r}: size {obj.size} is outside "
                             "0.005..0.5 m", (*path, "size"), "give the size in metres")
            if obj.shape == "urdf" and not obj.file:
                self.problem("MISSING_FIELD", f"object {oid!r} of shape urdf needs 'file'",
                             path, "add 'file: lego/lego.urdf' (a pybullet_data model)")
            if obj.shape in ("cylinder", "bowl") and abs(size[0] - size[1]) > 1e-9:
                self.problem("INVALID_VALUE", f"object {oid!r}: a {obj.shape} is round: size x "
                             f"and y are its diameter ({size[0]} != {size[1]})", (*path, "size"),
                             "give x = y")

    def _known(self, spec: SceneSpec, name: str, path: DocPath, what: str) -> bool:
        if name in spec.objects:
            return True
        known = list(spec.objects)
        self.problem("UNKNOWN_OBJECT", f"{what}: {name!r} is not an object of scene "
                     f"{spec.name!r}; its objects: {', '.join(known)}{did_you_mean(name, known)}",
                     path, "name one of the scene's objects, or add it under 'objects:'")
        return False

    def layout(self, spec: SceneSpec) -> None:
        lay = spec.layout
        for axis, rng in lay.workspace.items():
            if rng[0] > rng[1]:
                self.problem("INVALID_RANGE", f"workspace {axis} range {rng} is reversed",
                             ("layout", "workspace", axis), f"write [{rng[1]}, {rng[0]}]")
        self._reachable(lay.workspace.get("x", [0.4, 0.62]), lay.workspace.get("y", [-.2, .2]),
                        False, ("layout", "workspace"), "the workspace")
        for oid, place in lay.place.items():
            path: DocPath = ("layout", "place", oid)
            if not self._known(spec, oid, path, "layout.place"):
                continue
            if place.pose is not None:
                if any(v is not None for v in (place.x, place.y, place.yaw)):
                    self.problem("INVALID_VALUE", f"{oid}: give a fixed pose or x/y/yaw ranges, "
                                 "not both", path, "keep one of them")
                xs, ys = [place.pose[0]] * 2, [place.pose[1]] * 2
            else:
                xs = _span(place.x, lay.workspace.get("x", [0.4, 0.62]))
                ys = _span(place.y, lay.workspace.get("y", [-0.22, 0.22]))
                for axis, value in (("x", place.x), ("y", place.y), ("yaw", place.yaw)):
                    if isinstance(value, list) and value[0] > value[1]:
                        self.problem("INVALID_RANGE", f"{oid}: {axis} range {value} is reversed",
                                     (*path, axis), f"write [{value[1]}, {value[0]}]")
            self._reachable(xs, ys, place.mirror_y, path, f"object {oid!r}")
        if lay.distractors is not None:
            d = lay.distractors
            for i, oid in enumerate(d.objects):
                self._known(spec, oid, ("layout", "distractors", "objects", i), "distractors")
            lo, hi = d.count
            if not 0 <= lo <= hi <= len(d.objects):
                self.problem("INVALID_RANGE", f"distractors count {d.count} must be "
                             f"0 <= low <= high <= {len(d.objects)} (the objects listed)",
                             ("layout", "distractors", "count"), "e.g. count: [0, 2]")

    def _reachable(self, xs: list[float], ys: list[float], mirror: bool, path: DocPath,
                   what: str) -> None:
        corners = [(x, y) for x in xs for y in ys]
        if mirror:
            corners += [(x, -y) for x, y in corners]
        far = max(math.hypot(x, y) for x, y in corners)
        near = min(math.hypot(x, y) for x, y in corners)
        off_table = [(x, y) for x, y in corners
                     if not (TABLE_XY[0][0] <= x <= TABLE_XY[0][1]
                             and TABLE_XY[1][0] <= y <= TABLE_XY[1][1])]
        if off_table:
            self.problem("UNREACHABLE_LAYOUT", f"{what}: x {xs} y {ys} leaves the table "
                         f"(x {list(TABLE_XY[0])}, y {list(TABLE_XY[1])})", path,
                         "lay it out on the table, in front of the robot")
        elif far > REACH_M[1] or near < REACH_M[0]:
            self.problem("UNREACHABLE_LAYOUT", f"{what}: x {xs} y {ys} reaches "
                         f"{near:.2f}..{far:.2f} m from the robot's base; the arm reaches "
                         f"{REACH_M[0]}..{REACH_M[1]} m", path,
                         "keep every sampled pose within that ring, e.g. x in [0.4, 0.62], "
                         "y in [-0.22, 0.22]")

    def params(self, spec: SceneSpec, values: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
        """Each parameter's (type, value). A faulty value is reported and replaced by a
        stand-in of its type, so that its uses report nothing more."""
        out: dict[str, tuple[str, Any]] = {}
        stand_in = {"object": next(iter(spec.objects)), "number": 0.0, "integer": 0,
                    "boolean": False, "vector": [0.0, 0.0], "string": ""}
        for name, param in spec.params.items():
            given = name in values
            value = values[name] if given else param.default
            path: DocPath = ("params", name) if given else ("params", name, "default")
            origin = f"set to {value!r}" if given else f"default {value!r}"
            problem = None
            if value is None:
                problem = ("MISSING_PARAM", f"scene parameter {name!r} has no value",
                           f"give it a default, or set it (--set {name}=...)")
            elif param.type == "object" and (not isinstance(value, str)
                                             or value not in spec.objects):
                known = list(spec.objects)
                problem = ("UNKNOWN_OBJECT", f"scene parameter {name!r} ({origin}) is not an "
                           f"object of scene {spec.name!r}; its objects: {', '.join(known)}"
                           f"{did_you_mean(str(value), known)}", "name one of them")
            else:
                try:  # the same rules as a task's parameters: type, choices, range, size
                    value = check_value(param, value)
                except ValueError as exc:
                    problem = ("INVALID_PARAM_VALUE", f"scene parameter {name!r} is "
                               f"{describe(param)}, {origin}: {exc}",
                               f"set {describe(param)}: --set {name}=...")
            if problem is not None:
                code, message, fix = problem
                if given:
                    self.report.add(Problem(code, message, f"--set {name}", fix=fix,
                                            path=format_path(("params", name))))
                else:
                    self.problem(code, message, path, fix)
                value = stand_in[param.type]
            out[name] = (param.type, list(value) if param.type == "vector" else value)
        return out

    def success(self, spec: SceneSpec, params: dict[str, tuple[str, Any]]) -> Condition | None:
        if spec.success is None:
            return None
        groups: dict[str, list[str]] = {}
        for oid, obj in spec.objects.items():
            if obj.group:
                groups.setdefault(obj.group, []).append(oid)
        clash = sorted(set(groups) & set(spec.objects))
        for name in clash:
            self.problem("DUPLICATE_NAME", f"{name!r} names both an object and a group",
                         ("objects", name), "rename the group")
        condition, errors = compile_success(spec.success.when, self.predicates,
                                            objects=list(spec.objects), groups=groups,
                                            params=params)
        for err in errors:
            self.problem(err.code, f"success.when at column {err.column} of the "
                         f"expression: {err.message}", ("success", "when"), err.fix or "")
        return condition

    def goals(self, spec: SceneSpec, params: dict[str, tuple[str, Any]]) -> list[LayoutGoal]:
        """``layout.goals`` with their parameters bound; an unknown object or parameter, or
        one of the wrong type, is reported."""
        out = []
        for i, goal in enumerate(spec.layout.goals):
            path: DocPath = ("layout", "goals", i)
            obj: str | None = None
            if goal.object in params and params[goal.object][0] == "object":
                obj = params[goal.object][1]
            elif self._known_or_param(spec, goal.object, params, "object", (*path, "object"),
                                      f"layout goal {i}"):
                obj = goal.object
            offset: list[float] | None = None
            if isinstance(goal.offset, str):
                if goal.offset in params and params[goal.offset][0] == "vector":
                    offset = [float(v) for v in params[goal.offset][1]]
                    if len(offset) < 2:
                        self.problem("INVALID_VALUE", f"layout goal {i}: parameter "
                                     f"{goal.offset!r} has {len(offset)} value(s), not [dx, dy]",
                                     (*path, "offset"), "declare it with size: 2")
                        offset = None
                else:
                    self._known_or_param(spec, goal.offset, params, "vector",
                                         (*path, "offset"), f"layout goal {i}")
            else:
                offset = list(goal.offset)
            if obj is not None and offset is not None:
                out.append(LayoutGoal(obj, (offset[0], offset[1]), goal.clearance))
        return out

    def _known_or_param(self, spec: SceneSpec, name: str, params: dict[str, tuple[str, Any]],
                        kind: str, path: DocPath, what: str) -> bool:
        """Whether ``name`` is an object (for ``kind`` object); else a problem naming the
        parameters of ``kind`` (and the objects) it could have meant."""
        if kind == "object" and name in spec.objects:
            return True
        names = [n for n, (k, _) in params.items() if k == kind]
        known = names + (list(spec.objects) if kind == "object" else [])
        if name in params:
            message = (f"{what}: parameter {name!r} is a {params[name][0]}, not "
                       f"{'an' if kind == 'object' else 'a'} {kind}")
        else:
            message = (f"{what}: {name!r} is no {kind} parameter"
                       + (" or object" if kind == "object" else "") + f" of scene "
                       f"{spec.name!r}; known: {', '.join(known) or 'none'}"
                       f"{did_you_mean(name, known)}")
        fix = ("name an object or an object parameter" if kind == "object"
               else "give [dx, dy] in metres, or name a vector parameter")
        self.problem("UNKNOWN_OBJECT" if kind == "object" else "INVALID_VALUE", message, path,
                     fix)
        return False


def _span(value: float | list[float] | None, default: list[float]) -> list[float]:
    if value is None:
        return list(default)
    return [value, value] if isinstance(value, float) else list(value)


def check_scene(path: str | os.PathLike[str], *, params: Mapping[str, Any] | None = None,
                predicates: Registry[Predicate] | None = None, text: str | None = None
                ) -> tuple[Scene | None, Report]:
    """Read and check a scene file (``params``: values for its parameters; names it does not
    declare are left alone, so a task's parameters can be passed whole)."""
    doc, problems = read_yaml(path, text=text)
    registry = predicates if predicates is not None else predicate_registry(entry_points=True)
    checker = _Checker(doc, {n: registry.get(n) for n in registry.names()})
    checker.report.extend(problems)
    if doc.data is None or problems:
        return None, checker.report
    spec = checker.structure()
    if spec is None:
        return None, checker.report
    checker.objects(spec)
    checker.layout(spec)
    bound = checker.params(spec, params or {})
    condition = checker.success(spec, bound)
    goals = checker.goals(spec, bound)
    if not checker.report.ok:
        return None, checker.report
    return Scene(spec, doc.file, {k: v for k, (_, v) in bound.items()}, condition, goals), \
        checker.report


def load_scene(ref: str | os.PathLike[str], *, params: Mapping[str, Any] | None = None,
               predicates: Registry[Predicate] | None = None) -> Scene:
    """The scene named by ``ref`` (a registered name or a path), checked, with ``params``
    bound. Raises :class:`SceneError` listing every problem."""
    path = find_scene(ref)
    scene, report = check_scene(path, params=params, predicates=predicates)
    if scene is None:
        raise SceneError(str(path), report)
    return scene


def with_scene(options: RunOptions) -> RunOptions:
    """``options`` with the scene it names read and checked (``scene_document``), its
    parameters bound from ``options.params``; unchanged when it names none or holds it."""
    if options.scene is None or options.scene_document is not None:
        return options
    return dataclasses.replace(options, scene_document=load_scene(options.scene,
                                                                  params=options.params))


def task_scene_problems(scene_ref: str, base: Path | None, task_params: Mapping[str, Any],
                        types: Mapping[str, str], where: Mapping[str, str]) -> list[Problem]:
    """What is wrong between a task and the scene it names (``harness validate``): the scene
    missing or refused, and every object parameter of the task (``types``: name -> type) whose
    value (``task_params``) is no object of the scene. ``where``: each parameter's place (its
    ``--set``, or its default in the task file); ``base``: the task file's folder, for a scene
    named by a relative path."""
    ref = scene_ref
    if base is not None and ("/" in ref or ref.lower().endswith((".yaml", ".yml", ".json"))):
        ref = str((base / ref).resolve())
    try:
        path = find_scene(ref)
    except DefinitionError as exc:
        return [Problem(exc.code, exc.message, where.get("scene", scene_ref), fix=exc.fix or "")]
    scene, report = check_scene(path, params=task_params)
    out = list(report.errors)
    if scene is None:
        return out
    known = list(scene.spec.objects)
    for name, kind in types.items():
        value = task_params.get(name)
        if kind == "object" and isinstance(value, str) and value not in scene.spec.objects:
            out.append(Problem(
                "UNKNOWN_OBJECT", f"task parameter {name!r} is {value!r}, which is no object of "
                f"scene {scene.name!r}; its objects: {', '.join(known)}"
                f"{did_you_mean(value, known)}", where.get(name, f"params.{name}"),
                fix="name one of the scene's objects, or run the task on another scene"))
    return out
