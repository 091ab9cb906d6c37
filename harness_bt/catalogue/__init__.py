"""What is installed, described: skills (params, resources, postconditions, the evaluators
that judge them, the installing package), node types, evaluators and scenes, as data that
``harness skills``, ``harness nodes``, ``harness evaluators`` and ``harness scenes`` print
(docs/discovering.md).

The modules: :mod:`harness_bt.skill_params` (a params model field by field),
:mod:`harness_bt.catalogue.entries` (skills, node types, evaluators),
:mod:`harness_bt.catalogue.scenes` (scenes).
"""
