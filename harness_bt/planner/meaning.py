"""The default planner, ``meaning``: no model. The instruction is parsed into a
:class:`~harness_bt.planner.parse.Frame` (what to do, the objects in their roles, an offset,
modifiers), and so is every template of every candidate task (``{param}`` slots as roles).
Each pair of frames is bound against the task's parameter types and its scene's objects:

- the roles must agree: a task that takes the object somewhere (a destination, an offset)
  is asked for with one, a task that picks it up without (and not with a verb of carrying);
- an object slot binds the one object of the scene the words name (by name, colour + shape,
  colour alone, "it"); a slot taking a theme never binds a container;
- a destination slot after "in" takes a container, after "on" a stackable object: the object
  said chooses the task, whatever preposition was used ("put the cube on the tray" puts it
  in the tray; "put the blue cube in the green cube" stacks it);
- a fixed group in a template ("every red cube") is met by a plural or a quantifier that names
  the same objects ("the red cubes", "all the reds");
- an offset slot (a vector) takes the offset the numbers, units and directions give;
- clearing a surface ("clear the table") is about every object of the scene that is not a
  container, and may leave the destination unsaid when its slot has a default.

Bindings are ranked by how many modifiers (keep holding, by the policy, once) the two frames
disagree on. One best binding: the plan. Several (two tasks, or an object the words leave
open): a clarification listing them. None: a refusal with the reasons and every task."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_bt.authoring.params import check_value
from harness_bt.planner.check import task_lines
from harness_bt.planner.model import (
    Candidate,
    Decision,
    Plan,
    PlanRequest,
    Refusal,
    RefusalCode,
    SceneObject,
    digest,
)
from harness_bt.planner.parse import GENERIC, Frame, Mention, Vocabulary, parse
from harness_bt.scene.model import COLOURS

__all__ = ["Binding", "MeaningPlanner", "vocabulary"]

_LISTED = 12


@dataclass(frozen=True)
class Binding:
    """One way the instruction fits one template of one task: the parameters bound, those an
    object reference leaves open (name -> the objects it could be), and the penalty (the
    modifiers the two frames disagree on)."""

    candidate: Candidate
    template: str
    params: dict[str, Any]
    penalty: int
    open: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def key(self) -> str:
        return self.candidate.name + json.dumps(self.params, sort_keys=True) + \
            json.dumps(self.open, sort_keys=True)

    def show(self, params: dict[str, Any] | None = None) -> str:
        given = params if params is not None else self.params
        text = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                         for k, v in given.items())
        return f"{self.candidate.name} ({text})" if text else self.candidate.name


def vocabulary(candidates: Sequence[Candidate]) -> Vocabulary:
    """The colours and object words of every candidate's scene."""
    colours = set(COLOURS)
    nouns: set[str] = set()
    for c in candidates:
        for o in c.objects:
            if o.colour:
                colours.add(o.colour)
            nouns |= {w for w in o.words if not w[:1].isdigit() and w not in colours}
            if o.group:
                nouns.add(o.group)
    return Vocabulary.of(colours, nouns)


def _resolve(m: Mention, objects: Sequence[SceneObject]) -> list[SceneObject]:
    """The objects a mention names."""
    out = []
    for o in objects:
        if (m.colour is not None and o.colour != m.colour) or (m.surface and o.container):
            continue
        if all(n in GENERIC or (n == "container" and o.container) or n in o.words
               or n == o.group for n in m.nouns):
            out.append(o)
    return out


class _Reject(Exception):
    pass


def _fill(role: str, said: Mention | None, slot: Mention | None, c: Candidate,
          container: bool | None, params: dict[str, Any],
          open_: dict[str, tuple[str, ...]], given: dict[str, Any]) -> tuple[str, ...]:
    """Bind one role of a template (``slot``) to what was said; the object ids bound."""
    if (said is None) != (slot is None):
        raise _Reject(f"{role}: the task {'needs' if slot else 'takes no'} {role}")
    if said is None or slot is None:
        return ()
    hits = _resolve(said, c.objects)
    if slot.slot is None:  # a fixed reference in the template ("every red cube")
        if not said.plural:
            raise _Reject(f"the task is about every {slot.text.removeprefix('every ')}, "
                          f"not one {said.text!r}")
        wanted = {o.id for o in _resolve(slot, c.objects)}
        if {o.id for o in hits} != wanted or not wanted:
            raise _Reject(f"{said.text!r} are not the {slot.text} the task is about")
        return tuple(sorted(wanted))
    decl = c.params.get(slot.slot)
    if decl is None or decl.type != "object":
        raise _Reject(f"{{{slot.slot}}} takes no object")
    if said.plural:
        raise _Reject(f"{{{slot.slot}}} takes one object, not {said.text!r}")
    if not hits:
        known = ", ".join(f"{o.label} ({o.id})" for o in c.objects) or "(none)"
        raise _Reject(f"no object of scene {c.scene} is {said.text!r}; its objects: {known}")
    fitting = [o for o in hits if container is None or o.container == container]
    if not fitting:
        kind = "a container" if container else "something to stack on or pick up"
        raise _Reject(f"{said.text!r} ({', '.join(o.id for o in hits)}) is not {kind}")
    ids = tuple(o.id for o in fitting)
    if len(ids) == 1 or given.get(slot.slot) in ids:
        value = ids[0] if len(ids) == 1 else given[slot.slot]
        params[slot.slot] = check_value(decl, value)
        return (value,)
    open_[slot.slot] = ids
    return ids


def bind(said: Frame, template: str, frame: Frame, c: Candidate,
         given: dict[str, Any]) -> Binding:
    """The binding of an instruction's frame to one template's frame (raises
    :class:`_Reject` with the reason when they do not fit)."""
    if said.moves != frame.moves:
        raise _Reject("it takes the object somewhere" if frame.moves else
                      "it picks the object up and takes it nowhere")
    if said.verb == "transport" and not frame.moves:
        raise _Reject("a verb of carrying, but no destination or offset")
    if (said.offset is None) != (frame.offset_slot is None):
        raise _Reject("it moves the object by an offset" if frame.offset_slot else
                      "it takes no offset")
    params: dict[str, Any] = {}
    open_: dict[str, tuple[str, ...]] = {}
    themes = _fill("an object to move", said.theme, frame.theme, c, False, params, open_, given)
    into = None if frame.destination is None else \
        {"in": True, "on": False}.get(frame.destination.prep or "")
    unsaid = frame.destination is not None and said.destination is None and said.clears and \
        frame.destination.slot is not None and \
        getattr(c.params.get(frame.destination.slot), "default", None) is not None
    dests = () if unsaid else _fill("a destination", said.destination, frame.destination, c,
                                    into, params, open_, given)
    if unsaid and frame.destination is not None and frame.destination.slot is not None:
        where = frame.destination.slot  # "clear the table": where the task puts things
        params[where] = given.get(where, c.params[where].default)
    if len(themes) == 1 and themes == dests:
        raise _Reject(f"{themes[0]} cannot go on or in itself")
    for slot, other in ((frame.theme, dests), (frame.destination, themes)):
        name = slot.slot if slot is not None else None
        if name in open_ and len(other) == 1:  # one object cannot be both roles
            left = tuple(i for i in open_[name] if i != other[0])
            del open_[name]
            if len(left) == 1:
                params[name] = left[0]
            else:
                open_[name] = left
    if frame.offset_slot is not None and said.offset is not None:
        decl = c.params.get(frame.offset_slot)
        if decl is None or decl.type != "vector":
            raise _Reject(f"{{{frame.offset_slot}}} is no vector")
        try:
            params[frame.offset_slot] = check_value(decl, list(said.offset))
        except ValueError as exc:
            raise _Reject(f"offset {list(said.offset)}: {exc}") from None
    penalty = len(said.modifiers ^ frame.modifiers)
    return Binding(c, template, params, penalty, open_)


class MeaningPlanner:
    """Chooses by meaning (see the module docstring). After an abort it chooses what the
    instruction means again: it has nothing to learn from the evidence."""

    name = "meaning"

    def __init__(self, options: object = None) -> None:
        self.options = options  # nothing to configure: no model, no endpoint

    def close(self) -> None:
        pass

    def bindings(self, request: PlanRequest) -> tuple[Frame, list[Binding], list[str]]:
        """The instruction's frame, every binding that fits (best first), and why each
        template that did not fit was set aside."""
        words = vocabulary(request.candidates)
        said = parse(request.instruction, words)
        found: list[Binding] = []
        reasons: list[str] = []
        for c in request.candidates:
            for text in c.templates:
                try:
                    found.append(bind(said, text, parse(text, words), c, dict(request.given)))
                except (_Reject, ValueError) as exc:
                    reasons.append(f"{c.name} ({text!r}): {exc}")
        found.sort(key=lambda b: b.penalty)
        return said, found, reasons

    def plan(self, request: PlanRequest) -> Decision:
        said, found, reasons = self.bindings(request)
        answer: dict[str, Any] = {
            "frame": said.to_dict(),
            "ranked": [{"task": b.candidate.name, "template": b.template, "params": b.params,
                        "open": {k: list(v) for k, v in b.open.items()},
                        "penalty": b.penalty} for b in found[:_LISTED]]}
        asked = digest(request.to_dict())

        def decision(**outcome: Any) -> Decision:
            return Decision(self.name, asked, answer, **outcome)

        if said.problems:
            return decision(refusal=Refusal(
                RefusalCode.NO_MATCH, said.problems, task_lines(request.candidates),
                fix="say it again naming each object (e.g. 'the red cube') and, for a move, "
                    "which way and how far"))
        if said.theme is None and not said.moves:
            return decision(refusal=Refusal(
                RefusalCode.NO_MATCH, ("no object of any scene is named",
                                       *_near(reasons)), task_lines(request.candidates),
                fix="name the object (e.g. 'pick up the red cube')"))
        if not found:
            return decision(refusal=Refusal(
                RefusalCode.NO_MATCH, ("no task of the library fits", *_near(reasons)),
                task_lines(request.candidates),
                fix="say it with one of the tasks' objects and roles (see the tasks above), "
                    "or run a task file directly (harness run trees/NAME.yaml)"))
        best = [b for b in found if b.penalty == found[0].penalty]
        unique = list({b.key(): b for b in best}.values())
        if len(unique) == 1 and not unique[0].open:
            b = unique[0]
            return decision(plan=Plan(b.candidate.name, b.candidate.file, b.params, b.template))
        options: list[str] = []
        why: list[str] = []
        for b in unique:
            names = list(b.open)
            for ids in itertools.product(*b.open.values()):
                if len(set(ids)) < len(ids):
                    continue  # one object in two roles
                options.append(b.show({**b.params, **dict(zip(names, ids, strict=True))}))
            why += [f"{k} of {b.candidate.name} could be any of {', '.join(v)}"
                    for k, v in b.open.items()]
        options = list(dict.fromkeys(options))
        if len(options) > _LISTED:
            options = [*options[:_LISTED], f"... and {len(options) - _LISTED} more"]
        head = why or [f"{len(unique)} tasks fit the instruction equally well"]
        return decision(refusal=Refusal(
            RefusalCode.AMBIGUOUS, tuple(dict.fromkeys(head)), tuple(options),
            fix="say which: name the object by colour and shape (e.g. 'the red cube'), add "
                "how (e.g. 'and keep holding it', 'with the policy'), or --set NAME=VALUE"))


def _near(reasons: list[str]) -> tuple[str, ...]:
    """The reasons worth reading: an object that is not there first, at most a dozen."""
    ranked = sorted(dict.fromkeys(reasons), key=lambda r: ("no object" not in r,
                                                           "itself" not in r,
                                                           "is not" not in r))
    return tuple(ranked[:_LISTED])
