"""The blackboard flow: every key a node or a guard reads must be written somewhere (by a
node, by the task's blackboard defaults, or by a subtree use's fixed ``values``). The check is
about the document, not one run's order: a key written in some phase counts."""

from __future__ import annotations

from collections.abc import Iterable

from harness_bt.authoring.expand import KeyUse
from harness_bt.authoring.library import Library
from harness_bt.authoring.model import TaskSpec
from harness_bt.expr import ExprError, compile_expr
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem
from harness_bt.source import Document, format_path
from harness_bt.task.rules import walk_phases

__all__ = ["check_blackboard", "guard_reads"]


def guard_reads(spec: TaskSpec, doc: Document, library: Library) -> list[KeyUse]:
    """The blackboard keys the task's transition guards read (inline or named)."""
    out: list[KeyUse] = []
    for at in walk_phases(spec.phases):
        for i, t in enumerate(getattr(at.phase, "transitions", ())):
            here = (*at.path, "transitions", i)
            if t.when is not None:
                text, src, path = t.when, doc, (*here, "when")
            elif t.guard is not None and t.guard in library.guards:
                g = library.guards[t.guard]
                text, src, path = g.text, g.doc, g.path
            else:
                continue
            try:
                keys = compile_expr(text, roots=("outcome", "bb", "world")).reads("bb")
            except (ExprError, TypeError):
                continue
            by = f"the guard of phase {at.phase.id!r} on {t.event!r}"
            out += [KeyUse(k, "read", src, path, by) for k in keys]
    return out


def check_blackboard(uses: Iterable[KeyUse], defaults: Iterable[str]) -> list[Problem]:
    """A problem for every read of a key that nothing writes."""
    uses = list(uses)
    written = set(defaults) | {u.key for u in uses if u.mode == "write"}
    out = []
    for use in uses:
        if use.mode != "read" or use.key in written:
            continue
        via = f" (via {'; '.join(use.via)})" if use.via else ""
        out.append(Problem(
            "BLACKBOARD_NEVER_WRITTEN",
            f"blackboard key {use.key!r} is read by {use.by} but nothing writes it{via}; "
            f"written: {', '.join(sorted(written)) or '(nothing)'}"
            f"{did_you_mean(use.key, written)}",
            use.where(),
            fix="write it first (a skill_action's output, an observe / check 'record', the "
                "task's 'blackboard:' defaults), or fix the key's spelling",
            path=format_path(use.path)))
    return out
