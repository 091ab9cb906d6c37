"""Each skill's params in the task schema, so an editor completes and checks them as the loader
does (:mod:`harness_bt.authoring.validate.nodes`).

For every skill, ``$defs/Params_<skill>`` is its params model's own JSON Schema (types,
ranges, enums, ``additionalProperties: false`` for a model that forbids unknown fields), each
value also allowed to be a ``{name}`` placeholder (a task parameter or subtree input, checked
again once bound). A node that names a skill (``skill_action``, ``act_and_evaluate``, the leaf
by skill) gets one ``if skill == NAME then ...`` rule per skill: its ``params`` must fit that
schema, the keys of ``objects`` and ``inputs`` must be params of the skill, a required param must
be given in ``params``, ``objects`` or ``inputs``, and none in two of them, as the loader
requires.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from harness_bt.authoring.model import PLACEHOLDER_PATTERN
from harness_bt.skill import SkillRegistry

__all__ = ["SKILL_NODES", "add_skill_params", "params_schema"]

#: The node definitions whose ``skill`` port names a skill.
SKILL_NODES = ("Node_skill_action", "Node_act_and_evaluate", "Node_skill_leaf")

_PLACEHOLDER = {"type": "string", "pattern": PLACEHOLDER_PATTERN,
                "description": "a task parameter or subtree input: {name}"}


def _placeholder_too(prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` or a ``{name}`` placeholder (a plain string already takes one)."""
    if prop.get("type") == "string" and not ({"enum", "const", "pattern", "maxLength"}
                                             & set(prop)):
        return prop
    keep: dict[str, Any] = {k: prop[k] for k in ("title", "description", "default") if k in prop}
    inner = {k: v for k, v in prop.items() if k not in keep}
    return {**keep, "anyOf": [inner, _PLACEHOLDER]}


def _prefixed(schema: Any, old: str, new: str) -> Any:
    if isinstance(schema, dict):
        return {k: (new + v[len(old):] if k == "$ref" and isinstance(v, str)
                    and v.startswith(old) else _prefixed(v, old, new))
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_prefixed(v, old, new) for v in schema]
    return schema


def params_schema(skill: str, model: type[BaseModel]) -> tuple[dict[str, Any],
                                                              dict[str, Any]]:
    """``(schema, defs)``: the JSON Schema of ``model`` as the params of ``skill`` in a task
    file (no ``required``: a param may come from ``objects`` or ``inputs``), and the
    definitions it refers to, named ``Params_<skill>.<Model>``."""
    raw = model.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    nested = raw.pop("$defs", {})
    prefix = f"#/$defs/Params_{skill}."
    defs = {f"Params_{skill}.{name}": _prefixed(d, "#/$defs/", prefix)
            for name, d in nested.items()}
    out = _prefixed(raw, "#/$defs/", prefix)
    out.pop("required", None)
    out["properties"] = {k: _placeholder_too(v) for k, v in out.get("properties", {}).items()}
    if model.model_config.get("extra") == "forbid":
        out["additionalProperties"] = False
    return out, defs


def _rule(skill: str, model: type[BaseModel]) -> dict[str, Any]:
    names = [f.alias or n for n, f in model.model_fields.items()]
    strict = model.model_config.get("extra") == "forbid"
    keys: dict[str, Any] = {"type": "object", "propertyNames": {"enum": names}} if strict \
        else {"type": "object"}
    then: dict[str, Any] = {"properties": {"params": {"$ref": f"#/$defs/Params_{skill}"},
                                           "objects": keys, "inputs": keys}}
    required = [f.alias or n for n, f in model.model_fields.items() if f.is_required()]
    rules: list[dict[str, Any]] = [{"anyOf": [
        {"required": [port], "properties": {port: {"required": [name]}}}
        for port in ("params", "objects", "inputs")]} for name in required]
    # each param given once: a literal, an input or an object, never two of them
    for a, b in (("params", "objects"), ("params", "inputs"), ("inputs", "objects")):
        rules += [{"not": {"required": [a, b], "properties": {
            a: {"required": [name]}, b: {"required": [name]}}}} for name in names]
    then["allOf"] = rules
    return {"if": {"required": ["skill"], "properties": {"skill": {"const": skill}}},
            "then": then}


def add_skill_params(schema: dict[str, Any], skills: SkillRegistry | None) -> dict[str, Any]:
    """``schema`` (a task or library schema) with every skill's params (see the module
    docstring); unchanged when no skills are known."""
    if skills is None or not len(skills):
        return schema
    out = copy.deepcopy(schema)
    defs = out.setdefault("$defs", {})
    rules = []
    for name, skill in skills.items():
        params, nested = params_schema(name, skill.params_model)
        defs[f"Params_{name}"] = params
        defs.update(nested)
        rules.append(_rule(name, skill.params_model))
    for node in SKILL_NODES:
        if node in defs:
            defs[node] = {**defs[node], "allOf": [*defs[node].get("allOf", []), *rules]}
    out["$defs"] = dict(sorted(defs.items()))
    return out
