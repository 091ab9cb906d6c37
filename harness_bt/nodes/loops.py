"""Iteration: :class:`ForEach` runs one body subtree per item, choosing the next item from the
world each time round.

BehaviorTree.CPP's ``LoopNode`` pops a queue fixed when the loop starts, and py_trees repeats a
child a fixed number of times; neither re-reads the world between items. A robot clearing a
table needs that: an item knocked over on the way is still left, an item already gone is not,
and "nearest first" is judged from where things are now. So the loop keeps its candidates
fixed (each has its own prebuilt body, named after it, so command ids stay apart per item) and
chooses among them, before every run, with two expressions of :mod:`harness_bt.expr`:
``where`` (is this item still left?) and ``order`` (which left item next?).

The candidates are ``over``: a list of object ids, a scene group (``{group: NAME}``, its members
known when the document is read against the task's scene) or an expression over the world
(``filter(world.objects, ...)``), evaluated once when the loop starts: its items are then
frozen, traced (``iteration`` stage ``domain``) and kept on the blackboard
(``<name>.items``, journaled at once), so that a resumed run takes the same items. Either way
each candidate's body was made when the document was read (one per object the domain may
yield), so a command id always carries its item.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import py_trees
from py_trees.common import Status

from harness_bt.context import Outcome, OutcomeKind
from harness_bt.errors import DefinitionError
from harness_bt.events import TraceKind
from harness_bt.expr import MISSING, Bound, ExprError, Expression, compile_expr, run_env
from harness_bt.nodes.base import HarnessNode, NodeManifest, Port

__all__ = ["BodyUse", "Choice", "ForEach", "for_each"]

Behaviour = py_trees.behaviour.Behaviour
_PASSED_UP = (OutcomeKind.UNKNOWN, OutcomeKind.BUDGET_EXHAUSTED)


def _expression(kind: str, name: str, text: Any, bound: Sequence[str]) -> Expression | None:
    if text is None:
        return None
    try:
        return compile_expr(text, roots=("bb", "world"), bound=bound)
    except ExprError as exc:
        raise DefinitionError("INVALID_NODE", f"for_each {name!r}: {kind}: {exc.message} at "
                              f"column {exc.column} of {text!r}", node_path=name,
                              fix=exc.fix or "see docs/expressions.md") from None


@dataclass(frozen=True)
class Choice:
    """How a :class:`ForEach` chooses its next item: ``where`` an item is still left (``it``:
    its world view), ``order`` picks among those left (``items``), ``attempts``: runs of the
    body per item at most."""

    where: str | None = None
    order: str | None = None
    attempts: int = 2
    #: what the task's scene declares of each candidate (``shape``, ``colour``, ``group``),
    #: shown on its world view to ``over``, ``where`` and ``order``
    declared: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class BodyUse:
    """The body as a document names it (the subtree, its other inputs, those per item): what
    the loop's bodies were expanded from, kept for its params, drawings and export."""

    subtree: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)
    per_item: Mapping[str, Any] = field(default_factory=dict)


class ForEach(HarnessNode, py_trees.composites.Composite):
    """Run the body once per item until no item is left (a ``for_each`` node).

    Before each run: tick ``before`` (if any) to the end, then read the world: the items left
    are the candidates for which ``where`` holds (``it``: the item's world view; without
    ``where``, those whose body has not succeeded yet) and whose runs are not spent
    (``attempts`` each); ``order`` picks one (``items``: the left ones' views; without it, the
    first in ``over``'s order). Every run after an item's first draws one retry from the
    task's budget.

    - **SUCCESS**: no item is left (at once, when none ever was).
    - **FAILURE**: ``before`` failed (its outcome passes up); the body ended ``unknown`` or
      ``budget_exhausted`` (passed up: no other item is tried); a retry was refused
      (``budget_exhausted``, the task budget's reason); or items are left whose runs are
      all spent (``failed``, reason ``ITEMS_LEFT``, with the items).
    - **RUNNING**: ``before`` or a body is running, or the loop goes round to the next item.

    A plain failure of a body (``failed``) is not the loop's: the next item is chosen.
    """

    MANIFEST = NodeManifest(
        "for_each", "composite",
        "Run a subtree once per item, choosing the next item from the world each time.",
        (Port("item", "str", True, description="the body's input the item is given as "
                                               "('{item}' in it)"),
         Port("over", "any", True, description="the candidate object ids: a list, a list "
              "parameter '{name}', a scene group {group: NAME}, or an expression over the "
              "world evaluated when the loop starts (filter(world.objects, ...))"),
         Port("body", "str", True, description="the subtree run for each item"),
         Port("values", "dict", description="the body's other inputs"),
         Port("per_item", "dict", description="inputs that differ per item: "
                                              "{input: {item: value}}"),
         Port("where", "str", description="whether an item is still left ('it': its world "
                                          "view); default: its body has not succeeded"),
         Port("order", "str", description="the item to do next ('items': the views of those "
                                          "left); default: the first left in 'over'"),
         Port("attempts", "int", default=2, description="runs of the body per item at most"),
         Port("before", "tree", description="run to the end before each choice (look)"),
         Port("each", "trees", description="one body per candidate, named after it: made "
                                           "from 'body' when the document is read"),
         Port("declared", "dict", description="what the scene declares of each candidate "
                                              "(shape, colour, group): filled when read")),
        {"SUCCESS": "no item left", "FAILURE": "before failed, a body ended unknown or "
         "exhausted, a retry was refused, or items are left with no runs to spare",
         "RUNNING": "looking, or running an item's body"},
    )

    def __init__(self, name: str, item: str, over: Sequence[str] | Mapping[str, str] | str,
                 each: Sequence[Behaviour] = (), *, before: Behaviour | None = None,
                 choice: Choice = Choice(), body: BodyUse = BodyUse()) -> None:
        self.group, self.domain = _domain_form(name, over)
        attempts = choice.attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise DefinitionError("INVALID_NODE", f"for_each {name!r}: attempts={attempts!r} "
                                  "must be a whole number >= 1", node_path=name)
        super().__init__(name, children=[*([before] if before is not None else []), *each])
        fixed = self.group is None and self.domain is None
        self.item, self.body = item, body
        self.over = tuple(over) if fixed else tuple(child.name for child in each)
        self.before = before
        self.bodies = {child.name: child for child in each}
        self.choice, self.attempts = choice, attempts
        self.where = _expression("where", name, choice.where, ("it",))
        self.order = _expression("order", name, choice.order, ("items",))
        self._reset()

    @property
    def fixed(self) -> bool:
        """Whether ``over`` lists its items (not a group nor an expression)."""
        return self.group is None and self.domain is None

    def problems(self, context: Any) -> list[str]:
        names = [c.name for c in self.children if c is not self.before]
        if not self.fixed:
            return [] if names else [
                f"for_each {self.name!r}: over={self.written()!r} has no bodies: its items "
                "come from the task's scene when a document naming it is read"]
        if sorted(names) == sorted(self.over):
            return []
        return [f"for_each {self.name!r} needs one body per item of over={list(self.over)}, "
                f"named after it; its bodies: {names} (a document expands 'body' per item)"]

    def written(self) -> Any:
        """``over`` as written: the list, ``{group: NAME}`` or the expression's text."""
        if self.group is not None:
            return {"group": self.group}
        return self.domain.text if self.domain is not None else list(self.over)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"item": self.item, "over": self.written(),
                               "attempts": self.attempts}
        if not self.fixed:
            out["candidates"] = list(self.over)
        if self.body.subtree:
            out["body"] = self.body.subtree
        for key, value in (("where", self.choice.where), ("order", self.choice.order)):
            if value is not None:
                out[key] = value
        return out

    # ------------------------------------------------------------------ state of one activation

    def _reset(self) -> None:
        self.items: tuple[str, ...] | None = self.over if self.fixed else None
        self.runs: dict[str, int] = dict.fromkeys(self.over, 0)
        self.succeeded: set[str] = set()
        self.current: str | None = None
        self.index = 0
        self._looking = True

    def initialise(self) -> None:
        self._reset()

    # ------------------------------------------------------------------ ticking

    def tick(self) -> Iterator[Behaviour]:
        if self.status != Status.RUNNING:
            for child in self.children:
                if child.status != Status.INVALID:
                    child.stop(Status.INVALID)
            self.initialise()
        if self._looking and self.before is not None:
            yield from self.before.tick()
            if self.before.status is Status.RUNNING:
                yield from self._running()
                return
            if self.before.status is Status.FAILURE:
                yield from self._end(Status.FAILURE)
                return
        if self._looking:
            self._looking = False
            ended = self._choose()
            if ended is not None:
                yield from self._end(ended)
                return
        assert self.current is not None
        body = self.bodies[self.current]
        yield from body.tick()
        if body.status is Status.RUNNING:
            yield from self._running()
            return
        ended = self._ran(body.status)
        if ended is not None:
            yield from self._end(ended)
            return
        self._looking = True  # round again on the next tick
        yield from self._running()

    def _running(self) -> Iterator[Behaviour]:
        self.status = Status.RUNNING
        yield self

    def _end(self, status: Status) -> Iterator[Behaviour]:
        self.stop(status)
        yield self

    def _declared(self, view: Any) -> Any:
        known = self.choice.declared.get(str(view.get("id"))) if isinstance(view, dict) \
            else None
        return {**known, **view} if known else view

    def _env(self) -> dict[str, Any]:
        """The expressions' roots; a world view shows what the scene declares of it."""
        ctx = self.context
        env: dict[str, Any] = dict(run_env(blackboard=ctx.blackboard, world=ctx.world,
                                           now=ctx.now))
        world = env.get("world")
        if world is not None and self.choice.declared:
            def declared(key: str | int) -> Any:
                value = world(key)
                if key == "objects" and isinstance(value, list):
                    return [self._declared(v) for v in value]
                return self._declared(value)
            env["world"] = declared
        return env

    def _view(self, env: dict[str, Any], item: str) -> Any:
        view = env["world"](item) if "world" in env else MISSING
        return view if view is not MISSING else {"id": item, **self.choice.declared.get(item, {})}

    def _frozen(self, env: dict[str, Any]) -> tuple[str, ...] | str:
        """The items of an expression ``over`` (or why there are none): evaluated the first
        time this activation starts the loop this often, then read back from the blackboard
        (a resumed run takes the items its first start found)."""
        assert self.domain is not None
        scope, ctx = self.scope, self.context
        start = scope.next_attempt(f"{self.path}@over")
        key = f"{self.name}.items"
        kept = ctx.blackboard.get(key, None) if key in ctx.blackboard else None
        if isinstance(kept, dict) and kept.get("activation") == scope.activation \
                and kept.get("start") == start and isinstance(kept.get("items"), list):
            return tuple(str(i) for i in kept["items"])
        value = self.domain.evaluate(env)
        if not isinstance(value, list | tuple):
            return f"over evaluated to {value!r}, not a list of objects"
        found = tuple(dict.fromkeys(v.get("id") if isinstance(v, dict) else v for v in value))
        items = tuple(i for i in found if isinstance(i, str))
        if len(items) != len(found):
            return f"over evaluated to {list(value)!r}: not every item is an object (or an id)"
        ctx.blackboard.set(key, {"activation": scope.activation, "start": start,
                                 "items": list(items)}, writer=self.path)
        ctx.checkpoint_wanted = f"for_each {self.name!r} over {list(items)}"
        return items

    def _domain_items(self, env: dict[str, Any]) -> Status | None:
        """Fix this start's items (a group's members; an expression's value, frozen)."""
        found = self.over if self.domain is None else self._frozen(env)
        if isinstance(found, str):
            self.fail(OutcomeKind.FAILED, "INVALID_DOMAIN", retryable=False, why=found)
            return Status.FAILURE
        self.items = found
        self.context.emit(TraceKind.ITERATION, phase=self.scope.phase, node_path=self.path,
                          stage="domain", left=list(found), over=str(self.written()))
        missing = [i for i in found if i not in self.bodies]
        if missing:
            self.fail(OutcomeKind.FAILED, "NO_BODY", retryable=False, items=missing,
                      candidates=list(self.over))
            return Status.FAILURE
        return None

    def _left(self, env: dict[str, Any]) -> list[str]:
        items = self.items or ()
        if self.where is None:
            return [i for i in items if i not in self.succeeded]
        out = []
        for item in items:
            if self.where.test({**env, "it": Bound(self._view(env, item))}):
                out.append(item)
        return out

    def _choose(self) -> Status | None:
        """Pick the next item (``self.current``), or the status the loop ends with."""
        ctx = self.context
        env = self._env()
        if self.items is None:
            ended = self._domain_items(env)
            if ended is not None:
                return ended
        left = self._left(env)
        able = [i for i in left if self.runs[i] < self.attempts]
        if not able:
            self._emit("done", left=left)
            if not left:
                self.feedback_message = f"done after {self.index} run(s)"
                return Status.SUCCESS
            self.fail(OutcomeKind.FAILED, "ITEMS_LEFT", retryable=False, items=left,
                      attempts=self.attempts)
            return Status.FAILURE
        choice = able[0]
        if self.order is not None:
            picked = self.order.evaluate({**env, "items": Bound(
                [self._view(env, i) for i in able])})
            picked = picked.get("id") if isinstance(picked, dict) else picked
            choice = picked if picked in able else choice
        if self.runs[choice] > 0:
            refused = ctx.budget.draw_retry(ctx.now, node_path=self.path)
            if refused is not None:
                self.fail(OutcomeKind.BUDGET_EXHAUSTED, refused.value, retryable=False,
                          item=choice, run=self.runs[choice] + 1)
                return Status.FAILURE
            ctx.count("retry")
        self.runs[choice] += 1
        self.index += 1
        self.current = choice
        self.feedback_message = f"#{self.index} {self.item}={choice} " \
                                f"(run {self.runs[choice]}/{self.attempts})"
        self._emit("start", item=choice, left=left)
        return None

    def _ran(self, status: Status) -> Status | None:
        """A body ended: go round again (None), or the status the loop ends with."""
        item = self.current or ""
        self._emit("end", item=item, status=status.value)
        if status is Status.SUCCESS:
            self.succeeded.add(item)
            return None
        last = self.scope.failure_this_tick()
        if last is not None and last.kind in _PASSED_UP:
            self.scope.record(Outcome(last.kind, last.reason, last.node_path, False,
                                      last.command_id, last.details, last.cause), emit=False)
            return Status.FAILURE
        return None

    def _emit(self, stage: str, *, item: str = "", status: str = "",
              left: Sequence[str] = ()) -> None:
        self.context.emit(TraceKind.ITERATION, phase=self.scope.phase, node_path=self.path,
                          stage=stage, item=item, index=self.index,
                          run=self.runs.get(item, 0), status=status, left=list(left))


_PORTS = frozenset(p.name for p in ForEach.MANIFEST.ports)


def _domain_form(name: str, over: Any) -> tuple[str | None, Expression | None]:
    """``over``'s group name or expression (both None for a list of ids)."""
    if isinstance(over, list | tuple) and all(isinstance(i, str) for i in over):
        return None, None
    if isinstance(over, Mapping) and set(over) == {"group"} and isinstance(over["group"], str):
        return over["group"], None
    if isinstance(over, str) and over.isidentifier() and over not in ("bb", "world"):
        raise DefinitionError("INVALID_NODE", f"for_each {name!r}: over={over!r} is a name, "
                              "not a list, a group or an expression", node_path=name,
                              fix=f"write over: [{over}] (one item) or over: {{group: {over}}} "
                                  "(a scene group)")
    if isinstance(over, str):
        expression = _expression("over", name, over, ())
        assert expression is not None
        return None, expression
    raise DefinitionError("INVALID_NODE", f"for_each {name!r}: over={over!r} must be a list "
                          "of object ids, {group: NAME} or an expression", node_path=name,
                          fix="write over: [cube_1, cube_2], over: '{cubes}', "
                              "over: {group: cubes} or over: \"filter(world.objects, ...)\"")


def for_each(name: str, **ports: Any) -> ForEach:
    """The ``for_each`` node type's factory: a document's ports, grouped (:class:`Choice`,
    :class:`BodyUse`)."""
    unknown = sorted(set(ports) - _PORTS)
    if unknown:
        raise DefinitionError("INVALID_NODE", f"for_each {name!r}: unknown port(s) {unknown}; "
                              f"its ports: {', '.join(sorted(_PORTS))}", node_path=name)
    for required in ("item", "over"):
        if required not in ports:
            raise DefinitionError("INVALID_NODE", f"for_each {name!r} needs {required!r}",
                                  node_path=name, fix=f"add {required}: ...")
    choice = Choice(ports.get("where"), ports.get("order"), ports.get("attempts", 2),
                    dict(ports.get("declared") or {}))
    body = BodyUse(ports.get("body") or "", dict(ports.get("values") or {}),
                   dict(ports.get("per_item") or {}))
    return ForEach(name, ports["item"], ports["over"], ports.get("each") or (),
                   before=ports.get("before"), choice=choice, body=body)
