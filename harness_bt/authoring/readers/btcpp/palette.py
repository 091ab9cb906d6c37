"""The ``<TreeNodesModel>`` of an exported file: every installed node type and skill, and the
chart's elements, with their ports (direction, type, default, description), so Groot2 shows
them in its palette and edits their ports."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel

from harness_bt.authoring.readers.btcpp.chart import TASK_PORTS
from harness_bt.authoring.readers.btcpp.elements import Element
from harness_bt.authoring.readers.btcpp.mapping import TreeReader
from harness_bt.authoring.readers.btcpp.peer import CPP_TYPES, model_id, port_allowed, real_default
from harness_bt.authoring.registries import Registries
from harness_bt.nodes.base import NodeManifest

__all__ = ["SKILL_PORTS", "port_syntax", "tree_nodes_model"]

#: The ports a skill's element takes besides its params (see ``act_and_evaluate`` and
#: ``skill_action``): name -> (direction, type, description)
SKILL_PORTS = {
    "output": ("output_port", "str", "blackboard key for the command id: the element is then "
               "a bare skill_action, judged by a later evaluate node"),
    "snapshot": ("input_port", "str", "blackboard key of the observation snapshot the "
                 "command relies on"),
    "premises": ("input_port", "list", "objects whose observed versions the command rests "
                 "on (a;b)"),
    "max_observations": ("input_port", "int", "observations the evaluator may wait for"),
    "handover": ("input_port", "bool", "leave the command running for a later phase"),
    "no_progress_s": ("input_port", "float", "seconds without progress before it fails"),
}
_CPP = CPP_TYPES
_KIND = {"composite": "Control", "decorator": "Decorator", "condition": "Condition"}


def port_syntax(kind: str) -> str:
    """How a value of ``kind`` is written in an attribute."""
    return {"list": "a list: a;b;c", "dict": "a mapping: key:value;key:value",
            "bool": "true or false", "json": "json:..."}.get(kind, "")


def _port(direction: str, name: str, kind: str, description: str,
          default: Any = None, cpp: str | None = None) -> Element:
    attrs = {"name": name, "type": cpp or _CPP.get(kind, "std::string")}
    if real_default(default):
        attrs["default"] = _default_text(default)
    syntax = port_syntax(kind)
    text = "; ".join(t for t in (description, syntax) if t)
    return Element(direction, attrs, 0, 0, text=text)


def _default_text(value: Any) -> str:
    """A default in BT.CPP's own text: ``true``, ``0.5``, ``a;b``, ``key:value;key:value``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ";".join(_default_text(v) for v in value)
    if isinstance(value, dict):
        return ";".join(f"{k}:{_default_text(v)}" for k, v in value.items())
    return str(value)


def _cpp_type(annotation: Any) -> str:
    """``list[float]`` -> ``std::vector<double>``."""
    kind = TreeReader.field_kind(annotation)
    if kind == "list":
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        item = _CPP.get(TreeReader.field_kind(args[0]), "std::string") if args else "std::string"
        return f"std::vector<{item}>"
    return _CPP.get(kind, "std::string")


def _bounds(info: Any) -> str:
    """A field's bounds in words (``>= 0, <= 0.3``)."""
    out = []
    for item in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"),
                           ("min_length", "length >=")):
            value = getattr(item, attr, None)
            if value is not None:
                out.append(f"{sign} {value}")
    return ", ".join(out)


def _node_type(manifest: NodeManifest) -> Element:
    branches = [p for p in manifest.ports if p.type in ("tree", "trees")]
    tag = _KIND.get(manifest.kind, "Action")
    if branches:
        tag = "Decorator" if len(branches) == 1 and branches[0].type == "tree" else "Control"
    elif tag in ("Control", "Decorator"):
        tag = "Action"
    el = Element(tag, {"ID": model_id(manifest.type_name)}, 0, 0)
    for p in manifest.ports:
        if p.type in ("tree", "trees") or not port_allowed(p.name):
            continue
        direction = "output_port" if p.blackboard == "write" else "input_port"
        el.children.append(_port(direction, p.name, p.type, p.description, p.default))
    status = "; ".join(f"{k}: {v}" for k, v in manifest.status.items())
    _describe(el, "; ".join(t for t in (manifest.description, status) if t))
    return el


def _describe(el: Element, text: str) -> None:
    """A node model's description, as BehaviorTree.CPP 4 writes a manifest's metadata."""
    if text:
        el.children.append(Element("MetadataFields", {}, 0, 0,
                                   [Element("Metadata", {"description": text})]))


def _skill(name: str, skill: Any) -> Element:
    el = Element("Action", {"ID": model_id(name)}, 0, 0)
    model: type[BaseModel] = skill.params_model
    for field_name, info in model.model_fields.items():
        if not port_allowed(field_name):
            continue
        default = None if info.is_required() else info.default
        text = "; ".join(t for t in (info.description or "", _bounds(info),
                                     "" if default is not None else "required") if t)
        el.children.append(_port("input_port", field_name, TreeReader.field_kind(info.annotation),
                                 text, default, _cpp_type(info.annotation)))
    for port, (direction, kind, text) in SKILL_PORTS.items():
        el.children.append(_port(direction, port, kind, text))
    _describe(el, f"skill {name}: {skill.description or ''}".strip())
    return el


def _chart(params: list[str]) -> list[Element]:
    trans = ("transitions", "list", "event -> target; ... (qualified: event [reason=X] "
             "[guard=G] [when=EXPR] -> target), tried in order")
    task = Element("Control", {"ID": "Task"}, 0, 0)
    for name, (kind, text) in TASK_PORTS.items():
        if port_allowed(name):  # `name` is BT.CPP's instance name: the task's name there
            task.children.append(_port("input_port", name, kind, text))
    for name in params:  # each read from the main tree's blackboard, where it is set
        task.children.append(_port("input_port", name, "str", f"the task parameter {name} "
                                   "(a main-tree blackboard entry)"))
    rows: list[tuple[str, str, list[tuple[str, str, str]]]] = [
        ("Decorator", "Phase", [("id", "str", "the phase id"), trans]),
        ("Control", "CompoundPhase", [("id", "str", "the phase id"),
                                      ("initial", "str", "the first phase inside"), trans]),
        ("Control", "ParallelPhase", [("id", "str", "the phase id"), trans]),
        ("Action", "FinalPhase", [("id", "str", "the phase id"),
                                  ("reason", "str", "done or aborted_<why> (default: id)")]),
        ("Action", "HistoryPhase", [("id", "str", "the phase id"),
                                    ("type", "str", "shallow or deep"),
                                    ("default", "str", "the phase entered when there is no "
                                     "history yet (default: the compound's initial)")]),
    ]
    out = [task]
    for tag, ident, ports in rows:
        el = Element(tag, {"ID": ident}, 0, 0)
        for name, kind, text in [*ports, ("description", "str", "what the phase does")]:
            el.children.append(_port("input_port", name, kind, text))
        out.append(el)
    return out


def tree_nodes_model(registries: Registries, *, params: list[str] | None = None,
                     subtrees: dict[str, list[str]] | None = None) -> Element:
    """The ``<TreeNodesModel>`` element for these registries: one model per node type and
    skill (``<Action ID="grasp">``), its ports (``<input_port name type default>`` with the
    description as text) and its description (``<MetadataFields>``)."""
    model = Element("TreeNodesModel", {}, 0, 0)
    model.children.extend(_chart(params or []))
    for _, nt in sorted(registries.nodes.items()):
        model.children.append(_node_type(nt.manifest))
    skills = registries.skills
    if skills is not None:
        for name in sorted(skills.names()):
            model.children.append(_skill(name, skills.get(name)))
    for tree_id, ports in (subtrees or {}).items():  # BT.CPP's own model of a <SubTree>
        el = Element("SubTree", {"ID": tree_id}, 0, 0)
        for port in ports:
            el.children.append(_port("inout_port", port, "str", "a subtree port"))
        model.children.append(el)
    return model
