"""A skill's params model, described field by field: type, whether it is required, default,
range, choices, length, unit and meaning (what ``harness skills NAME`` shows and what the
validation errors' fix hints quote).

It reads any pydantic model: ranges from its ``Field(ge=..., gt=..., le=..., lt=...)``
constraints, choices from ``Literal`` types, units from the field's name by the convention of
the ``skills`` package (``height_m`` metres, ``speed_mps`` metres per second, ``settle_s``
seconds, ``tolerance_rad`` radians, ...).
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["ParamInfo", "describe_params", "signature", "unit_of"]

#: Name suffix -> unit, longest first (``speed_rad_s`` is rad/s, not s).
_UNITS = (("_rad_s", "rad/s"), ("_mps", "m/s"), ("_ms", "ms"), ("_rad", "rad"),
          ("_deg", "deg"), ("_kg", "kg"), ("_m", "m"), ("_s", "s"), ("_n", "N"))


def unit_of(name: str) -> str:
    """The unit a field's name carries (``height_m`` -> ``m``), ``""`` when none; a pose
    (``object_pose``, ``target``...) is metres, with a quaternion w, x, y, z."""
    for suffix, unit in _UNITS:
        if name.endswith(suffix):
            return unit
    if name.endswith("pose") or name == "target":
        return "m, + quaternion wxyz"
    if name.endswith(("position", "goal")):
        return "m"
    if name == "joints":
        return "rad"
    return ""


def _type_text(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return " | ".join(repr(v) for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join("None" if a is type(None) else _type_text(a)
                          for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_text(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(_type_text(a) for a in typing.get_args(annotation))
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{args}]" if args else name
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _choices(annotation: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        out: tuple[Any, ...] = ()
        for arg in typing.get_args(annotation):
            out += _choices(arg)
        return out
    return ()


@dataclass(frozen=True, slots=True)
class ParamInfo:
    """One field of a params model. Bounds are None when absent; ``default`` is meaningful
    only when not ``required``."""

    name: str
    type: str
    required: bool
    default: Any = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    exclusive_maximum: float | None = None
    choices: tuple[Any, ...] = ()
    min_length: int | None = None
    max_length: int | None = None
    unit: str = ""
    description: str = ""

    def range_text(self) -> str:
        """``[0.03, 0.3]``, ``(0, 0.5]``, ``>= 0``, ``< 1`` or ``""``."""
        low = self.minimum if self.minimum is not None else self.exclusive_minimum
        high = self.maximum if self.maximum is not None else self.exclusive_maximum
        if low is None and high is None:
            return ""
        if low is None:
            return f"{'<=' if self.maximum is not None else '<'} {high:g}"
        if high is None:
            return f"{'>=' if self.minimum is not None else '>'} {low:g}"
        return (f"{'[' if self.minimum is not None else '('}{low:g}, {high:g}"
                f"{']' if self.maximum is not None else ')'}")

    def length_text(self) -> str:
        """``3 items``, ``3 to 7 items``, ``non-empty`` (text) or ``""``."""
        low, high = self.min_length, self.max_length
        items = "characters" if self.type.startswith("str") else "items"
        if low is None and high is None:
            return ""
        if self.type.startswith("str") and low == 1 and high is None:
            return "non-empty" if self.required else ""
        if low == high:
            return f"{low} {items}"
        if high is None:
            return f"at least {low} {items}"
        return f"{low or 0} to {high} {items}"

    def constraint_text(self) -> str:
        """Range, length and unit, as one phrase (``in [0.03, 0.3] m``)."""
        parts = []
        if self.range_text():
            parts.append(f"in {self.range_text()}" if self.range_text()[0] in "[(" else
                         self.range_text())
        if self.length_text():
            parts.append(self.length_text())
        text = " ".join(parts)
        if self.unit:
            text = f"{text} in {self.unit}" if text and not self.range_text() else \
                f"{text} {self.unit}".strip()
        return text

    def hint(self) -> str:
        """``height_m: float = 0.12 (in [0.03, 0.3] m)``: how a fix hint names the field."""
        text = f"{self.name}: {self.type}"
        if not self.required:
            text += f" = {self.default!r}"
        constraint = self.constraint_text()
        return f"{text} ({constraint})" if constraint else text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required}
        if not self.required:
            out["default"] = self.default
        for key in ("minimum", "exclusive_minimum", "maximum", "exclusive_maximum",
                    "min_length", "max_length"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.choices:
            out["choices"] = list(self.choices)
        if self.unit:
            out["unit"] = self.unit
        if self.description:
            out["description"] = self.description
        return out


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return info.default


def _bounds(info: FieldInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for meta in info.metadata:
        for attr, key in (("ge", "minimum"), ("gt", "exclusive_minimum"), ("le", "maximum"),
                          ("lt", "exclusive_maximum"), ("min_length", "min_length"),
                          ("max_length", "max_length")):
            value = getattr(meta, attr, None)
            if value is not None and isinstance(meta, annotated_types.BaseMetadata):
                out[key] = value
    return out


def describe_params(model: type[BaseModel]) -> list[ParamInfo]:
    """Every field of ``model``, in declaration order (by alias when it has one)."""
    out = []
    for name, info in model.model_fields.items():
        required = info.is_required()
        default = None if required else _default(info)
        if isinstance(default, float) and not math.isfinite(default):
            default = str(default)
        key = info.alias or name
        out.append(ParamInfo(
            name=key, type=_type_text(info.annotation), required=required, default=default,
            choices=_choices(info.annotation), unit=unit_of(key),
            description=" ".join((info.description or "").split()), **_bounds(info)))
    return out


def signature(model: type[BaseModel]) -> str:
    """``LiftParams(object_id: str (non-empty), height_m: float = 0.12 (in [0.03, 0.3] m), ...)``:
    the model as a fix hint quotes it (required fields have no default)."""
    return f"{model.__name__}({', '.join(p.hint() for p in describe_params(model))})"
