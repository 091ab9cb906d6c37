"""Write a :class:`~harness_bt.authoring.model.TaskSpec` as YAML that reads well and loads back to
an equal spec: keys in a fixed, readable order; defaults left out; short mappings and lists
(a transition, a leaf's params, a pose) on one line."""

from __future__ import annotations

import json
from typing import Any

import yaml

from harness_bt.authoring.model import TaskSpec

__all__ = ["dump_yaml", "spec_to_data"]

_TASK = ("name", "version", "description", "instruction", "instructions", "scene", "metadata",
         "params", "includes", "blackboard",
         "budget", "guards", "initial", "subtrees", "phases")
_PHASE = ("id", "kind", "description", "initial", "reason", "type", "default", "tree", "phases",
          "regions", "transitions")
_TRANSITION = ("event", "target", "reason", "guard", "when", "description")
_NODE_FIRST = ("type", "subtree", "skill")
_NODE_LAST = ("child", "attempt", "recovery", "children")


def _ordered(data: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    out = {k: data[k] for k in order if k in data}
    out.update((k, v) for k, v in data.items() if k not in out)
    return out


def _node(data: Any) -> Any:
    if isinstance(data, list):
        return [_node(v) for v in data]
    if not isinstance(data, dict) or not any(k in data for k in ("type", "skill", "subtree")):
        return data
    out = {k: data[k] for k in _NODE_FIRST if k in data}
    if "name" in data:
        out["name"] = data["name"]
    out.update((k, v) for k, v in data.items() if k not in out and k not in _NODE_LAST)
    out.update((k, _node(data[k])) for k in _NODE_LAST if k in data)
    return out


def _phase(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("kind") is None:  # said for all but atomic phases, though keys could tell
        data["kind"] = "compound" if "phases" in data else "parallel" if "regions" in data \
            else None if "tree" in data else "final"
        if data["kind"] is None:
            del data["kind"]
    data.pop("final", None)
    if "tree" in data:
        data["tree"] = _node(data["tree"])
    for key in ("phases", "regions"):
        if key in data:
            data[key] = [_phase(p) for p in data[key]]
    if "transitions" in data:
        data["transitions"] = [_ordered(t, _TRANSITION) for t in data["transitions"]]
    return _ordered(data, _PHASE)


def spec_to_data(spec: TaskSpec) -> dict[str, Any]:
    """The spec as plain data (defaults left out), in the document's key order."""
    data = spec.model_dump(mode="python", by_alias=True, exclude_defaults=True)
    data["phases"] = [_phase(p) for p in data["phases"]]
    if "subtrees" in data:
        data["subtrees"] = {k: _node(v) for k, v in data["subtrees"].items()}
    return _ordered(data, _TASK)


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # lists indented under their key


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _short(value: Any, limit: int = 72) -> bool:
    try:
        return len(json.dumps(value, default=str)) <= limit
    except (TypeError, ValueError):
        return False


def _represent_dict(dumper: yaml.SafeDumper, data: dict[str, Any]) -> yaml.Node:
    flow = bool(data) and all(_scalar(v) or (isinstance(v, list) and all(map(_scalar, v)))
                              for v in data.values()) and _short(data)
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(_scalar(v) for v in data) and _short(data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def dump_yaml(spec: TaskSpec, *, header: str | None = None) -> str:
    """The spec as YAML text (``header``: comment lines to put first)."""
    text = yaml.dump(spec_to_data(spec), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     width=100, default_flow_style=False)
    if header:
        text = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + text
    return text
