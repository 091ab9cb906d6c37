"""Task parameters: declarations (:class:`~harness_bt.authoring.model.ParamSpec`, under a task's
``params:``) bound to values. A value comes from ``--set NAME=TEXT`` (text, read by the
declared type: ``0.1`` a number, ``[0, 0.1, 0]`` or ``0,0.1,0`` a vector, ``true`` a boolean),
from ``load_task(path, params={...})`` (a value, or text read the same way), else from the
declaration's default; a parameter without a default must be given.

>>> from harness_bt.authoring.model import ParamSpec
>>> check_value(ParamSpec(type="vector", size=3), "0,0.1,0")
[0.0, 0.1, 0.0]
>>> check_value(ParamSpec(type="number", min=0), "-1")
Traceback (most recent call last):
...
ValueError: -1.0 is below the minimum 0.0
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from harness_bt.authoring.model import ParamSpec
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem, Severity
from harness_bt.source import DocPath, Document, format_path

__all__ = ["Binding", "bind_params", "bind_values", "check_value", "describe", "parse_text",
           "python_params", "unused_params"]

_OBJECT_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def describe(decl: ParamSpec) -> str:
    """What a declaration admits, in words: ``a number between 0 and 1``."""
    text = {"object": "an object id", "string": "text", "number": "a number",
            "integer": "a whole number", "boolean": "true or false",
            "vector": "a list of numbers"}[decl.type]
    if decl.type == "vector" and decl.size is not None:
        text = f"a list of {decl.size} numbers"
    if decl.min is not None and decl.max is not None:
        text += f" between {decl.min:g} and {decl.max:g}"
    elif decl.min is not None:
        text += f" >= {decl.min:g}"
    elif decl.max is not None:
        text += f" <= {decl.max:g}"
    if decl.choices:
        text += f", one of {', '.join(map(_show, decl.choices))}"
    return text


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a number")
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    return float(value)


def _typed(decl: ParamSpec, value: Any) -> Any:
    kind = decl.type
    if kind == "object":
        if not isinstance(value, str) or not _OBJECT_ID.match(value):
            raise ValueError(f"{value!r} is not an object id (letters, digits, _ . -; "
                             "starting with a letter or _)")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not text")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"{value!r} is not true or false")
        return value
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{value!r} is not a whole number")
        return value
    if kind == "number":
        return _number(value)
    if not isinstance(value, list | tuple):
        raise ValueError(f"{value!r} is not a list of numbers")
    out = [_number(v) for v in value]
    if decl.size is not None and len(out) != decl.size:
        raise ValueError(f"{_show(out)} has {len(out)} numbers, not {decl.size}")
    return out


def check_value(decl: ParamSpec, value: Any) -> Any:
    """``value`` as the declared type (text is read by :func:`parse_text` unless the type is
    text); ValueError saying why it does not fit."""
    if isinstance(value, str) and decl.type not in ("object", "string"):
        value = parse_text(decl, value)
    out = _typed(decl, value)
    if decl.type in ("number", "integer"):
        if decl.min is not None and out < decl.min:
            raise ValueError(f"{out!r} is below the minimum {decl.min!r}")
        if decl.max is not None and out > decl.max:
            raise ValueError(f"{out!r} is above the maximum {decl.max!r}")
    if decl.choices is not None and out not in decl.choices:
        raise ValueError(f"{_show(out)} is not one of {', '.join(map(_show, decl.choices))}")
    return out


def parse_text(decl: ParamSpec, text: str) -> Any:
    """Command-line text as a value of the declared type (not yet range-checked)."""
    raw = text.strip()
    if decl.type in ("object", "string"):
        return text
    if decl.type == "boolean":
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise ValueError(f"{text!r} is not true or false")
    if decl.type == "vector":
        if raw.startswith("["):
            try:
                items = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{text!r} is not a list of numbers ({exc.msg})") from None
        else:
            items = [part.strip() for part in raw.split(",")] if raw else []
        return [_parse_number(str(v)) if isinstance(v, str) else v for v in items]
    return _parse_number(raw)


def _parse_number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def _example(decl: ParamSpec) -> str:
    if decl.choices:
        return _show(decl.choices[0])
    return {"object": "red_cube", "string": "text", "number": "0.1", "integer": "3",
            "boolean": "true", "vector": ",".join(["0"] * (decl.size or 3))}[decl.type]


@dataclass
class Binding:
    """The parameters of one document bound to values: the declarations that read, the
    values (name -> value), and every problem found on the way."""

    declared: dict[str, ParamSpec] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: names whose declaration, default or given value was refused (and reported): where
    #: they are used they are not "undeclared" again (a refused value has a stand-in)
    broken: set[str] = field(default_factory=set)


def _declarations(doc: Document, binding: Binding) -> None:
    data = doc.data if isinstance(doc.data, dict) else {}
    raw = data.get("params")
    if not isinstance(raw, dict):
        return  # absent, or reported by the task model
    for name, item in raw.items():
        try:
            decl = ParamSpec.model_validate(item)
        except ValidationError:
            binding.broken.add(str(name))  # the task model reports why
            continue
        binding.declared[str(name)] = decl
        _check_declaration(doc, str(name), decl, binding)


def _check_declaration(doc: Document, name: str, decl: ParamSpec, binding: Binding) -> None:
    here = ("params", name)

    def add(code: str, message: str, path: DocPath, fix: str) -> None:
        key = path[-1] in ("min", "max", "size")  # the key is the fault; else the value
        binding.problems.append(Problem(code, message, doc.where(path, key=key), fix=fix,
                                        path=format_path(path)))

    for key, kinds in (("min", ("number", "integer")), ("max", ("number", "integer")),
                       ("size", ("vector",))):
        if getattr(decl, key) is not None and decl.type not in kinds:
            add("INVALID_PARAM", f"parameter {name!r} is {decl.type}: {key!r} applies to "
                f"{' and '.join(kinds)} parameters only", (*here, key),
                f"remove {key!r}, or change the type")
    if decl.min is not None and decl.max is not None and decl.min > decl.max:
        add("INVALID_PARAM", f"parameter {name!r}: min {decl.min:g} is above max {decl.max:g}",
            (*here, "min"), "swap them")
    for i, choice in enumerate(decl.choices or ()):
        try:
            _typed(decl, choice)
        except ValueError as exc:
            plain = describe(decl.model_copy(update={"choices": None}))
            add("INVALID_PARAM", f"parameter {name!r} ({decl.type}): choice {exc}",
                (*here, "choices", i), f"write {plain}")
    if decl.required:
        return
    try:
        binding.values[name] = check_value(decl, decl.default)
    except ValueError as exc:
        binding.broken.add(name)
        add("INVALID_PARAM_DEFAULT", f"the default of parameter {name!r} must be "
            f"{describe(decl)}: {exc}", (*here, "default"),
            f"write {describe(decl)}, e.g. default: {_example(decl)}")


def bind_params(doc: Document, given: Mapping[str, Any] | None = None, *,
                origin: str = "--set") -> Binding:
    """Read the declarations of ``doc`` and bind them: ``given`` values over the defaults.
    A given value that does not fit, a given name that is not declared, and a required
    parameter left without a value are problems (``origin`` names where values came from)."""
    binding = Binding()
    _declarations(doc, binding)
    bind_values(binding, given, origin=origin,
                where=lambda name: doc.where(("params", name), key=True))
    return binding


def bind_values(binding: Binding, given: Mapping[str, Any] | None, *, origin: str,
                where: Callable[[str], str]) -> None:
    """Bind ``binding.declared`` to ``given`` over their defaults (``where``: the place of a
    declaration, for a required parameter left without a value)."""
    declared = binding.declared
    for name, value in (given or {}).items():
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        at = f"{origin} {name}={text}"
        if name not in declared:
            if name in binding.broken:
                continue
            known = sorted(declared)
            binding.problems.append(Problem(
                "UNDECLARED_PARAM", f"the task declares no parameter {name!r}; its "
                f"parameters: {', '.join(known) or '(none)'}{did_you_mean(name, known)}",
                at, fix="give one of the declared parameters, or declare it in the task"))
            continue
        decl = declared[name]
        try:
            binding.values[name] = check_value(decl, value)
        except ValueError as exc:
            binding.problems.append(Problem(
                "INVALID_PARAM_VALUE", f"parameter {name!r} is {decl.type} "
                f"({describe(decl)}); got {text!r}: {exc}", at,
                fix=f"give {describe(decl)}, e.g. {origin} {name}={_example(decl)}"))
            binding.broken.add(name)
    for name, decl in declared.items():
        if name not in binding.values and name not in binding.broken and decl.required:
            binding.problems.append(Problem(
                "MISSING_PARAM_VALUE", f"parameter {name!r} ({describe(decl)}) has no default "
                "and no value was given", where(name),
                fix=f"give it ({origin} {name}={_example(decl)}), or declare a default",
                path=f"params.{name}"))
            binding.broken.add(name)
    for name in binding.broken & set(declared):  # refused: checks go on with a stand-in
        binding.values.setdefault(name, _stand_in(declared[name]))


def _stand_in(decl: ParamSpec) -> Any:
    """A value of the declared type, for checking the trees when the real one was refused
    (nothing is built then: the refusal is an error)."""
    for candidate in (decl.default, _example(decl)):
        try:
            return _typed(decl, parse_text(decl, candidate) if isinstance(candidate, str)
                          and decl.type not in ("object", "string") else candidate)
        except ValueError:
            continue
    return None  # pragma: no cover - the example always fits its type


def unused_params(doc: Document, binding: Binding, used: set[str]) -> list[Problem]:
    """A warning for every declared parameter no tree uses."""
    return [Problem("UNUSED_PARAM", f"parameter {name!r} is declared but no tree uses it "
                    f"(as '{{{name}}}')", doc.where(("params", name), key=True),
                    fix=f"use it as '{{{name}}}' in a node's value, or remove it",
                    severity=Severity.WARNING, path=f"params.{name}")
            for name in binding.declared if name not in used]


_PY_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
             list: "vector", tuple: "vector"}


def python_params(function: Any, declared: Mapping[str, Any] | None = None
                  ) -> dict[str, ParamSpec]:
    """The parameters of a Python task function: ``declared`` (a module's ``PARAMS``: name ->
    :class:`ParamSpec` or its dict) when given, else its keyword parameters (the type from
    the annotation, else from the default; no default: required)."""
    import inspect
    import typing

    if declared is not None:
        return {name: d if isinstance(d, ParamSpec) else ParamSpec.model_validate(d)
                for name, d in declared.items()}
    out: dict[str, ParamSpec] = {}
    try:
        hints = typing.get_type_hints(function)
    except (NameError, TypeError):  # unresolvable annotations: fall back to the defaults
        hints = {}
    for name, p in inspect.signature(function).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        hint = hints.get(name)
        origin = typing.get_origin(hint) or hint
        kind = _PY_TYPES.get(origin) if isinstance(origin, type) else None
        has_default = p.default is not inspect.Parameter.empty
        if kind is None and has_default and p.default is not None:
            kind = _PY_TYPES.get(type(p.default))
        fields: dict[str, Any] = {"type": kind or "string"}
        if has_default and p.default is not None:
            fields["default"] = list(p.default) if isinstance(p.default, tuple) else p.default
        out[name] = ParamSpec.model_validate(fields)
    return out
