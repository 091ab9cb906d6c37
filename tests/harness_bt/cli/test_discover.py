"""``harness skills``, ``nodes``, ``evaluators`` and ``scenes``: each lists what is installed and
describes one entry, as text (piped: plain and aligned) and as JSON; an unknown name gets the
known ones and a "did you mean", and a broken plug-in is reported without taking the list
down."""

from __future__ import annotations

import json
import re
from importlib.metadata import EntryPoint
from typing import Any

import pytest

from harness_bt.catalogue.entries import INTERNAL_NODE_TYPES
from harness_bt.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status, out, err = run(capsys, *argv, "--json")
    assert (status, err) == (0, "")
    return json.loads(out)


def test_skills_lists_each_installed_skill_with_its_evaluators_and_package(capsys):
    status, out, _ = run(capsys, "skills")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].endswith("skills (harness skills NAME describes one)")
    lift = next(line for line in lines if line.startswith("lift "))
    assert "arm, gripper" in lift and "grasped" in lift and "harness-bt" in lift
    place = next(line for line in lines if line.startswith("place "))
    assert "rests_on (onto='top')" in place and "at_pose (onto='pose')" in place
    assert "\x1b[" not in out and "┃" not in out  # piped: plain text


def test_skill_json_gives_params_with_types_ranges_defaults_and_units(capsys):
    lift = as_json(capsys, "skills", "lift")
    height = next(p for p in lift["params"] if p["name"] == "height_m")
    assert height == {"name": "height_m", "type": "float", "required": False, "default": 0.12,
                      "minimum": 0.03, "maximum": 0.3, "unit": "m"}
    assert lift["resources"] == ["arm", "gripper"]
    assert lift["evaluators"] == ["grasped"]
    assert lift["source"]["package"] == "harness-bt"
    assert lift["source"]["origin"] == "entry point skills.contracts:LIFT"
    assert lift["executor"]["origin"] == "entry point skills.executors:LiftExecutor"
    assert lift["lifecycle"]["execution_timeout_ms"] == 8000
    place = as_json(capsys, "skills", "place")
    onto = next(p for p in place["params"] if p["name"] == "onto")
    assert onto["choices"] == ["inside", "top", "pose"]
    assert {p["evaluator"]: p["when"] for p in place["postconditions"]} == {
        "at_pose": "onto='pose'", "rests_on": "onto='top'",
        "placed_on": "unless onto='top' or onto='pose'"}


def test_a_skill_described_in_text_shows_its_params_table_and_lifecycle(capsys):
    status, out, _ = run(capsys, "skills", "lift")
    assert status == 0
    assert out.startswith("skill lift (version 1): raise the hand")
    assert any(line.split()[:5] == ["height_m", "float", "0.12", "[0.03,", "0.3]"]
               for line in out.splitlines())
    assert "grasped  always" in out
    assert "lifecycle: start within 1000 ms, run at most 8000 ms" in out


def test_an_unknown_skill_names_the_known_ones_and_the_near_one(capsys):
    status, _, err = run(capsys, "skills", "lfit")
    assert status == 1
    assert "UNKNOWN_SKILL: unknown skill 'lfit'; known:" in " ".join(err.split())
    assert "did you mean 'lift'?" in " ".join(err.split())


def test_nodes_hide_the_internal_types_unless_asked(capsys):
    listed = {n["type"] for n in as_json(capsys, "nodes")}
    assert "sequence" in listed and "act_and_evaluate" in listed and "recover" in listed
    assert listed.isdisjoint(INTERNAL_NODE_TYPES)
    every = {n["type"]: n["internal"] for n in as_json(capsys, "nodes", "--all")}
    assert {t for t, internal in every.items() if internal} == set(INTERNAL_NODE_TYPES)
    status, out, _ = run(capsys, "nodes")
    assert status == 0 and "recovery_gate" not in out and "running" not in out.split()


def test_a_node_type_says_its_ports_and_what_each_status_means(capsys):
    retry = as_json(capsys, "nodes", "retry")
    assert [p["name"] for p in retry["ports"]][:2] == ["child", "attempts"]
    assert set(retry["status"]) == {"SUCCESS", "FAILURE", "RUNNING"}
    status, out, _ = run(capsys, "nodes", "skill_action")
    assert status == 0
    for text in ("ports", "SUCCESS: control action finished", "FAILURE:", "RUNNING:"):
        assert text in out
    gate = as_json(capsys, "nodes", "recovery_gate")  # described on request, marked
    assert gate["internal"] is True


def test_an_unknown_node_type_suggests_a_near_one_among_the_public_ones(capsys):
    status, _, err = run(capsys, "nodes", "sequnce")
    text = " ".join(err.split())
    assert status == 1 and "did you mean 'sequence'?" in text
    assert "recovery_gate" not in text


def test_evaluators_list_what_judges_and_which_skills_use_it(capsys):
    found = {e["name"]: e for e in as_json(capsys, "evaluators")}
    assert found["grasped"]["used_by"] == ["grasp", "lift", "move_ee_to"]
    assert found["ee_at"]["source"]["origin"] == "built in (harness_bt.evaluation)"
    status, out, _ = run(capsys, "evaluators", "rests_on")
    assert status == 0 and "used by skills: place" in out
    status, _, err = run(capsys, "evaluators", "grasp")
    assert status == 1 and "did you mean 'grasped'?" in " ".join(err.split())


def test_scenes_describe_objects_layout_and_success(capsys):
    listed = {s["name"]: s for s in as_json(capsys, "scenes")}
    assert {"pick_cube", "pick_and_place", "table"} <= set(listed)
    assert listed["table"]["judged"] is False
    scene = as_json(capsys, "scenes", "pick_and_place")
    tray = next(o for o in scene["objects"] if o["id"] == "tray")
    assert (tray["shape"], tray["colour"], tray["size_text"]) == ("tray", "grey",
                                                                  "21 x 21 x 4.3 cm")
    assert scene["success"]["when"] == ("inside(target, container) and released(target) and "
                                        "still(target)")
    assert scene["params"]["target"]["default"] == "red_cube"
    status, out, _ = run(capsys, "scenes", "pick_and_place")
    assert status == 0
    assert "tray: x 0.45..0.58, y 0.14..0.2, yaw 0, either side (y mirrored)" in out
    status, out, _ = run(capsys, "scenes", "table")
    assert "none: episodes are not judged" in out
    status, _, err = run(capsys, "scenes", "pick-cube")
    assert status == 1 and "did you mean 'pick_cube'?" in " ".join(err.split())


def test_a_broken_plug_in_is_reported_and_the_list_still_prints(capsys, monkeypatch):
    import harness_bt.plugins as plugins

    real = plugins.entry_points

    def with_a_broken_one(*, group: str) -> Any:
        found = list(real(group=group))
        if group == "harness_bt.skills":
            found.append(EntryPoint("broken", "no_such_module:SKILL", group))
        return found

    monkeypatch.setattr(plugins, "entry_points", with_a_broken_one)
    status, out, err = run(capsys, "skills")
    assert status == 0 and "lift" in out
    assert "warning: ENTRY_POINT_FAILED: skill 'broken'" in " ".join(err.split())


def test_scene_errors_point_at_harness_scenes() -> None:
    from harness_bt.errors import DefinitionError
    from harness_bt.scene import find_scene

    with pytest.raises(DefinitionError, match=r"harness scenes lists them"):
        find_scene("pick-cube")


def test_harness_schema_gives_the_installed_skills_their_params(capsys):
    status, out, _ = run(capsys, "schema")
    assert status == 0
    schema = json.loads(out)
    lift = schema["$defs"]["Params_lift"]
    assert lift["additionalProperties"] is False
    assert lift["properties"]["height_m"]["anyOf"][0]["maximum"] == 0.3


def test_on_a_terminal_the_lists_are_tables(capsys, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich: behave as on a terminal
    monkeypatch.setenv("COLUMNS", "160")
    status, out, _ = run(capsys, "skills")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert status == 0
    assert "┃ skill" in plain and "│ lift" in plain
