"""What an evaluation worker keeps between episodes: a task and a scene loaded once per file
version and ``--set`` values, the registries filled once per process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness_bt.eval import kept

TREES = Path(__file__).resolve().parents[3] / "trees"


def test_a_task_is_loaded_once_per_file_version_and_params(tmp_path: Path) -> None:
    for name in ("pick_cube.yaml", "steps.yaml"):
        shutil.copy(TREES / name, tmp_path / name)
    path = tmp_path / "pick_cube.yaml"
    first = kept.task(path, {})
    assert kept.task(path, {}) is first
    other = kept.task(path, {"target": "green_cube"})
    assert other is not first and other.params["target"] == "green_cube"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # edited
    again = kept.task(path, {})
    assert again is not first and again.name == first.name


def test_a_scene_is_checked_once_per_file_version_and_params() -> None:
    red = kept.scene("pick_cube", {"target": "red_cube"})
    assert kept.scene("pick_cube", {"target": "red_cube"}) is red
    assert kept.scene("pick_cube", {"target": "green_cube"}) is not red


def test_the_registries_are_filled_once_per_process() -> None:
    assert kept.skills() is kept.skills() and "grasp" in kept.skills()
    assert kept.evaluators() is kept.evaluators()
    assert kept.runtimes() is kept.runtimes() and "inproc" in kept.runtimes()
