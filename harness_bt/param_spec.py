"""The declaration of a document parameter, one class for task and scene documents alike.

A task declares its parameters under ``params:`` (``{name}`` in its trees stands for the
value); a scene declares the parameters its instruction and success condition use. Both are a
:class:`ParamSpec`: a type, a default (none: required), and what values it admits. A task and
the scene it names share parameters by name (``--set target=blue_cube`` binds both).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["PARAM_TYPES", "ParamSpec", "ParamType"]

#: The types a parameter can have.
PARAM_TYPES = ("object", "string", "number", "integer", "boolean", "vector")
ParamType = Literal["object", "string", "number", "integer", "boolean", "vector"]


def _integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


class ParamSpec(BaseModel):
    """A parameter: its type, its default (none: the parameter is required), and what values
    it admits. ``{name}`` in a task's tree values stands for the parameter's value
    (:mod:`harness_bt.authoring.placeholders`); in a scene, its name in the success condition
    and ``{name}`` in its instruction."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    type: ParamType = Field(description="object (an object id) | string | number | integer "
                            "| boolean | vector (a list of numbers)")
    default: Any = Field(None, description="the value when none is given (none: required)")
    description: str = ""
    choices: list[Any] | None = Field(None, min_length=1,
                                      description="the only values admitted")
    min: float | None = Field(None, description="number / integer: the smallest value")
    max: float | None = Field(None, description="number / integer: the largest value")
    size: Annotated[int, Field(ge=1), BeforeValidator(_integral)] | None = Field(
        None, description="vector: its length")

    @property
    def required(self) -> bool:
        return "default" not in self.model_fields_set or self.default is None
