"""``harness init [FOLDER]``: a starter task and its scene, written in a folder of your own
(never over a file that is there). The task names its scene by its path and includes the
library's shared steps by name (``steps.yaml``, found in the installed task library), so the
folder works from anywhere: ``harness validate FOLDER/task.yaml FOLDER/scene.yaml``, then
``harness run FOLDER/task.yaml``."""

from __future__ import annotations

from pathlib import Path

import typer

from harness_bt.errors import DefinitionError

__all__ = ["SCENE", "TASK", "init"]

SCENE = """\
# A scene: what the built-in simulator lays out and how it judges an episode
# (docs/scenes.md; harness scenes scene.yaml describes it, harness validate checks it).
name: starter
description: a red and a blue 4 cm cube laid out from the seed
instruction: pick up the {target}
params:
  target: {type: object, default: red_cube, description: the cube to pick up}
objects:
  red_cube: {shape: cube, size: 0.04, colour: red, mass: 0.08, label: red cube}
  blue_cube: {shape: cube, size: 0.04, colour: blue, mass: 0.08, label: blue cube}
layout:
  separation: 0.12
success:
  when: lifted(target, 0.05) and held(target)
  hold_steps: 3
  description: the target 5 cm above where it started, held in both fingers
"""

TASK = """\
# A task: phases (a statechart), each ticking a behaviour tree (docs/authoring.md).
# Check it: harness validate task.yaml scene.yaml   Run it: harness run task.yaml
name: starter_pick
version: "1"
description: find the target, go above it, grasp and lift it, judged from observations
instruction: pick up the {target}
instructions:   # how a planner may be asked for it (docs/planning.md)
  - "pick up the {target}"
scene: scene.yaml   # relative to this file
params:
  target: {type: object, default: red_cube, description: the cube to pick up}
includes: [steps.yaml]   # the library's shared steps (approach, grasp, held, ...)
initial: observe
budget: {max_retries: 8, max_time_s: 25.0}
phases:
  - id: observe
    tree: {type: observe, name: find_target, objects: ["{target}"], timeout_s: 3.0, record: plan}
    transitions:
      - {event: succeeded, target: approach}
      - {event: failed, target: aborted_not_observed}
  - id: approach
    tree: {subtree: approach, values: {obj: "{target}"}}
    transitions:
      - {event: succeeded, target: grasp}
      - {event: failed, target: aborted_failed}
      - {event: unknown, target: aborted_unknown}
      - {event: budget_exhausted, target: aborted_budget_exhausted}
  - id: grasp
    tree: {subtree: grasp, values: {obj: "{target}"}}
    transitions:
      - {event: succeeded, target: evaluate}
      - {event: failed, target: aborted_failed}
      - {event: unknown, target: aborted_unknown}
      - {event: budget_exhausted, target: aborted_budget_exhausted}
  - id: evaluate
    tree: {subtree: held, values: {obj: "{target}"}}
    transitions:
      - {event: succeeded, target: done}
      - {event: failed, target: aborted_failed}
      - {event: unknown, target: aborted_unknown}
      - {event: budget_exhausted, target: aborted_budget_exhausted}
  - {id: done, kind: final, reason: done}
  - {id: aborted_not_observed, kind: final}
  - {id: aborted_failed, kind: final}
  - {id: aborted_unknown, kind: final}
  - {id: aborted_budget_exhausted, kind: final}
"""


def init(
    folder: Path = typer.Argument(Path("."), help="Where to write task.yaml and scene.yaml "
                                  "(made if missing)."),
) -> None:
    """Write a starter task (task.yaml) and its scene (scene.yaml) in FOLDER; a file that is
    already there is never overwritten (exit 1, nothing written)."""
    files = {folder / "task.yaml": TASK, folder / "scene.yaml": SCENE}
    if folder.exists() and not folder.is_dir():
        raise DefinitionError("INVALID_OPTION", f"{folder} is a file, not a folder",
                              where=str(folder), fix="name a folder (it is made if missing)")
    there = [p for p in files if p.exists()]
    if there:
        raise DefinitionError(
            "FILE_EXISTS", f"{', '.join(map(str, there))} already exist(s): harness init "
            "never overwrites a file", where=str(there[0]),
            fix="run it in an empty folder (harness init NEW_FOLDER), or move the file away")
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {path}")
    typer.echo(f"next: harness validate {folder / 'task.yaml'} {folder / 'scene.yaml'}; "
               f"harness run {folder / 'task.yaml'}")
