"""A task as BehaviorTree.CPP v4 XML, for Groot2 (``harness export-xml``).

The file holds: the main tree, a ``<Task>`` whose children are the phases
(:mod:`~harness_bt.authoring.readers.btcpp.chart`); one ``<BehaviorTree>`` per atomic phase's tree
(``ID`` = ``phase_<id>``, used by the phase as ``<SubTree>``); one per subtree of the task and
of the files it includes; and a ``<TreeNodesModel>`` of every installed node type and skill
(:mod:`~harness_bt.authoring.readers.btcpp.palette`).

Each node is written in the first of these forms that the importer reads back to the very same
node: a BehaviorTree.CPP node (``<Sequence>``, ``<Fallback>``, ``<RetryUntilSuccessful>``,
``<SubTree>``, ...), a skill's own element (``<grasp object_id="cube"/>``), or the node type
by its registered name with every port as an attribute (``<observe objects="a;b"
record="{plan}"/>``), a value that would not read back written as ``json:...``. So
``import-xml(export-xml(task))`` gives the task back.
"""

from __future__ import annotations

import json
import re
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from harness_bt.authoring.readers.btcpp.chart import TASK_PORTS, format_transitions
from harness_bt.authoring.readers.btcpp.elements import Element
from harness_bt.authoring.readers.btcpp.mapping import TreeReader
from harness_bt.authoring.readers.btcpp.palette import SKILL_PORTS, tree_nodes_model
from harness_bt.authoring.readers.btcpp.peer import check_tree_ids, model_id, port_allowed
from harness_bt.authoring.readers.btcpp.script import parameters_script
from harness_bt.authoring.registries import Registries
from harness_bt.errors import DefinitionError
from harness_bt.source import Document

__all__ = ["export_xml"]

_REF = re.compile(r"^\{[^{}]*\}$")
_STANDARD = {"inverter": "Inverter", "force_success": "ForceSuccess",
             "force_failure": "ForceFailure",
             "keep_running_until_failure": "KeepRunningUntilFailure"}


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON kinds (``1``, ``1.0`` and ``True`` differ); key order aside."""
    return json.dumps(a, default=str, sort_keys=True) == json.dumps(b, default=str, sort_keys=True)


class _Writer:
    def __init__(self, registries: Registries) -> None:
        self.registries = registries
        self.reader = TreeReader(Document("<export>", None, format="xml"), registries)
        #: the ports each <SubTree ID> is given somewhere (its BT.CPP model)
        self.subtree_ports: dict[str, set[str]] = {}

    def text(self, value: Any, kind: str, *, whole: bool = True) -> str:
        """An attribute's text for ``value``: plain when it reads back the same, else
        ``json:``. ``whole``: the text is the whole attribute, which BT.CPP reads as a
        blackboard key when it is ``{...}`` (as ``{a};{b}`` would be: the key ``a};{b``):
        only a list of one ``{key}`` may be written so."""
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | float):
            text = repr(value)
        elif isinstance(value, str):
            text = value
        elif isinstance(value, list) and all(_scalar(v) for v in value):
            text = ";".join(self.text(v, "any", whole=False) for v in value)
        elif isinstance(value, dict) and all(_scalar(v) for v in value.values()):
            text = ";".join(f"{k}:{self.text(v, 'any', whole=False)}" for k, v in value.items())
        else:
            text = str(value)
        pointer = whole and text.strip().startswith("{") and text.strip().endswith("}")
        try:
            if _same(self.reader.value(text, kind), value) and (
                    not pointer or (kind == "list" and _REF.match(text))):
                return text
        except (ValueError, json.JSONDecodeError):
            pass
        return "json:" + json.dumps(value, separators=(",", ":"))

    def _reads_back(self, el: Element, tree: dict[str, Any]) -> bool:
        self.reader.problems.clear()
        try:
            got = self.reader.node(el, ("x",))
        except (ValueError, KeyError, TypeError):
            return False
        return not self.reader.problems and _same(got, tree)

    def node(self, tree: dict[str, Any]) -> Element:
        candidates = [c for c in (self._subtree(tree), self._standard(tree),
                                  self._skill(tree)) if c is not None]
        candidates.append(self._generic(tree))
        for el in candidates:
            if self._reads_back(el, tree):
                return el
        return candidates[-1]

    def _subtree(self, tree: dict[str, Any]) -> Element | None:
        if "subtree" not in tree or "type" in tree:
            return None
        attrs = {"ID": tree["subtree"]}
        if "name" in tree:
            attrs["name"] = tree["name"]
        for k, v in (tree.get("remap") or {}).items():
            attrs[k] = "{" + v + "}"
        passed = []
        for k, v in (tree.get("values") or {}).items():
            if isinstance(v, str) and _REF.match(v):  # an input given by name: BT.CPP's remap
                attrs[k] = v
                passed.append(k)
            else:
                attrs[k] = self.text(v, "any")
        if passed:  # (BT.CPP ignores '_' attributes; the importer reads these as values)
            attrs["_values"] = ";".join(passed)
        self.subtree_ports.setdefault(tree["subtree"], set()).update(
            k for k in attrs if k[:1].isalpha() and k not in ("ID", "name"))
        if tree.get("autoremap", True):
            attrs["_autoremap"] = "true"
        return Element("SubTree", attrs, 0, 0)

    def _standard(self, tree: dict[str, Any]) -> Element | None:
        kind, name = tree.get("type"), tree.get("name")
        attrs = {"name": name} if isinstance(name, str) else {}
        kids = [self.node(c) for c in tree.get("children", ())]
        child = [self.node(tree["child"])] if isinstance(tree.get("child"), dict) else []
        if kind in ("sequence", "selector"):
            memory = tree.get("memory", True)
            tag = {("sequence", True): "Sequence", ("sequence", False): "ReactiveSequence",
                   ("selector", True): "Fallback", ("selector", False): "ReactiveFallback"}[
                       (kind, bool(memory))]
            return Element(tag, attrs, 0, 0, kids)
        if kind == "parallel":
            if tree.get("policy", "all") == "all":
                return Element("ParallelAll", attrs, 0, 0, kids)
            return Element("Parallel", {**attrs, "success_count": "1", "failure_count": "1"},
                           0, 0, kids)
        if kind in _STANDARD:
            return Element(_STANDARD[kind], attrs, 0, 0, child)
        if kind == "retry":
            return Element("RetryUntilSuccessful",
                           {**attrs, "num_attempts": str(tree.get("attempts"))}, 0, 0, child)
        if kind == "repeat":
            return Element("Repeat", {**attrs, "num_cycles": str(tree.get("times"))}, 0, 0,
                           child)
        if kind in ("timeout", "delay") and isinstance(tree.get("seconds"), int | float):
            msec = round(tree["seconds"] * 1000)
            return Element("Timeout" if kind == "timeout" else "Delay",
                           {**attrs, "msec" if kind == "timeout" else "delay_msec": str(msec)},
                           0, 0, child)
        if kind in ("success", "failure"):
            return Element("AlwaysSuccess" if kind == "success" else "AlwaysFailure", attrs)
        if kind == "wait_for" and set(tree) == {"type", "name", "seconds"}:
            return Element("Sleep", {**attrs, "msec": str(round(tree["seconds"] * 1000))})
        return None

    def _skill(self, tree: dict[str, Any]) -> Element | None:
        skill = tree.get("skill")
        skills = self.registries.skills
        if not isinstance(skill, str) or skills is None or skill not in skills:
            return None
        attrs: dict[str, str] = {}
        if isinstance(tree.get("name"), str):
            attrs["name"] = tree["name"]
        model = skills.get(skill).params_model
        placeholders = []
        for k, v in (tree.get("params") or {}).items():
            info = model.model_fields.get(k)
            kind = self.reader.field_kind(info.annotation) if info is not None else "any"
            if isinstance(v, str) and _REF.match(v):  # a parameter: BT.CPP reads that key
                attrs[k] = v
                placeholders.append(k)
            else:
                attrs[k] = self.text(v, kind)
        for k, v in (tree.get("inputs") or {}).items():
            attrs[k] = "{" + v + "}"
        for k in SKILL_PORTS:
            if k in tree and k in ("output", "snapshot") and isinstance(tree[k], str):
                attrs[k] = "{" + tree[k] + "}"
            elif k in tree:
                attrs[k] = self.text(tree[k], SKILL_PORTS[k][1])
        if placeholders:  # (BT.CPP ignores '_' attributes; the importer reads these as params)
            attrs["_params"] = ";".join(placeholders)
        return Element(model_id(skill), attrs, 0, 0)

    def _generic(self, tree: dict[str, Any]) -> Element:
        kind = tree.get("type") or ("skill_action" if "skill" in tree else "")
        if kind not in self.registries.nodes:
            return Element(str(kind or "unknown"), {}, 0, 0)
        manifest = self.registries.nodes.get(kind).manifest
        el = Element(model_id(kind), {}, 0, 0)
        whole = []
        for key, value in tree.items():
            port = manifest.port(key)
            if key == "name":
                el.attrs["name"] = value
            elif port is None:
                continue
            elif port.type == "tree":
                el.children.append(self.node(value))
            elif port.type == "trees":
                el.children.extend(self.node(v) for v in value)
            elif port.blackboard in ("read", "write") and isinstance(value, str):
                el.attrs[key] = "{" + value + "}"
            elif isinstance(value, str) and _REF.match(value):  # the whole value: {name}
                el.attrs[key] = value
                if port.type == "list":  # (not the list of that one item)
                    whole.append(key)
            else:
                el.attrs[key] = self.text(value, port.type)
        if whole:
            el.attrs["_whole"] = ";".join(whole)
        return el


def _xml(el: Element, indent: int = 0) -> list[str]:
    pad = "  " * indent
    attrs = "".join(f" {k}={quoteattr(v)}" for k, v in el.attrs.items())
    if not el.children and not el.text:
        return [f"{pad}<{el.tag}{attrs}/>"]
    if not el.children:
        return [f"{pad}<{el.tag}{attrs}>{escape(el.text)}</{el.tag}>"]
    lines = [f"{pad}<{el.tag}{attrs}>"]
    for kid in el.children:
        lines += _xml(kid, indent + 1)
    return [*lines, f"{pad}</{el.tag}>"]


def _unique(base: str, taken: set[str]) -> str:
    name = base
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def export_xml(data: dict[str, Any], registries: Registries, *,
               included: dict[str, Any] | None = None) -> str:
    """The XML of a task document's data (:func:`harness_bt.authoring.writers.yaml.spec_to_data`);
    ``included``: the subtrees of the files it includes (name -> tree), written too so
    Groot2 shows every tree (the import takes them from the included files)."""
    writer = _Writer(registries)
    subtrees: dict[str, Any] = {**(included or {}), **data.get("subtrees", {})}
    taken = set(subtrees)
    main_id = _unique(data["name"], taken)
    trees: list[Element] = []

    def phase(p: dict[str, Any]) -> Element:
        kind = p.get("kind", "atomic")
        tag = {"atomic": "Phase", "compound": "CompoundPhase", "parallel": "ParallelPhase",
               "final": "FinalPhase", "history": "HistoryPhase"}[kind]
        el = Element(tag, {"id": p["id"]}, 0, 0)
        for key in ("initial", "reason", "type", "default", "description"):
            if p.get(key) is not None:
                el.attrs[key] = str(p[key])
        if p.get("transitions"):
            el.attrs["transitions"] = format_transitions(p["transitions"])
        if kind == "atomic":
            tree_id = _unique(f"phase_{p['id']}", taken)
            trees.append(Element("BehaviorTree", {"ID": tree_id}, 0, 0,
                                 [writer.node(p["tree"])]))
            el.children.append(Element("SubTree", {"ID": tree_id, "_autoremap": "true"}))
        for key in ("phases", "regions"):
            el.children.extend(phase(c) for c in p.get(key, ()))
        return el

    task = Element("Task", {}, 0, 0)
    for key in ("name", "version", "description", "instruction", "scene", "initial"):
        if data.get(key) not in (None, ""):
            task.attrs[key] = str(data[key])
    for key, value in (data.get("budget") or {}).items():
        if value is not None:
            task.attrs[key] = writer.text(value, "float" if key == "max_time_s" else "int")
    for key in ("instructions", "includes"):
        if data.get(key):
            task.attrs[key] = writer.text(list(data[key]), "list")
    for key in ("params", "blackboard", "guards", "metadata"):
        if data.get(key):
            task.attrs[key] = writer.text(data[key], "dict")
    params = dict(data.get("params") or {})
    script = parameters_script(params, data["name"])
    for key in params:
        if key in TASK_PORTS or not port_allowed(key):
            raise DefinitionError(
                "XML_PARAMETER", f"task {data['name']!r}: the parameter {key!r} cannot be a "
                "port of <Task> in BehaviorTree.CPP (a task field or a reserved name)",
                fix="rename the parameter")
        task.attrs[key] = "{" + key + "}"
    task.children = [*script, *(phase(p) for p in data["phases"])]
    main = Element("BehaviorTree", {"ID": main_id}, 0, 0, [task])
    for name, tree in subtrees.items():
        trees.append(Element("BehaviorTree", {"ID": name}, 0, 0, [writer.node(tree)]))
    model = tree_nodes_model(registries, params=list(params), subtrees={
        t.attrs["ID"]: sorted(writer.subtree_ports.get(t.attrs["ID"], ())) for t in trees})
    check_tree_ids([main_id, *(t.attrs["ID"] for t in trees)],
                   {m.attrs["ID"] for m in model.children if m.tag != "SubTree"},
                   f"the export of task {data['name']!r}")
    root = Element("root", {"BTCPP_format": "4", "main_tree_to_execute": main_id}, 0, 0,
                   [main, *trees, model])
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', *_xml(root)]) + "\n"
