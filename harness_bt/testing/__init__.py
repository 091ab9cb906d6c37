"""Test helpers for users' own tests: :class:`FakeRuntime` (a real in-memory runtime with
scripted executors and injected faults), :class:`FakeScene`, :class:`Script`, and the seed's
running example (:mod:`harness_bt.testing.example`)."""

from harness_bt.testing.fake_runtime import FakeRuntime, FakeScene, Script

__all__ = ["FakeRuntime", "FakeScene", "Script"]
