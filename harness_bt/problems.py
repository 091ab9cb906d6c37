"""What validation finds: one :class:`Problem` per broken rule (what, where as
``file:line:column``, the offending value, the fix), gathered in a :class:`Report`;
:class:`SpecError` carries a whole report when a document is refused."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = ["Problem", "Report", "Severity", "SpecError"]


class Severity(StrEnum):
    ERROR = "error"  # the document is refused
    WARNING = "warning"  # legal, but probably not what was meant


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: a stable ``code``, the ``message`` (with the offending value), ``where``
    (``file:line:column``, or the file and document path when there is no position), the
    ``fix``, and the document ``path`` (``phases[1].tree.children[0]``)."""

    code: str
    message: str
    where: str
    fix: str = ""
    severity: Severity = Severity.ERROR
    path: str = ""

    def __str__(self) -> str:
        text = f"{self.where}: {self.severity} {self.code}: {self.message}"
        if self.path and not self.where.endswith(f"({self.path})"):
            text += f" (at {self.path})"
        if self.fix:
            text += f"; fix: {self.fix}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "where": self.where,
                "fix": self.fix, "severity": self.severity.value, "path": self.path}


@dataclass
class Report:
    """Every problem of one or more documents, in the order found."""

    problems: list[Problem] = field(default_factory=list)

    def add(self, problem: Problem) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    def extend(self, problems: Iterable[Problem]) -> None:
        for p in problems:
            self.add(p)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def codes(self) -> list[str]:
        return [p.code for p in self.problems]

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.problems)

    def __len__(self) -> int:
        return len(self.problems)

    def render(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    def raise_for_errors(self, what: str) -> None:
        """Raise :class:`SpecError` naming ``what`` when there is any error."""
        if self.errors:
            raise SpecError(what, self)


class SpecError(DefinitionError):
    """A task document was refused; ``report`` holds every problem (``details["problems"]``
    their texts)."""

    def __init__(self, what: str, report: Report) -> None:
        self.report = report
        errors = report.errors
        super().__init__(
            "INVALID_TASK_FILE",
            f"{what}: {len(errors)} error(s):\n" + "\n".join(f"  {p}" for p in errors),
            fix="fix every problem listed (each names its place and a fix), then load again",
            details={"problems": [str(p) for p in errors]},
        )
