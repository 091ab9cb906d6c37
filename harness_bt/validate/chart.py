"""Checks on the statechart of phases: ids, initials, finals, transition targets and events,
guards (by name, or inline expressions that must parse), phases no run can reach, and phases
a run could never leave."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness_bt.expr import ExprError, compile_expr
from harness_bt.plugins import did_you_mean
from harness_bt.spec.library import Library, Registries
from harness_bt.spec.model import AtomicSpec, CompoundSpec, FinalSpec, ParallelSpec, TaskSpec
from harness_bt.spec.problems import Problem, Severity
from harness_bt.spec.source import DocPath, Document, format_path

__all__ = ["PhaseAt", "check_chart", "check_guard_texts", "walk_phases"]

Phase = AtomicSpec | CompoundSpec | ParallelSpec | FinalSpec
_GUARD_ROOTS = ("outcome", "bb", "world")


@dataclass(frozen=True)
class PhaseAt:
    """A phase with its document path and the ids of the phases around it."""

    phase: Any
    path: DocPath
    parents: tuple[str, ...]


def _kids(phase: Any) -> tuple[str, list[Any]]:
    if isinstance(phase, CompoundSpec):
        return "phases", list(phase.phases)
    if isinstance(phase, ParallelSpec):
        return "regions", list(phase.regions)
    return "", []


def walk_phases(spec: TaskSpec) -> Iterator[PhaseAt]:
    """Every phase, pre-order, with its path and ancestors."""
    def walk(items: list[Any], path: DocPath, parents: tuple[str, ...]) -> Iterator[PhaseAt]:
        for i, phase in enumerate(items):
            here = (*path, i)
            yield PhaseAt(phase, here, parents)
            key, kids = _kids(phase)
            yield from walk(kids, (*here, key), (*parents, phase.id))
    yield from walk(list(spec.phases), ("phases",), ())


class _ChartChecks:
    def __init__(self, spec: TaskSpec, doc: Document, library: Library,
                 registries: Registries) -> None:
        self.spec = spec
        self.doc = doc
        self.library = library
        self.registries = registries
        self.out: list[Problem] = []
        self.at = list(walk_phases(spec))
        self.by_id: dict[str, PhaseAt] = {}
        for p in self.at:
            self.by_id.setdefault(p.phase.id, p)

    def add(self, code: str, message: str, path: DocPath, fix: str,
            severity: Severity = Severity.ERROR) -> None:
        self.out.append(Problem(code, message, self.doc.where(path), fix=fix,
                                severity=severity, path=format_path(path)))

    def ids(self) -> None:
        seen: dict[str, PhaseAt] = {}
        for p in self.at:
            if p.phase.id in seen:
                self.add("DUPLICATE_PHASE", f"phase id {p.phase.id!r} is used twice (first at "
                         f"{self.doc.where((*seen[p.phase.id].path, 'id'))})", (*p.path, "id"),
                         "give every phase its own id (ids name chart states and commands)")
            else:
                seen[p.phase.id] = p
        top = list(self.spec.phases)
        if not any(isinstance(phase, FinalSpec) for phase in top):
            self.add("NO_FINAL", "the task has no top-level final phase: it could never end",
                     ("phases",), "add e.g. '- {id: done, kind: final}'")
        for i, final in enumerate(top):
            if isinstance(final, FinalSpec):
                reason = final.reason if final.reason is not None else final.id
                if reason != "done" and not reason.startswith("aborted_"):
                    self.add("INVALID_FINAL_REASON", f"top-level final {final.id!r}: reason "
                             f"{reason!r} must be 'done' or start with 'aborted_'",
                             ("phases", i, "reason" if final.reason is not None else "id"),
                             f"call it 'done' or 'aborted_{reason}'")
        known = [phase.id for phase in top]
        if self.spec.initial is not None and self.spec.initial not in known:
            self.add("UNKNOWN_INITIAL", f"initial {self.spec.initial!r} is not a top-level "
                     f"phase; top-level: {', '.join(known)}"
                     f"{did_you_mean(self.spec.initial, known)}", ("initial",),
                     "name a top-level phase")
        for p in self.at:
            phase = p.phase
            if isinstance(phase, CompoundSpec) and phase.initial is not None and \
                    phase.initial not in {c.id for c in phase.phases}:
                known = [c.id for c in phase.phases]
                self.add("UNKNOWN_INITIAL", f"compound {phase.id!r}: initial "
                         f"{phase.initial!r} is not one of its phases {known}"
                         f"{did_you_mean(phase.initial, known)}", (*p.path, "initial"),
                         "name one of its phases")
            if isinstance(phase, ParallelSpec):
                for j, region in enumerate(phase.regions):
                    if isinstance(region, FinalSpec | ParallelSpec):
                        self.add("INVALID_REGION", f"parallel {phase.id!r}: region "
                                 f"{region.id!r} is a {region.kind} phase; a region is an "
                                 "atomic or compound phase", (*p.path, "regions", j),
                                 "wrap it in a compound phase")

    def transitions(self) -> None:
        ids = list(self.by_id)
        names = set(self.library.guards) | set(self.registries.guards)
        for p in self.at:
            phase = p.phase
            for i, t in enumerate(getattr(phase, "transitions", ())):
                here = (*p.path, "transitions", i)
                if t.target not in self.by_id:
                    self.add("UNKNOWN_TARGET", f"phase {phase.id!r}: transition on "
                             f"{t.event!r} targets unknown phase {t.target!r}; phases: "
                             f"{', '.join(ids)}{did_you_mean(t.target, ids)}",
                             (*here, "target"), "name an existing phase")
                if t.event == "done":
                    if not isinstance(phase, CompoundSpec | ParallelSpec):
                        self.add("DONE_ON_ATOMIC", f"phase {phase.id!r}: 'done' fires only on "
                                 "compound or parallel phases", (*here, "event"),
                                 "use succeeded / failed / unknown / budget_exhausted")
                    elif isinstance(phase, CompoundSpec) and not any(
                            isinstance(c, FinalSpec) for c in phase.phases):
                        self.add("DONE_NEVER_FIRES", f"compound {phase.id!r} has no final "
                                 "phase, so its 'done' never fires", (*here, "event"),
                                 "add a final phase inside it", Severity.WARNING)
                if t.guard is not None and t.guard not in names:
                    self.add("UNKNOWN_GUARD", f"phase {phase.id!r}: unknown guard {t.guard!r}; "
                             f"known: {', '.join(sorted(names)) or '(none)'}"
                             f"{did_you_mean(t.guard, names)}", (*here, "guard"),
                             "define it under 'guards:' (an expression) or register it in "
                             "Python, or write the condition inline with 'when:'")
                if t.when is not None:
                    try:
                        compile_expr(t.when, roots=_GUARD_ROOTS)
                    except ExprError as exc:
                        self.add("INVALID_EXPRESSION", f"guard of phase {phase.id!r}: "
                                 f"{exc.message} at column {exc.column} of {t.when!r}",
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
            if isinstance(phase, CompoundSpec):
                enter(phase.initial or phase.phases[0].id)
            elif isinstance(phase, ParallelSpec):
                for region in phase.regions:
                    enter(region.id)

        initial = self.spec.initial
        top = initial if initial is not None and initial in specs else self.spec.phases[0].id
        enter(top)
        while True:
            before = len(reached)
            for pid in list(reached):
                for t in getattr(specs[pid], "transitions", ()):
                    enter(t.target)
            if len(reached) == before:
                break
        for p in self.at:  # the outermost unreachable phase stands for those inside it
            if p.phase.id not in reached and all(a in reached for a in p.parents):
                self.add("UNREACHABLE_PHASE", f"phase {p.phase.id!r} can never be entered: no "
                         f"transition leads to it from the initial phase {top!r}",
                         (*p.path, "id"), "add a transition that targets it, or remove it")

    def exits(self) -> None:
        has_exit: dict[str, bool] = {}
        for p in self.at:
            has_exit[p.phase.id] = has_exit.get(p.phase.id, False) or bool(
                getattr(p.phase, "transitions", ()))
        for p in self.at:
            if isinstance(p.phase, FinalSpec):
                continue
            if not has_exit[p.phase.id] and not any(has_exit[a] for a in p.parents):
                self.add("NO_EXIT", f"phase {p.phase.id!r} has no transition out, nor do the "
                         "phases around it: a run that enters it could never leave",
                         (*p.path, "id"), "add transitions, e.g. on succeeded to the next "
                         "phase and on failed to an 'aborted_...' final")

    def run(self) -> list[Problem]:
        self.ids()
        self.transitions()
        if not any(problem.code in ("DUPLICATE_PHASE", "UNKNOWN_INITIAL")
                   for problem in self.out):
            self.reachability()
        self.exits()
        return self.out


def check_chart(spec: TaskSpec, doc: Document, library: Library,
                registries: Registries) -> list[Problem]:
    """Every statechart problem of a parsed task."""
    return _ChartChecks(spec, doc, library, registries).run()


def check_guard_texts(library: Library) -> list[Problem]:
    """Each named guard (in any document of the library) must parse."""
    out = []
    for guard in library.guards.values():
        if not isinstance(guard.text, str):
            continue
        try:
            compile_expr(guard.text, roots=_GUARD_ROOTS)
        except ExprError as exc:
            out.append(Problem("INVALID_EXPRESSION", f"guard {guard.name!r}: {exc.message} at "
                               f"column {exc.column} of {guard.text!r}",
                               guard.doc.where(guard.path), fix=exc.fix or "see harness_bt.expr",
                               path=format_path(guard.path)))
    return out
