"""What the openpi interop tests share: the Python of ``.venv-openpi`` (openpi's own client,
made by ``make setup``); a test that needs it fails, saying how to make it, when it is
missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT

OPENPI_PYTHON = ROOT / ".venv-openpi" / "bin" / "python"
MAKE_IT = ("python3 -m venv .venv-openpi && .venv-openpi/bin/pip install openpi-client==0.1.2 "
           "typing_extensions (or: make setup)")


@pytest.fixture
def openpi_python() -> Path:
    if not OPENPI_PYTHON.exists():
        pytest.fail(f"openpi's client is not installed: {OPENPI_PYTHON} is missing; create it "
                    f"with: {MAKE_IT}")
    return OPENPI_PYTHON
