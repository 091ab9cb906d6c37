"""Tree nodes as pydantic models, made from the registries' manifests.

Every registered node type becomes a model (``type`` is its tag, ``name``, one field per port,
child ports recursive, no other keys), and two shorthands join them: a leaf by skill
(``{"skill": "grasp", "name": ..., "params": ...}``, a ``skill_action``) and a subtree
reference (``{"subtree": "approach", "name": ..., "remap": {...}}``). The union validates a
tree and gives the JSON Schema of a node, so the loader and the schema cannot disagree: both
come from the same models.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
    create_model,
)

from harness_bt.authoring.model import NODE_REF, PLACEHOLDER_PATTERN, Int
from harness_bt.nodes.base import NodeManifest, NodeType, Port
from harness_bt.nodes.skill_action import SkillAction
from harness_bt.plugins import Registry

__all__ = ["SKILL_TAG", "SUBTREE_TAG", "NodeModels", "SubtreeRef", "node_tag", "resolve_node_refs"]

SKILL_TAG = "@skill"
SUBTREE_TAG = "@subtree"
NAME_PATTERN = r"^[^/#]*[^/#\s][^/#]*$"


def node_tag(value: Any) -> str | None:
    """Which model a node dict is for: its ``type``, or a shorthand."""
    if not isinstance(value, dict):
        return None
    if "type" in value:
        kind = value["type"]
        return kind if isinstance(kind, str) else repr(kind)
    if "subtree" in value:
        return SUBTREE_TAG
    if "skill" in value:
        return SKILL_TAG
    return None


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False,
                              populate_by_name=False)


class SubtreeRef(_Node):
    """Use a named subtree here. ``remap`` renames its blackboard keys (inner -> outer);
    ``values`` gives inner keys fixed values, which are also the subtree's inputs (``{key}``
    in its values); with ``autoremap`` (default) other keys are shared with the including
    tree, without it they are private to this use."""

    subtree: str = Field(description="the subtree's name (this file's or an included one)")
    name: str | None = Field(None, pattern=NAME_PATTERN,
                             description="name of this use (default: the subtree's root)")
    remap: dict[str, str] = Field(default_factory=dict,
                                  description="inner blackboard key -> outer key")
    values: dict[str, Any] = Field(default_factory=dict,
                                   description="inner key -> fixed value (a blackboard "
                                   "value, and the value of '{key}' in the subtree)")
    autoremap: bool = Field(True, description="share unmapped keys with the including tree")


_SCALAR: dict[str, Any] = {"str": str, "int": Int, "float": float, "bool": bool,
                           "list": list[Any], "dict": dict[str, Any], "expr": str, "any": Any}
_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)
_VALUE_SCHEMA = {"int": {"type": "integer"}, "float": {"type": "number"},
                 "bool": {"type": "boolean"}, "list": {"type": "array", "items": {}}}
_PLACEHOLDER_SCHEMA = {"type": "string", "pattern": PLACEHOLDER_PATTERN,
                       "description": "a task parameter or subtree input: {name}"}


def _keep_placeholder(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """``{name}`` passes (it is substituted before the value is checked again)."""
    if isinstance(value, str) and _PLACEHOLDER.fullmatch(value):
        return value
    return handler(value)


def _or_placeholder(kind: Any, port_type: str) -> Any:
    """A value port's type that also takes ``{name}`` (in the schema too)."""
    return Annotated[kind, WrapValidator(_keep_placeholder), WithJsonSchema(
        {"anyOf": [_VALUE_SCHEMA[port_type], _PLACEHOLDER_SCHEMA]})]


@dataclass
class NodeModels:
    """The node union for one pair of registries (node types; skill names when known)."""

    registry: Registry[NodeType]
    skills: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self.models: dict[str, type[BaseModel]] = {}
        tree_ref: Any = "NodeT"
        variants: list[Any] = []
        for type_name, nt in self.registry.items():
            model = self._model(type_name, nt.manifest, tree_ref)
            self.models[type_name] = model
            variants.append(Annotated[model, Tag(type_name)])
        skill_model = self._skill_leaf(tree_ref)
        self.models[SKILL_TAG] = skill_model
        self.models[SUBTREE_TAG] = SubtreeRef
        variants += [Annotated[skill_model, Tag(SKILL_TAG)],
                     Annotated[SubtreeRef, Tag(SUBTREE_TAG)]]
        union: Any = variants[0]
        for v in variants[1:]:
            union = union | v
        self.union: Any = Annotated[union, Discriminator(
            node_tag, custom_error_type="node_type",
            custom_error_message="not a known node")]
        namespace = {"NodeT": Annotated[self.union, WithJsonSchema({NODE_REF: True})]}
        for model in self.models.values():
            model.model_rebuild(_types_namespace=namespace)
        self.adapter: TypeAdapter[Any] = TypeAdapter(cast(Any, self.union))

    def _field(self, port: Port, tree_ref: Any, *, skill_port: bool = False) -> tuple[Any, Any]:
        if port.type == "tree":
            kind: Any = tree_ref
        elif port.type == "trees":
            kind = list[tree_ref]
        elif skill_port and self.skills is not None and self.skills:
            kind = Literal[tuple(sorted(self.skills))]
        else:
            kind = _SCALAR.get(port.type, Any)
            if port.type in _VALUE_SCHEMA and not port.blackboard:
                kind = _or_placeholder(kind, port.type)
        extra: Any = {"blackboard": port.blackboard} if port.blackboard else None
        description = port.description or None
        if port.required:
            return kind, Field(alias=port.name, description=description,
                               json_schema_extra=extra)
        default = port.default if isinstance(port.default, bool | int | float) else None
        return kind, Field(default, alias=port.name, description=description,
                           json_schema_extra=extra)

    def _model(self, type_name: str, manifest: NodeManifest, tree_ref: Any) -> type[BaseModel]:
        fields: dict[str, Any] = {
            "node_type": (Literal[type_name], Field(alias="type")),
            "node_name": (str, Field(alias="name", pattern=NAME_PATTERN,
                                     description="unique among siblings; no '/' or '#'")),
        }
        for port in manifest.ports:
            fields[f"p_{port.name}"] = self._field(port, tree_ref,
                                                   skill_port=self._is_skill_port(manifest,
                                                                                  port))
        return create_model(
            f"Node_{type_name}", __base__=_Node, __doc__=manifest.description, **fields)

    @staticmethod
    def _is_skill_port(manifest: NodeManifest, port: Port) -> bool:
        return port.name == "skill" and port.type == "str" and manifest.type_name in (
            "skill_action", "act_and_evaluate")

    def _skill_leaf(self, tree_ref: Any) -> type[BaseModel]:
        manifest = SkillAction.MANIFEST
        fields: dict[str, Any] = {
            "node_name": (str, Field(alias="name", pattern=NAME_PATTERN)),
        }
        for port in manifest.ports:
            fields[f"p_{port.name}"] = self._field(port, tree_ref,
                                                   skill_port=port.name == "skill")
        return create_model(
            "Node_skill_leaf", __base__=_Node,
            __doc__="A leaf by skill: a skill_action without 'type'.", **fields)

    def manifest(self, tag: str) -> NodeManifest | None:
        """The manifest behind a tag (``@skill``: skill_action's; ``@subtree``: none)."""
        if tag == SKILL_TAG:
            return SkillAction.MANIFEST
        if tag in self.registry:
            return self.registry.get(tag).manifest
        return None

    def fields(self, tag: str) -> list[str]:
        """The keys a node with this tag may have."""
        model = self.models.get(tag)
        if model is None:
            return []
        return [f.alias or name for name, f in model.model_fields.items()]

    def json_schema(self) -> dict[str, Any]:
        """``{"Node": {...oneOf...}, "Node_sequence": {...}, ...}``: definitions to merge."""
        schema = self.adapter.json_schema(ref_template="#/$defs/{model}", by_alias=True)
        defs = schema.pop("$defs", {})
        defs["Node"] = schema
        return dict(defs)


def resolve_node_refs(schema: Any) -> Any:
    """Replace every node marker in a generated schema by ``{"$ref": "#/$defs/Node"}``
    (keeping a title or description next to it)."""
    if isinstance(schema, dict):
        if schema.get(NODE_REF):
            out = {k: v for k, v in schema.items() if k in ("description",)}
            out["$ref"] = "#/$defs/Node"
            return out
        return {k: resolve_node_refs(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [resolve_node_refs(v) for v in schema]
    return schema
