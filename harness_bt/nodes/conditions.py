"""Leaves that read the world and the blackboard: Observe, Check, WaitFor. None of them sends a
command; none of them blocks."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from py_trees.common import Status

from harness_bt.context import OutcomeKind, RunContext
from harness_bt.errors import DefinitionError
from harness_bt.expr import ExprError, Expression, compile_expr, run_env
from harness_bt.nodes.base import HarnessNode, NodeManifest, Port
from harness_bt.world import Relation, WorldSnapshot

__all__ = ["Check", "Observe", "WaitFor"]

_MISSING: Any = object()


def _relations(items: Sequence[Any], where: str) -> list[tuple[str, Relation, str]]:
    out = []
    for item in items:
        parts = item.split() if isinstance(item, str) else list(item)
        try:
            subject, rel, target = parts
            out.append((str(subject), Relation(str(rel)), str(target)))
        except ValueError:
            raise DefinitionError(
                "INVALID_NODE", f"{where}: relation {item!r} must read 'subject relation target' "
                f"with relation one of {[r.value for r in Relation]}", node_path=where,
            ) from None
    return out


def _expression_condition(expression: Expression) -> Callable[[RunContext], bool]:
    def condition(ctx: RunContext) -> bool:
        return expression.test(run_env(blackboard=ctx.blackboard, world=ctx.world,
                                       now=ctx.now))

    condition.__name__ = condition.__qualname__ = f"when {expression.text}"
    return condition


def _positive(where: str, name: str, value: float | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not math.isfinite(value) or value <= 0):
        raise DefinitionError("INVALID_NODE", f"{where}: {name}={value!r} must be positive",
                              node_path=where)


class Observe(HarnessNode):
    """Wait until observations that arrived since this leaf started show every object in
    ``objects`` with at least ``min_confidence``; then record a :class:`WorldSnapshot` of them
    on the blackboard under ``record`` (the plan the next commands rely on).

    An object a resumed run remembers (restored from its checkpoint, not seen since:
    ``provenance.remembered``) is looked for like any other; when ``timeout_s`` passes without
    a sighting, observations having arrived meanwhile that did not show it (an object in view
    would have been seen, at its old version or at a new one), it is occluded or out of view
    and the memory stands: it counts as found, and the snapshot says it came from memory.

    - **RUNNING**: not every object has been seen confidently since the leaf started.
    - **SUCCESS**: all were seen (with no objects: one new observation arrived); or, at
      ``timeout_s``, the ones not seen are remembered from before a resume.
    - **FAILURE**: ``timeout_s`` passed first (outcome ``failed``, reason ``NOT_OBSERVED``,
      naming the objects missing and why).
    """

    MANIFEST = NodeManifest(
        "observe", "action", "Wait for fresh, confident observations of objects; snapshot them.",
        (
            Port("objects", "list", description="object ids that must be seen"),
            Port("min_confidence", "float", description="default: the world model's"),
            Port("timeout_s", "float", default=2.0),
            Port("record", "str", description="blackboard key for the snapshot",
                 blackboard="write"),
        ),
        {"SUCCESS": "all objects seen confidently since the leaf started",
         "FAILURE": "not seen within timeout_s", "RUNNING": "waiting for observations"},
    )

    def __init__(self, name: str, objects: Sequence[str] = (), *,
                 min_confidence: float | None = None, timeout_s: float = 2.0,
                 record: str | None = None) -> None:
        super().__init__(name)
        _positive(name, "timeout_s", timeout_s)
        self.objects = tuple(objects)
        self.min_confidence = min_confidence
        self.timeout_s = float(timeout_s)
        self.record_key = record

    def params(self) -> dict[str, Any]:
        return {"objects": list(self.objects), "min_confidence": self.min_confidence,
                "timeout_s": self.timeout_s, "record": self.record_key}

    def initialise(self) -> None:
        self._since = self.context.now

    def update(self) -> Status:
        ctx = self.context
        world = ctx.world
        seen_at = world.latest_observation_at
        min_conf = world.min_confidence if self.min_confidence is None else self.min_confidence
        missing: dict[str, str] = {}
        remembered: set[str] = set()
        if seen_at is None or seen_at < self._since:
            missing = {oid: "no observation yet" for oid in self.objects} or {"*": "none yet"}
        else:
            for oid in self.objects:
                obj = world.get(oid)
                if obj is None:
                    missing[oid] = "never seen"
                elif obj.confidence < min_conf:
                    missing[oid] = f"confidence {obj.confidence:.2f} < {min_conf:.2f}"
                elif obj.provenance.observed_at < self._since or obj.provenance.remembered:
                    missing[oid] = f"not seen since {self._since:.3f}"
                    if obj.provenance.remembered:
                        remembered.add(oid)
                        missing[oid] += " (remembered from before the resume)"
        timed_out = ctx.now - self._since >= self.timeout_s
        if not missing or (timed_out and set(missing) <= remembered):
            if self.record_key is not None:
                ctx.blackboard.set(self.record_key, world.snapshot(self.objects, now=ctx.now),
                                   writer=self.path)
            return Status.SUCCESS
        if timed_out:
            return self.fail(OutcomeKind.FAILED, "NOT_OBSERVED", missing=missing)
        self.feedback_message = f"waiting: {missing}"
        return Status.RUNNING


class Check(HarnessNode):
    """A precondition on the world model, never RUNNING.

    - **SUCCESS**: every object in ``objects`` is known, observed at most ``max_age_s`` ago, with
      at least ``min_confidence``; every relation (``"cup on table"``) holds; and, with
      ``snapshot``, no object changed since that snapshot was taken (the plan still holds).
      With ``record``, a fresh snapshot is written to the blackboard.
    - **FAILURE**: otherwise (outcome ``failed``, reason ``UNKNOWN_OBJECT``, ``STALE``,
      ``LOW_CONFIDENCE``, ``RELATION_FALSE`` or ``STALE_PLAN``, with the details).
    """

    MANIFEST = NodeManifest(
        "check", "condition", "Precondition on the world: known, fresh, confident, related.",
        (
            Port("objects", "list"),
            Port("max_age_s", "float", default=1.0),
            Port("min_confidence", "float"),
            Port("relations", "list", description="'subject relation target' strings"),
            Port("snapshot", "str", description="fail if objects changed since this snapshot",
                 blackboard="read"),
            Port("record", "str", description="blackboard key for a new snapshot",
                 blackboard="write"),
        ),
        {"SUCCESS": "the precondition holds", "FAILURE": "it does not (reason named)"},
    )

    def __init__(self, name: str, objects: Sequence[str] = (), *, max_age_s: float = 1.0,
                 min_confidence: float | None = None, relations: Sequence[Any] = (),
                 snapshot: str | None = None, record: str | None = None) -> None:
        super().__init__(name)
        _positive(name, "max_age_s", max_age_s)
        self.objects = tuple(objects)
        self.max_age_s = float(max_age_s)
        self.min_confidence = min_confidence
        self.relations = _relations(relations, name)
        self.snapshot_key = snapshot
        self.record_key = record

    def params(self) -> dict[str, Any]:
        return {"objects": list(self.objects), "max_age_s": self.max_age_s,
                "min_confidence": self.min_confidence,
                "relations": [f"{s} {r.value} {t}" for s, r, t in self.relations],
                "snapshot": self.snapshot_key, "record": self.record_key}

    def update(self) -> Status:
        ctx = self.context
        world = ctx.world
        min_conf = world.min_confidence if self.min_confidence is None else self.min_confidence
        ids = list(dict.fromkeys([*self.objects, *(s for s, _, _ in self.relations)]))
        for oid in ids:
            obj = world.get(oid)
            if obj is None:
                return self.fail(OutcomeKind.FAILED, "UNKNOWN_OBJECT", object_id=oid)
            age = obj.age(ctx.now)
            if age > self.max_age_s:
                return self.fail(OutcomeKind.FAILED, "STALE", object_id=oid, age_s=age,
                                 max_age_s=self.max_age_s)
            if obj.confidence < min_conf:
                return self.fail(OutcomeKind.FAILED, "LOW_CONFIDENCE", object_id=oid,
                                 confidence=obj.confidence, min_confidence=min_conf)
        for subject, rel, target in self.relations:
            actual = world.related(subject, rel)
            if actual != target:
                return self.fail(OutcomeKind.FAILED, "RELATION_FALSE",
                                 relation=f"{subject} {rel.value} {target}", actual=actual)
        if self.snapshot_key is not None:
            snap = ctx.blackboard.get(self.snapshot_key)
            if not isinstance(snap, WorldSnapshot):
                return self.fail(OutcomeKind.FAILED, "MISSING_SNAPSHOT", key=self.snapshot_key)
            problem = ctx.world.premise_check_versions(snap.premises())
            if problem is not None:
                return self.fail(OutcomeKind.FAILED, "STALE_PLAN", detail=problem)
        if self.record_key is not None:
            ctx.blackboard.set(self.record_key, world.snapshot(ids, now=ctx.now),
                               writer=self.path)
        return Status.SUCCESS


class WaitFor(HarnessNode):
    """Wait for a blackboard key (optionally for a value), a condition, or a duration.

    - **RUNNING**: the condition does not hold yet (or ``seconds`` have not passed).
    - **SUCCESS**: it holds (or the time has passed).
    - **FAILURE**: ``timeout_s`` passed first (outcome ``failed``, reason ``TIMEOUT``).

    ``when`` is a declarative expression over ``bb`` and ``world`` (:mod:`harness_bt.expr`,
    e.g. ``"not exists(world.cup)"``), usable from task files; ``condition`` (Python only) is
    called with the :class:`~harness_bt.context.RunContext`.
    """

    MANIFEST = NodeManifest(
        "wait_for", "action", "Wait for a blackboard value, a condition or a duration.",
        (
            Port("key", "str", description="wait until this blackboard key is written",
                 blackboard="read"),
            Port("equals", "any", description="... and holds this value"),
            Port("when", "expr", blackboard="expr",
                 description="wait until this expression over bb / world holds"),
            Port("seconds", "float", description="wait this long"),
            Port("timeout_s", "float"),
        ),
        {"SUCCESS": "the condition holds / the time passed", "FAILURE": "timeout_s passed",
         "RUNNING": "waiting"},
    )

    def __init__(self, name: str, *, key: str | None = None, equals: Any = _MISSING,
                 seconds: float | None = None, timeout_s: float | None = None,
                 condition: Callable[[RunContext], bool] | None = None,
                 when: str | None = None) -> None:
        super().__init__(name)
        _positive(name, "seconds", seconds)
        _positive(name, "timeout_s", timeout_s)
        given = [x is not None for x in (key, seconds, condition, when)]
        if sum(given) != 1:
            raise DefinitionError(
                "INVALID_NODE",
                f"wait_for {name!r}: give exactly one of key, seconds, condition, when",
                node_path=name)
        self.when = when
        if when is not None:
            try:
                expression = compile_expr(when, roots=("bb", "world"))
            except ExprError as exc:
                raise DefinitionError("INVALID_NODE", f"wait_for {name!r}: when: {exc}",
                                      node_path=name) from None
            condition = _expression_condition(expression)
        if equals is not _MISSING and key is None:
            raise DefinitionError("INVALID_NODE", f"wait_for {name!r}: equals needs key",
                                  node_path=name)
        self.key = key
        self.equals = equals
        self.seconds = seconds
        self.timeout_s = timeout_s
        self.condition = condition

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.key is not None:
            out["key"] = self.key
        if self.equals is not _MISSING:
            out["equals"] = self.equals
        if self.seconds is not None:
            out["seconds"] = self.seconds
        if self.timeout_s is not None:
            out["timeout_s"] = self.timeout_s
        if self.when is not None:
            out["when"] = self.when
        elif self.condition is not None:
            out["condition"] = getattr(self.condition, "__name__", "callable")
        return out

    def initialise(self) -> None:
        self._since = self.context.now

    def update(self) -> Status:
        ctx = self.context
        waited = ctx.now - self._since
        if self.seconds is not None:
            return Status.SUCCESS if waited >= self.seconds else Status.RUNNING
        if self.key is not None:
            ok = self.key in ctx.blackboard and (
                self.equals is _MISSING or ctx.blackboard[self.key] == self.equals)
        else:
            assert self.condition is not None
            ok = bool(self.condition(ctx))
        if ok:
            return Status.SUCCESS
        if self.timeout_s is not None and waited >= self.timeout_s:
            return self.fail(OutcomeKind.FAILED, "TIMEOUT", waited_s=waited)
        return Status.RUNNING

