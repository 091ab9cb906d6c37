"""Crash-resume with an object occluded after it was seen, for real: a runtime process over the
built-in simulator (pick_and_place, seed 0), ``harness run --journal`` in its own process, the
tray hidden from the camera once the cube has been lifted, the harness killed with SIGKILL half
a second later, ``harness resume`` to the end (the rig:
:mod:`runtime_bridge.testing.hiding`). What ran is read from the runtime's own journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime_bridge.testing.hiding import Occluded, Scenario, occluded_resume
from tests.conftest import ROOT, Processes

pytestmark = pytest.mark.slow


def scenario_in(tmp_path: Path, processes: Processes, *, forget_world: bool) -> Occluded:
    """The library's pick_and_place with a time budget a loaded machine cannot exhaust (the
    budget counts the harness's time, which a shared runner stretches)."""
    for name in ("pick_and_place.yaml", "steps.yaml"):
        text = (ROOT / "trees" / name).read_text()
        (tmp_path / name).write_text(text.replace("max_time_s: 27.0", "max_time_s: 150.0"))
    return occluded_resume(Scenario(task=str(tmp_path / "pick_and_place.yaml"),
                                    forget_world=forget_world), tmp_path, processes.start)


def events(run: Occluded, kind: str) -> list[dict[str, Any]]:
    return [e for e in run.trace if e["kind"] == kind]


def test_a_resumed_run_carries_the_cube_over_a_tray_it_only_remembers_and_completes(
        tmp_path: Path, processes: Processes) -> None:
    run = scenario_in(tmp_path, processes, forget_world=False)
    assert (run.episode["outcome"], run.episode["reason"]) == ("succeeded", "done"), \
        run.resume_stderr[-3000:]
    (resume,) = events(run, "resume")
    world = resume["data"]["world"]
    assert world["restored"] and world["objects"]["tray"] == 1
    # the resumed transport looked for the tray, did not see it, and went on from memory
    plans = {e["data"]["writer"]: e["data"]["value"]["objects"]
             for e in events(run, "blackboard") if e["data"]["key"] == "plan"}
    assert plans["carry/look"]["tray"]["remembered"] is True
    carry = [e["data"]["command"] for e in events(run, "command")
             if e["data"]["op"] == "submit" and e["data"]["command"]["skill"] == "move_ee_to"]
    assert carry and carry[0]["premises"] == {"tray": 1}
    assert carry[0]["params"]["target"][:3] == plans["carry/look"]["tray"]["pose"][:3]
    assert carry[0]["command_id"] in {e["command_id"] for e in events(run, "dispatch")}
    # the place step re-checked the tray against a fresh sighting: seen where it was, same
    # version, so the premise it was carried over still held
    assert plans["put/look"]["tray"]["remembered"] is False
    assert plans["put/look"]["tray"]["version"] == 1
    assert run.started_twice() == {}
    done = {r["skill"] for r in run.records if r["state"] == "CONTROL_DONE"}
    assert {"grasp", "lift", "move_ee_to", "place"} <= done


def test_without_its_world_memory_the_resumed_run_cannot_find_the_hidden_tray(
        tmp_path: Path, processes: Processes) -> None:
    run = scenario_in(tmp_path, processes, forget_world=True)
    assert (run.episode["outcome"], run.episode["reason"]) == ("aborted", "aborted_dropped")
    (resume,) = events(run, "resume")
    assert resume["data"]["world"]["objects"] == {}
    (failed,) = [e["data"]["outcome"] for e in events(run, "outcome")
                 if e["data"]["event"] == "failed.transport"]
    assert failed["reason"] == "NOT_OBSERVED"
    assert failed["details"]["missing"] == {"tray": "never seen"}
    assert "move_ee_to" not in {r["skill"] for r in run.records if r["state"] == "CONTROL_DONE"}
    assert run.started_twice() == {}
