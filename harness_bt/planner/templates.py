"""The default planner, ``templates``: no model. It matches the instruction against every
template of every candidate task, word by word (:mod:`harness_bt.planner.words`: case,
punctuation, articles and a few synonyms do not matter), binding each ``{param}`` slot by the
parameter's type: an ``object`` to the one object of the task's scene its words name ("green
cube" -> ``green_cube``), a number, a vector (numbers), a boolean, text.

One task and binding fits: that is the plan. More than one fits, or a slot names several
objects ("the cube" among three cubes): a clarification is asked for, listing what fits. None
fits: the instruction is refused, listing the tasks and their templates (and, when a template
fitted but a word named no object, which word)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness_bt.authoring.model import ParamSpec
from harness_bt.authoring.params import check_value, describe
from harness_bt.authoring.placeholders import PLACEHOLDER
from harness_bt.planner.check import task_lines
from harness_bt.planner.model import (
    Candidate,
    Decision,
    Plan,
    PlanRequest,
    Refusal,
    RefusalCode,
    digest,
)
from harness_bt.planner.words import NUMBER, normalise

__all__ = ["Template", "TemplatePlanner", "compile_template"]

_LISTED = 12  # candidates a clarification lists at most
_BOOLEAN = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}


@dataclass(frozen=True)
class Template:
    """A template as words and slots: ``("pick", ("target",))`` parts, where a 1-tuple is
    the slot of that parameter."""

    text: str
    parts: tuple[str | tuple[str], ...]


def compile_template(text: str) -> Template:
    """``"pick up the {target}"`` -> parts ``("pick", ("target",))``."""
    parts: list[str | tuple[str]] = []
    at = 0
    for m in PLACEHOLDER.finditer(text):
        parts += normalise(text[at:m.start()])
        parts.append((m.group(1),))
        at = m.end()
    parts += normalise(text[at:])
    return Template(text, tuple(parts))


def _splits(parts: Sequence[str | tuple[str]], words: Sequence[str]
            ) -> Iterator[dict[str, tuple[str, ...]]]:
    """Every way the words fit the template: slot name -> the words it takes (one or more)."""
    if not parts:
        if not words:
            yield {}
        return
    head, rest = parts[0], parts[1:]
    if isinstance(head, str):
        if words and words[0] == head:
            yield from _splits(rest, words[1:])
        return
    for n in range(1, len(words) - sum(isinstance(p, str) for p in rest) + 1):
        for tail in _splits(rest, words[n:]):
            yield {head[0]: tuple(words[:n]), **tail}


@dataclass(frozen=True)
class _Slot:
    value: Any = None
    ambiguous: tuple[str, ...] = ()
    error: str = ""


def _bind(candidate: Candidate, name: str, decl: ParamSpec, phrase: tuple[str, ...]) -> _Slot:
    text = " ".join(phrase)
    if decl.type == "object":
        wanted = set(phrase)
        hits = [o.id for o in candidate.objects if wanted <= o.words]
        exact = [o.id for o in candidate.objects if normalise(o.id) == list(phrase)]
        if len(exact) == 1:
            hits = exact
        if not hits:
            known = ", ".join(f"{o.label} ({o.id})" for o in candidate.objects) or "(none)"
            return _Slot(error=f"task {candidate.name}: no object of scene {candidate.scene} "
                               f"is called {text!r} (for {{{name}}}); its objects: {known}")
        if len(hits) > 1:
            return _Slot(ambiguous=tuple(hits))
        value: Any = hits[0]
    elif decl.type in ("number", "integer"):
        if len(phrase) != 1 or not NUMBER.match(phrase[0]):
            return _Slot(error=f"task {candidate.name}: {{{name}}} is {describe(decl)}, "
                               f"not {text!r}")
        value = phrase[0]
    elif decl.type == "vector":
        if not all(NUMBER.match(w) for w in phrase):
            return _Slot(error=f"task {candidate.name}: {{{name}}} is {describe(decl)}, "
                               f"not {text!r}")
        value = [float(w) for w in phrase]
    elif decl.type == "boolean":
        if text not in _BOOLEAN:
            return _Slot(error=f"task {candidate.name}: {{{name}}} is true or false, "
                               f"not {text!r}")
        value = _BOOLEAN[text]
    else:
        value = text
    try:
        return _Slot(check_value(decl, value))
    except ValueError as exc:
        return _Slot(error=f"task {candidate.name}: {{{name}}} is {describe(decl)}; "
                           f"{text!r}: {exc}")


def _settle(slot: _Slot, given: Any) -> _Slot:
    """An ambiguous object slot settled by the value the user set, when it is one of the
    objects the words could mean."""
    return _Slot(given) if slot.ambiguous and given in slot.ambiguous else slot


@dataclass(frozen=True)
class _Match:
    candidate: Candidate
    template: str
    params: dict[str, Any]
    ambiguous: dict[str, tuple[str, ...]]
    phrases: dict[str, str]


def _show(task: str, params: dict[str, Any]) -> str:
    given = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                      for k, v in params.items())
    return f"{task} ({given})" if given else task


class TemplatePlanner:
    """Chooses by the tasks' own templates (see the module docstring). After an abort it
    chooses what the instruction says again: it has nothing to learn from the evidence."""

    name = "templates"

    def __init__(self, options: object = None) -> None:
        self.options = options  # nothing to configure: no model, no endpoint

    def close(self) -> None:
        pass

    def matches(self, request: PlanRequest) -> tuple[list[_Match], list[str]]:
        """Every (task, template, binding) the instruction fits, and the near misses
        (a template that fitted the words, but a slot did not bind)."""
        words = normalise(request.instruction)
        found: list[_Match] = []
        misses: list[str] = []
        for candidate in request.candidates:
            for text in candidate.templates:
                template = compile_template(text)
                for split in _splits(template.parts, words):
                    if any(n not in candidate.params for n in split):
                        continue  # an undeclared {name}: the file check reports it
                    slots = {n: _settle(_bind(candidate, n, candidate.params[n], p),
                                        request.given.get(n))
                             for n, p in split.items()}
                    errors = [s.error for s in slots.values() if s.error]
                    if errors:
                        misses += [e for e in errors if e not in misses]
                        continue
                    found.append(_Match(
                        candidate, text, {n: s.value for n, s in slots.items()
                                          if not s.ambiguous},
                        {n: s.ambiguous for n, s in slots.items() if s.ambiguous},
                        {n: " ".join(p) for n, p in split.items()}))
        return found, misses

    def plan(self, request: PlanRequest) -> Decision:
        found, misses = self.matches(request)
        whole: dict[tuple[str, str], _Match] = {}
        for m in found:
            if not m.ambiguous:
                whole.setdefault((m.candidate.name, json.dumps(m.params, sort_keys=True)), m)
        answer: dict[str, Any] = {"words": normalise(request.instruction),
                                  "matches": [{"task": m.candidate.name, "template": m.template,
                                               "params": m.params,
                                               "ambiguous": {k: list(v) for k, v in
                                                             m.ambiguous.items()}}
                                              for m in found]}
        asked = digest(request.to_dict())

        def decision(**outcome: Any) -> Decision:
            return Decision(self.name, asked, answer, **outcome)

        if len(whole) == 1:
            (m,) = whole.values()
            return decision(plan=Plan(m.candidate.name, m.candidate.file, m.params,
                                      m.template))
        if len(whole) > 1:
            return decision(refusal=Refusal(
                RefusalCode.AMBIGUOUS, (f"{len(whole)} tasks or bindings fit the "
                                        "instruction",),
                tuple(f"{_show(m.candidate.name, m.params)} from {m.template!r}"
                      for m in whole.values()),
                fix="say it like one of them, or name the task file: harness run FILE "
                    "--set NAME=VALUE"))
        if found:
            reasons = []
            options = []
            for m in found:
                for slot, ids in m.ambiguous.items():
                    reasons.append(f"{m.phrases[slot]!r} (for {{{slot}}} of "
                                   f"{m.candidate.name}) could be any of {', '.join(ids)}")
                slots = list(m.ambiguous)
                for ids in itertools.product(*m.ambiguous.values()):
                    bound = dict(zip(slots, ids, strict=True))
                    options.append(_show(m.candidate.name, {
                        n: bound.get(n, m.params.get(n)) for n in m.phrases}))
            options = list(dict.fromkeys(options))
            if len(options) > _LISTED:
                options = [*options[:_LISTED], f"... and {len(options) - _LISTED} more"]
            return decision(refusal=Refusal(
                RefusalCode.AMBIGUOUS, tuple(dict.fromkeys(reasons)), tuple(options),
                fix="name the object by its colour and shape (e.g. 'the red cube'), or "
                    "--set NAME=OBJECT_ID"))
        reasons = misses or ["no task of the library is asked that way"]
        return decision(refusal=Refusal(
            RefusalCode.NO_MATCH, tuple(reasons), task_lines(request.candidates),
            fix="phrase it like one of the templates above, or run a task file "
                "directly (harness run trees/NAME.yaml)"))
