"""Validation of task documents: every problem at once, each with ``file:line:column``, the
offending value and a fix, before anything is built.

Layers: :mod:`~harness_bt.validate.structure` (the pydantic models, errors rewritten),
:mod:`~harness_bt.validate.nodes` (skills and their params models, expressions, budgets, each
node type's own rules), :mod:`~harness_bt.validate.chart` (ids, targets, events, guards,
unreachable phases, phases with no exit), :mod:`~harness_bt.validate.blackboard` (keys read
but never written); :func:`check_document` runs them all.
"""

from harness_bt.spec.problems import Problem, Report, Severity, SpecError
from harness_bt.validate.check import Checked, check_document

__all__ = ["Checked", "Problem", "Report", "Severity", "SpecError", "check_document"]
