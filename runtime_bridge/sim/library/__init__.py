"""The built-in simulator's scene documents (registered as ``harness_bt.scenes`` entry points
in ``setup.cfg``): each name below is the path of its YAML file."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CLEAR_TABLE", "HERE", "PICK_AND_PLACE", "PICK_CUBE", "PLACE_AT", "SORT", "STACK",
           "TABLE"]

HERE = Path(__file__).resolve().parent
PICK_CUBE = HERE / "pick_cube.yaml"
PICK_AND_PLACE = HERE / "pick_and_place.yaml"
STACK = HERE / "stack.yaml"
PLACE_AT = HERE / "place_at.yaml"
TABLE = HERE / "table.yaml"
SORT = HERE / "sort.yaml"
CLEAR_TABLE = HERE / "clear_table.yaml"
