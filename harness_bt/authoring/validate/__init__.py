"""The one validation pass of task documents: every problem at once, each with
``file:line:column``, the offending value and a fix, before anything is built.

Layers: :mod:`~harness_bt.authoring.validate.structure` (the pydantic models, errors rewritten),
:mod:`~harness_bt.authoring.validate.nodes` (skills and their params models, expressions, budgets,
each node type's own rules), :mod:`~harness_bt.task.rules` (ids, targets, events,
guards, unreachable phases, phases with no exit), :mod:`~harness_bt.authoring.validate.blackboard`
(keys read but never written); :func:`~harness_bt.authoring.validate.check.check_document` runs
them all. A Python-built :class:`~harness_bt.Task` is held to the same chart rules, and a tree
built on its own (:func:`harness_bt.authoring.build_tree`) to the same tree rules.
"""
