"""The statechart rules of a task, written once for every source: ids, initials, finals,
transition targets and events, guards (by name, or inline expressions that must parse),
phases no run can reach, and phases a run could never leave.

The rules read phases by their attributes (``id``, ``kind``, ``transitions``, ``phases`` /
``regions``, ``initial``, ``reason``), so they check a document's phases (the
:mod:`~harness_bt.authoring.model` classes, problems placed by the document's marks) and a
Python-built :class:`~harness_bt.Task`'s phases (:mod:`harness_bt.task.task`, placed by the path
of the phase) alike."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness_bt.expr import ExprError, compile_expr
from harness_bt.plugins import closest, did_you_mean
from harness_bt.problems import Problem, Severity
from harness_bt.source import DocPath, format_path

__all__ = ["GUARD_ROOTS", "PhaseAt", "check_chart", "walk_phases"]

#: What a transition guard expression may read.
GUARD_ROOTS = ("outcome", "bb", "world")


@dataclass(frozen=True)
class PhaseAt:
    """A phase with its document path and the ids of the phases around it."""

    phase: Any
    path: DocPath
    parents: tuple[str, ...]


def _kids(phase: Any) -> tuple[str, list[Any]]:
    if phase.kind == "compound":
        return "phases", list(phase.phases)
    if phase.kind == "parallel":
        return "regions", list(phase.regions)
    return "", []


def _reason(final: Any) -> str:
    """A final's reason: given, else its id."""
    return final.reason if final.reason is not None else final.id


def walk_phases(phases: Sequence[Any]) -> Iterator[PhaseAt]:
    """Every phase, pre-order, with its path and ancestors."""
    def walk(items: list[Any], path: DocPath, parents: tuple[str, ...]) -> Iterator[PhaseAt]:
        for i, phase in enumerate(items):
            here = (*path, i)
            yield PhaseAt(phase, here, parents)
            key, kids = _kids(phase)
            yield from walk(kids, (*here, key), (*parents, phase.id))
    yield from walk(list(phases), ("phases",), ())


class _ChartChecks:
    def __init__(self, phases: Sequence[Any], initial: str | None,
                 where: Callable[[DocPath], str], guards: Collection[str] | None) -> None:
        self.phases = list(phases)
        self.initial = initial
        self.where = where
        self.guards = guards
        self.out: list[Problem] = []
        self.at = list(walk_phases(self.phases))
        self.by_id: dict[str, PhaseAt] = {}
        for p in self.at:
            self.by_id.setdefault(p.phase.id, p)

    def add(self, code: str, message: str, path: DocPath, fix: str,
            severity: Severity = Severity.ERROR) -> None:
        self.out.append(Problem(code, message, self.where(path), fix=fix,
                                severity=severity, path=format_path(path)))

    def ids(self) -> None:
        seen: dict[str, PhaseAt] = {}
        for p in self.at:
            if p.phase.id in seen:
                self.add("DUPLICATE_PHASE", f"phase id {p.phase.id!r} is used twice (first at "
                         f"{self.where((*seen[p.phase.id].path, 'id'))})", (*p.path, "id"),
                         "give every phase its own id (ids name chart states and commands)")
            else:
                seen[p.phase.id] = p
        top = self.phases
        if not any(phase.kind == "final" for phase in top):
            self.add("NO_FINAL", "the task has no top-level final phase: it could never end",
                     ("phases",), "add e.g. '- {id: done, kind: final}'")
        for i, final in enumerate(top):
            if final.kind == "final":
                reason = _reason(final)
                if reason != "done" and not reason.startswith("aborted_"):
                    self.add("INVALID_FINAL_REASON", f"top-level final {final.id!r}: reason "
                             f"{reason!r} must be 'done' or start with 'aborted_'",
                             ("phases", i, "reason" if final.reason is not None else "id"),
                             f"call it 'done' or 'aborted_{reason}'")
        known = [phase.id for phase in top]
        if self.initial is not None and self.initial not in known:
            self.add("UNKNOWN_INITIAL", f"initial {self.initial!r} is not a top-level "
                     f"phase; top-level: {', '.join(known)}"
                     f"{did_you_mean(self.initial, known)}", ("initial",),
                     "name a top-level phase")
        for p in self.at:
            phase = p.phase
            if phase.kind == "compound" and phase.initial is not None and \
                    phase.initial not in {c.id for c in phase.phases}:
                known = [c.id for c in phase.phases]
                self.add("UNKNOWN_INITIAL", f"compound {phase.id!r}: initial "
                         f"{phase.initial!r} is not one of its phases {known}"
                         f"{did_you_mean(phase.initial, known)}", (*p.path, "initial"),
                         "name one of its phases")
            if phase.kind == "compound":
                self.histories(p)
            if phase.kind == "parallel":
                for j, region in enumerate(phase.regions):
                    if region.kind in ("final", "parallel"):
                        self.add("INVALID_REGION", f"parallel {phase.id!r}: region "
                                 f"{region.id!r} is a {region.kind} phase; a region is an "
                                 "atomic or compound phase", (*p.path, "regions", j),
                                 "wrap it in a compound phase")

    def histories(self, p: PhaseAt) -> None:
        """The history phases of a compound: never its initial phase; a ``default`` that is
        one of its other phases."""
        compound = p.phase
        kids = [c for c in compound.phases if c.kind != "history"]
        known = [c.id for c in kids]
        if not kids:
            self.add("NO_PHASES", f"compound {compound.id!r} holds only history phases",
                     (*p.path, "phases"), "add the phases its history returns to")
        first = compound.initial if compound.initial is not None else compound.phases[0].id
        for j, h in enumerate(compound.phases):
            if h.kind != "history":
                continue
            here = (*p.path, "phases", j)
            if h.id == first:
                self.add("HISTORY_INITIAL", f"compound {compound.id!r}: its initial phase "
                         f"{h.id!r} is a history phase, which is never active itself",
                         (*p.path, "initial") if compound.initial is not None else
                         (*here, "id"), "make a phase with a tree the initial one (list it "
                         "first, or name it in 'initial:')")
            if h.default is not None and h.default not in known:
                self.add("UNKNOWN_HISTORY_DEFAULT", f"history {h.id!r}: default "
                         f"{h.default!r} is not one of the phases of compound "
                         f"{compound.id!r} ({', '.join(known)})"
                         f"{did_you_mean(h.default, known)}", (*here, "default"),
                         f"name one of the phases of {compound.id!r}, or leave 'default' out "
                         "(the compound's initial phase)")

    def misplaced_histories(self) -> None:
        """A history phase belongs inside a compound phase (it remembers which of the
        compound's phases was active)."""
        for p in self.at:
            if p.phase.kind != "history":
                continue
            parent = self.by_id.get(p.parents[-1]) if p.parents else None
            if parent is None:
                where = "at the top level"
            elif parent.phase.kind == "parallel":
                where = f"a region of parallel phase {parent.phase.id!r}"
            else:
                continue
            self.add("HISTORY_OUTSIDE_COMPOUND", f"history phase {p.phase.id!r} is {where}: "
                     "a history phase belongs inside a compound phase, whose last active "
                     "phase it returns to", (*p.path, "kind"),
                     "move it into the compound phase a transition should resume")

    def transitions(self) -> None:
        ids = list(self.by_id)
        for p in self.at:
            phase = p.phase
            for i, t in enumerate(getattr(phase, "transitions", ())):
                here = (*p.path, "transitions", i)
                if t.target not in self.by_id:
                    self.add("UNKNOWN_TARGET", f"phase {phase.id!r}: transition on "
                             f"{t.event!r} targets unknown phase {t.target!r}; phases: "
                             f"{', '.join(ids)}{did_you_mean(t.target, ids)}",
                             (*here, "target"), "name an existing phase")
                target = self.by_id.get(t.target)
                if target is not None and target.phase.kind == "history" and \
                        target.parents and target.parents[-1] in p.parents:
                    self.add("HISTORY_FROM_INSIDE", f"phase {phase.id!r}: transition on "
                             f"{t.event!r} targets history {t.target!r} of compound "
                             f"{target.parents[-1]!r}, which it is inside: the compound is "
                             "not left, so there is nothing to return to", (*here, "target"),
                             "target the phase to go to, or move the transition to a phase "
                             "outside the compound")
                if t.event == "done":
                    if phase.kind not in ("compound", "parallel"):
                        self.add("DONE_ON_ATOMIC", f"phase {phase.id!r}: 'done' fires only on "
                                 "compound or parallel phases", (*here, "event"),
                                 "use succeeded / failed / unknown / budget_exhausted")
                    elif phase.kind == "compound" and not any(
                            c.kind == "final" for c in phase.phases):
                        self.add("DONE_NEVER_FIRES", f"compound {phase.id!r} has no final "
                                 "phase, so its 'done' never fires", (*here, "event"),
                                 "add a final phase inside it", Severity.WARNING)
                self.guard(phase, t, here)

    def guard(self, phase: Any, t: Any, here: DocPath) -> None:
        """A guard by name must be known (when guards are names: a document's); an inline
        ``when`` must parse."""
        names = self.guards
        if names is not None and t.guard is not None and t.guard not in names:
            self.add("UNKNOWN_GUARD", f"phase {phase.id!r}: unknown guard {t.guard!r}; "
                     f"known: {', '.join(sorted(names)) or '(none)'}"
                     f"{did_you_mean(t.guard, set(names))}", (*here, "guard"),
                     "define it under 'guards:' (an expression) or register it in "
                     "Python, or write the condition inline with 'when:'")
        when = getattr(t, "when", None)
        if when is not None:
            try:
                compile_expr(when, roots=GUARD_ROOTS)
            except ExprError as exc:
                self.add("INVALID_EXPRESSION", f"guard of phase {phase.id!r}: "
                         f"{exc.message} at column {exc.column} of {when!r}",
                         (*here, "when"), exc.fix or "see harness_bt.expr")

    def reachability(self) -> None:
        parent: dict[str, str | None] = {p.phase.id: (p.parents[-1] if p.parents else None)
                                         for p in self.at}
        specs = {p.phase.id: p.phase for p in self.at}
        reached: set[str] = set()

        def enter(pid: str) -> None:
            if pid not in specs or pid in reached:
                return
            reached.add(pid)
            up = parent.get(pid)
            while up is not None and up not in reached:
                reached.add(up)
                up = parent.get(up)
            phase = specs[pid]
            if phase.kind == "history":
                up = parent.get(pid)
                compound: Any = specs[up] if up is not None else None
                if compound is not None and compound.kind == "compound":
                    enter(phase.default or compound.initial or compound.phases[0].id)
            elif phase.kind == "compound":
                first = phase.initial or phase.phases[0].id
                if getattr(specs.get(first), "kind", None) == "history":  # reported already
                    first = next((c.id for c in phase.phases if c.kind != "history"), first)
                enter(first)
            elif phase.kind == "parallel":
                for region in phase.regions:
                    enter(region.id)

        initial = self.initial
        top = initial if initial is not None and initial in specs else self.phases[0].id
        if specs[top].kind == "history":  # misplaced (reported): start at the first phase
            top = next((p.id for p in self.phases if p.kind != "history"), top)
        enter(top)
        unsure = False  # an unknown target close to no phase could have been meant for any
        while True:
            before = len(reached)
            for pid in list(reached):
                for t in getattr(specs[pid], "transitions", ()):
                    if t.target in specs:
                        enter(t.target)
                        continue
                    meant = closest(t.target, specs)  # one misspelling, one error: the
                    if meant is None:                 # phase it meant is reached
                        unsure = True
                    else:
                        enter(meant)
            if len(reached) == before:
                break
        if unsure:
            return
        for p in self.at:  # the outermost unreachable phase stands for those inside it
            if p.phase.kind == "history":
                if p.phase.id not in reached and all(a in reached for a in p.parents):
                    self.add("UNUSED_HISTORY", f"history phase {p.phase.id!r}: no transition "
                             "targets it, so it has no effect", (*p.path, "id"),
                             f"target it (e.g. '{{event: succeeded, target: {p.phase.id}}}' "
                             "from a phase outside its compound), or remove it",
                             Severity.WARNING)
                continue
            if p.phase.id not in reached and all(a in reached for a in p.parents):
                self.add("UNREACHABLE_PHASE", f"phase {p.phase.id!r} can never be entered: no "
                         f"transition leads to it from the initial phase {top!r}",
                         (*p.path, "id"), "add a transition that targets it, or remove it")

    def exits(self) -> None:
        """A phase can be left when a transition can fire while it is active and lead out of
        it: one of its own or of a phase around it; one of a phase inside it that leads
        outside it; or one of a phase in another region of a parallel phase around both, that
        leads out of that parallel phase."""
        around = {p.phase.id: p.parents for p in self.at}
        kinds = {p.phase.id: p.phase.kind for p in self.at}

        def inside(pid: str, container: str) -> bool:
            return pid == container or container in around.get(pid, ())

        moves = [(p.phase.id, t.target) for p in self.at
                 for t in getattr(p.phase, "transitions", ())]

        def can_leave(pid: str) -> bool:
            for source, target in moves:
                if source == pid or source in around[pid]:
                    return True
                if pid in around[source] and not inside(target, pid):
                    return True
                shared = [a for a in around[pid] if a in around[source]]
                if shared and kinds[shared[-1]] == "parallel" and not inside(target, shared[-1]):
                    return True
            return False

        for p in self.at:
            if p.phase.kind in ("final", "history") or p.phase.id not in around:
                continue
            if not can_leave(p.phase.id):
                self.add("NO_EXIT", f"phase {p.phase.id!r} has no transition out, nor do the "
                         "phases around it: a run that enters it could never leave",
                         (*p.path, "id"), "add transitions, e.g. on succeeded to the next "
                         "phase and on failed to an 'aborted_...' final")

    def run(self) -> list[Problem]:
        self.ids()
        self.misplaced_histories()
        self.transitions()
        if self.phases and not any(problem.code in ("DUPLICATE_PHASE", "UNKNOWN_INITIAL")
                                   for problem in self.out):
            self.reachability()
        self.exits()
        return self.out


def check_chart(phases: Sequence[Any], *, initial: str | None,
                where: Callable[[DocPath], str],
                guards: Collection[str] | None = None) -> list[Problem]:
    """Every statechart problem of these phases (top level first). ``where`` places a path
    (a document's marks, or a Python task's name); ``guards`` are the known guard names (a
    document's), None when guards are not names (a Python task's are functions)."""
    return _ChartChecks(phases, initial, where, guards).run()
