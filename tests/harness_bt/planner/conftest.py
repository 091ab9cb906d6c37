from __future__ import annotations

from pathlib import Path

import pytest

from harness_bt.planner.candidates import library_candidates
from harness_bt.planner.model import Candidate

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def library() -> tuple[Candidate, ...]:
    """The repository's task library as candidates (loaded once: loading checks every file)."""
    return library_candidates(ROOT / "trees")
