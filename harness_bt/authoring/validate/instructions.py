"""A task's instruction templates in the validation pass: ``instruction:`` and every phrasing
under ``instructions:`` (what a planner matches, :mod:`harness_bt.planner`) may name the task's
parameters as ``{name}``; a name that is not declared, or a brace that opens no ``{name}``, is
an error at the template's place."""

from __future__ import annotations

import re
from typing import Any

from harness_bt.authoring.params import Binding
from harness_bt.authoring.placeholders import PLACEHOLDER
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem
from harness_bt.source import DocPath, Document, format_path

__all__ = ["check_instructions", "template_paths"]

_BRACE = re.compile(r"[{}]")


def template_paths(data: Any) -> list[DocPath]:
    """The document paths of every instruction template of a task document."""
    if not isinstance(data, dict):
        return []
    out: list[DocPath] = []
    if isinstance(data.get("instruction"), str):
        out.append(("instruction",))
    many = data.get("instructions")
    if isinstance(many, list):
        out += [("instructions", i) for i, t in enumerate(many) if isinstance(t, str)]
    return out


def check_instructions(doc: Document, binding: Binding) -> list[Problem]:
    """A problem for every ``{name}`` of a template that names no declared parameter, and
    for every brace that is not part of a ``{name}``."""
    out: list[Problem] = []
    known = sorted(binding.declared)
    for path in template_paths(doc.data):
        text = doc.get(path)
        at = doc.where(path)
        for m in PLACEHOLDER.finditer(text):
            name = m.group(1)
            if name in binding.declared or name in binding.broken:
                continue
            out.append(Problem(
                "UNDECLARED_PARAM", f"template {text!r} names '{{{name}}}', which is no "
                f"parameter of the task; declared: {', '.join(known) or '(none)'}"
                f"{did_you_mean(name, known)}", at,
                fix=f"declare it (params: {{{name}: {{type: ..., default: ...}}}}) or fix the "
                "name", path=format_path(path)))
        stray = _BRACE.search(PLACEHOLDER.sub("", text))
        if stray is not None:
            out.append(Problem(
                "INVALID_TEMPLATE", f"template {text!r} has a {stray.group(0)!r} that is not "
                "part of a '{name}' (a parameter's name in braces)", at,
                fix="write a parameter as {name}, letters, digits and _ only, or drop the "
                "brace", path=format_path(path)))
    return out
