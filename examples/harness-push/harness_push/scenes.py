"""The package's scene for the built-in simulator (the ``harness_bt.scenes`` entry point
``push_cube`` names the path of its YAML file)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PUSH_CUBE"]

PUSH_CUBE = Path(__file__).resolve().parent / "push_cube.yaml"
