"""A palette file binds a BehaviorTree.CPP user's own nodes to skills (``harness import-xml
--palette nodes.xml``).

The palette is the ``<TreeNodesModel>`` of those nodes, as Groot2 or BT.CPP's
``writeTreeNodesModelXML`` writes it. Each ``<Action>`` (or ``<Condition>``) model names the
skill it runs in its metadata, and each port the skill param it gives, when the names differ::

    <TreeNodesModel>
      <Action ID="OpenGripper">
        <input_port name="object" type="std::string" param="object_id"/>
        <MetadataFields><Metadata skill="release"/></MetadataFields>
      </Action>
    </TreeNodesModel>

Without ``skill`` metadata the model's ID names the skill (``GoHome`` -> ``go_home``); a
model of a node type's own element (``Observe``) is left as it is. An element of a bound ID
reads as that skill's element, its attributes renamed to the params.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from harness_bt.authoring.readers.btcpp.elements import Element, parse_xml, snake
from harness_bt.authoring.registries import Registries
from harness_bt.errors import DefinitionError
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem, Report

__all__ = ["Binding", "read_palette"]


@dataclass(frozen=True)
class Binding:
    """A user's node ID bound to a skill: the skill, and port name -> param name."""

    skill: str
    ports: dict[str, str] = field(default_factory=dict)

    def apply(self, el: Element) -> Element:
        """The element as the skill's own (its tag the skill, its ports renamed)."""
        attrs = {self.ports.get(k, k): v for k, v in el.attrs.items()}
        return Element(self.skill, attrs, el.line, el.column, el.children, el.text)


def _metadata(model: Element) -> dict[str, str]:
    out: dict[str, str] = {}
    for fields in model.children:
        if fields.tag == "MetadataFields":
            for item in fields.children:
                out.update(item.attrs)
    return out


def read_palette(path: str | os.PathLike[str], registries: Registries) -> dict[str, Binding]:
    """The bindings of a palette file; DefinitionError listing every problem at once (a
    model naming no skill, a port naming no param)."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError("FILE_UNREADABLE", f"--palette {name}: cannot read it: {exc}",
                              fix="check the path and that the file is UTF-8 text") from None
    root, problems = parse_xml(text, name)
    report = Report(list(problems))
    skills = registries.skills
    known = sorted(skills.names()) if skills is not None else []
    out: dict[str, Binding] = {}
    models = [m for el in (root.children if root is not None else [])
              if el.tag == "TreeNodesModel" for m in el.children]
    for model in models:
        ident = model.attrs.get("ID", "")
        where = f"{name}:{model.line}:{model.column}"
        if model.tag not in ("Action", "Condition") or not ident:
            continue
        skill = _metadata(model).get("skill") or snake(ident)
        if skill not in known and (ident in registries.nodes or snake(ident) in registries.nodes):
            continue  # a node type's own element: read as it is
        if skill not in known:
            report.add(Problem("PALETTE_UNBOUND", f"<{model.tag} ID={ident!r}> names no skill: "
                               f"{skill!r} is not one{did_you_mean(skill, known)}", where,
                               fix="add <MetadataFields><Metadata skill=\"...\"/>"
                               "</MetadataFields> naming one of: " + ", ".join(known)))
            continue
        assert skills is not None
        params = list(skills.get(skill).params_model.model_fields)
        ports: dict[str, str] = {}
        for port in model.children:
            if not port.tag.endswith("_port"):
                continue
            port_name = port.attrs.get("name", "")
            param = port.attrs.get("param", port_name)
            if param not in params:
                report.add(Problem("PALETTE_PORT", f"<{model.tag} ID={ident!r}> port "
                                   f"{port_name!r} gives no param of skill {skill!r} (its "
                                   f"params: {', '.join(params)})"
                                   f"{did_you_mean(param, params)}",
                                   f"{name}:{port.line}:{port.column}",
                                   fix="name the param: param=\"...\" on the port"))
                continue
            if param != port_name:
                ports[port_name] = param
        out[ident] = Binding(skill, ports)
    if root is not None and not models:
        report.add(Problem("PALETTE_EMPTY", "the palette models no node", name,
                           fix="give it a <TreeNodesModel> of <Action ID=...> models"))
    report.raise_for_errors(f"--palette {name}")
    return out
