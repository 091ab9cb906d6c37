"""The instructions the library's tasks must be chosen from (three phrasings each, with
varied objects), and the table of docs/planning.md made from them: the test
(test_templates.py) checks exactly these rows, and the page holds exactly this table."""

from __future__ import annotations

from typing import Any

#: instruction -> (task, params bound from it)
TABLE: list[tuple[str, str, dict[str, Any]]] = [
    ("pick up the green cube", "pick", {"target": "green_cube"}),
    ("Lift the blue cube.", "pick", {"target": "blue_cube"}),
    ("grab the red block", "pick", {"target": "red_cube"}),
    ("pick up the red cube and hold it", "pick_cube", {"target": "red_cube"}),
    ("Grab the blue cube and hold it.", "pick_cube", {"target": "blue_cube"}),
    ("hold the green cube in the gripper", "pick_cube", {"target": "green_cube"}),
    ("put the red cube in the tray", "pick_and_place", {"target": "red_cube",
                                                        "container": "tray"}),
    ("Place the LEGO brick into the tray.", "pick_and_place", {"target": "lego",
                                                               "container": "tray"}),
    ("pick up the green cube and put it inside the tray", "pick_and_place",
     {"target": "green_cube", "container": "tray"}),
    ("move the red cube by 0, 0.1 m", "place_at", {"target": "red_cube", "offset": [0.0, 0.1]}),
    ("shift the green cube by 0.05 -0.05 metres", "place_at",
     {"target": "green_cube", "offset": [0.05, -0.05]}),
    ("slide the blue cube 0.1 0 m", "place_at", {"target": "blue_cube", "offset": [0.1, 0.0]}),
    ("put every red cube in the tray", "sort", {"container": "tray"}),
    ("sort the red cubes into the tray", "sort", {"container": "tray"}),
    ("Place all the red cubes in the tray.", "sort", {"container": "tray"}),
    ("put every cube in the tray, nearest first", "clear_table", {"container": "tray"}),
    ("put all the cubes in the tray", "clear_table", {"container": "tray"}),
    ("Put every cube in the tray.", "clear_table", {"container": "tray"}),
    ("pick up the red cube with the learned policy", "policy_pick", {"target": "red_cube"}),
    ("Let the policy pick up the green cube.", "policy_pick", {"target": "green_cube"}),
    ("use the policy to grab the blue block", "policy_pick", {"target": "blue_cube"}),
    ("pick up the blue cube with the policy alone", "policy_pick_alone",
     {"target": "blue_cube"}),
    ("let the policy try the red cube once", "policy_pick_alone", {"target": "red_cube"}),
    ("Run the policy alone on the green cube.", "policy_pick_alone", {"target": "green_cube"}),
    ("put the red cube on the green cube", "stack", {"top": "red_cube", "bottom": "green_cube"}),
    ("stack the blue cube on top of the red cube", "stack",
     {"top": "blue_cube", "bottom": "red_cube"}),
    ("Place the green block onto the blue block.", "stack",
     {"top": "green_cube", "bottom": "blue_cube"}),
]

BEGIN = "<!-- the planning table begins (made from tests/harness_bt/planner/library_table.py) -->"
END = "<!-- the planning table ends -->"


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:g}" for v in value) + "]"
    return f"`{value}`"


def markdown_table() -> str:
    """The table of docs/planning.md, between its markers."""
    lines = [BEGIN, "", "| instruction | task | params |", "|---|---|---|"]
    for instruction, task, params in TABLE:
        given = ", ".join(f"{k}={_value(v)}" for k, v in params.items())
        lines.append(f"| {instruction} | `{task}` | {given} |")
    return "\n".join([*lines, "", END])
