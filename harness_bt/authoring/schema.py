"""The JSON Schema of the task format (for editor completion and for other tools), made from
the same pydantic models the loader validates with: the task skeleton, and one node model per
registered node type (their ports from the manifests, skill names when skills are known), and
each known skill's params (:mod:`harness_bt.authoring.skill_schema`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_bt.authoring.model import LibrarySpec, TaskSpec
from harness_bt.authoring.nodes import resolve_node_refs
from harness_bt.authoring.registries import Registries
from harness_bt.authoring.skill_schema import add_skill_params
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.skill import SkillRegistry

__all__ = ["BUILTIN_SCHEMA", "SCHEMA_DIALECT", "builtin_schema", "render_schema", "task_schema"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def task_schema(nodes: NodeRegistry | None = None, skills: SkillRegistry | None = None, *,
                library: bool = False) -> dict[str, Any]:
    """The schema of a task file (``library=True``: of an included file) for these
    registries (default: the built-ins and entry points)."""
    registries = Registries.installed(nodes=nodes, skills=skills)
    model = LibrarySpec if library else TaskSpec
    schema = resolve_node_refs(model.model_json_schema(by_alias=True,
                                                       ref_template="#/$defs/{model}"))
    defs = schema.setdefault("$defs", {})
    defs.update(resolve_node_refs(registries.models.json_schema()))
    out: dict[str, Any] = {"$schema": SCHEMA_DIALECT,
                           "title": "harness-bt task library" if library else "harness-bt task"}
    out.update((k, v) for k, v in schema.items() if k != "title")
    out["$defs"] = dict(sorted(defs.items()))
    return add_skill_params(out, registries.skills)


def render_schema(schema: dict[str, Any]) -> str:
    """Stable text (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


#: The committed schema: built-in node types, no skills (``harness schema --builtin -o
#: harness_bt/authoring/task.schema.json`` rewrites it; ``harness schema`` writes the one for the
#: installed node types and skills).
BUILTIN_SCHEMA = Path(__file__).with_name("task.schema.json")


def builtin_schema() -> dict[str, Any]:
    """The schema for the built-in node types and no skills."""
    return task_schema(NodeRegistry(), SkillRegistry())
