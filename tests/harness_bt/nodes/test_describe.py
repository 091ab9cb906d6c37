"""A built tree described as data keeps what drawings and traces need."""

from __future__ import annotations


def test_the_structure_keeps_a_parallel_policy() -> None:
    from harness_bt.authoring import build_tree
    from harness_bt.nodes import describe_tree

    for policy in ("all", "one"):
        tree = build_tree({"type": "parallel", "name": "p", "policy": policy, "children": [
            {"type": "success", "name": "a"}, {"type": "running", "name": "b"}]})
        assert describe_tree(tree)[0]["params"] == {"policy": policy}
