"""Policies served over openpi's WebSocket policy protocol: the policy server, the policy
registry (the ``harness_bt.policies`` entry-point group), the scripted policies built in, and
``harness policy serve`` / ``harness policy list`` (a ``harness_bt.commands`` plug-in).

This package sits beside ``skills`` and ``runtime_bridge``, above the core: the core keeps only
what a skill needs to talk to a policy (``harness_bt.policy``: the wire format, the client and
the embodiments)."""
