"""The templates planner: every library task chosen from three phrasings of its instruction,
a clarification asked for when an instruction fits several tasks, bindings or objects, a
refusal (listing the tasks and their templates) when it fits none; and the templates checked
with the task file (an undeclared ``{name}`` is an error at its place)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness_bt.authoring import check_file
from harness_bt.authoring.model import ParamSpec
from harness_bt.errors import PlanningError
from harness_bt.planner.candidates import scene_objects
from harness_bt.planner.model import Candidate, PlanRequest, RefusalCode, SceneObject
from harness_bt.planner.templates import TemplatePlanner, compile_template
from harness_bt.planner.words import normalise, object_words
from tests.harness_bt.planner.library_table import BEGIN, END, TABLE, markdown_table

ROOT = Path(__file__).resolve().parents[3]
PLANNER = TemplatePlanner()


def cube(colour: str) -> SceneObject:
    return SceneObject(f"{colour}_cube", f"{colour} cube",
                       object_words(f"{colour}_cube", label=f"{colour} cube", colour=colour,
                                    shape="cube"))


CUBES = (cube("red"), cube("green"), cube("blue"))
LIFT = Candidate("lift", "lift.yaml", ("lift the {target} by {height} m",),
                 {"target": ParamSpec(type="object", default="red_cube"),
                  "height": ParamSpec(type="number", default=0.1, min=0.0, max=0.3)},
                 "cubes", CUBES)


@pytest.mark.parametrize(("instruction", "task", "params"), TABLE,
                         ids=[row[0] for row in TABLE])
def test_every_library_task_is_chosen_from_its_phrasings(
        library: tuple[Candidate, ...], instruction: str, task: str,
        params: dict[str, object]) -> None:
    decision = PLANNER.plan(PlanRequest(instruction, library))
    assert decision.refusal is None
    assert decision.plan is not None
    assert (decision.plan.task, dict(decision.plan.params)) == (task, params)
    assert Path(decision.plan.file).name == f"{task}.yaml"
    assert decision.planner == "templates"
    assert decision.prompt_digest.startswith("sha256:")


def test_the_table_has_three_phrasings_of_every_library_task_with_varied_objects(
        library: tuple[Candidate, ...]) -> None:
    assert Counter(task for _, task, _ in TABLE) == {c.name: 3 for c in library}
    for c in library:
        bindings = {json.dumps(p, sort_keys=True) for _, t, p in TABLE if t == c.name}
        containers = [o for o in c.objects if "tray" in o.words]
        # sort's and clear_table's scenes have one container, the tray: their phrasings vary
        # the words alone
        assert len(bindings) == (1 if c.name in ("sort", "clear_table") and len(containers) == 1
                                 else 3), c.name


def test_docs_planning_holds_the_table_the_test_checks() -> None:
    page = (ROOT / "docs" / "planning.md").read_text(encoding="utf-8")
    start, end = page.index(BEGIN), page.index(END) + len(END)
    assert page[start:end] == markdown_table(), (
        "docs/planning.md's table differs from tests/harness_bt/planner/library_table.py: "
        "paste markdown_table() between the markers")


def test_an_object_named_ambiguously_asks_which_one(library: tuple[Candidate, ...]) -> None:
    decision = PLANNER.plan(PlanRequest("pick up the cube", library))
    assert decision.plan is None and decision.refusal is not None
    assert decision.refusal.code is RefusalCode.AMBIGUOUS
    assert decision.refusal.reasons == (
        "'cube' (for {target} of pick) could be any of red_cube, green_cube, blue_cube",)
    assert decision.refusal.candidates == ("pick (target=red_cube)", "pick (target=green_cube)",
                                           "pick (target=blue_cube)")
    error = decision.refusal.error("pick up the cube", "templates")
    assert isinstance(error, PlanningError) and error.code == "PLAN_AMBIGUOUS"
    assert str(error).startswith("PLAN_AMBIGUOUS: planner 'templates' gave no plan for 'pick "
                                 "up the cube': 'cube' (for {target} of pick) could be any of")
    assert "\ncandidates:\n  pick (target=red_cube)\n" in str(error)
    assert "name the object by its colour and shape" in str(error)


def test_a_red_cube_among_three_red_cubes_is_ambiguous_too(
        library: tuple[Candidate, ...]) -> None:
    sort = next(c for c in library if c.name == "sort")
    pick_sorted = Candidate("pick_sorted", "p.yaml", ("pick up the {target}",),
                            {"target": ParamSpec(type="object", default="tray")}, "sort",
                            sort.objects)
    decision = PLANNER.plan(PlanRequest("pick up the red cube", (pick_sorted,)))
    assert decision.refusal is not None and decision.refusal.code is RefusalCode.AMBIGUOUS
    assert "could be any of red_cube_1, red_cube_2, red_cube_3" in decision.refusal.reasons[0]
    ok = PLANNER.plan(PlanRequest("pick up red cube 2", (pick_sorted,)))
    assert ok.plan is not None and dict(ok.plan.params) == {"target": "red_cube_2"}


def test_two_tasks_that_fit_the_same_words_ask_which_task() -> None:
    twin = Candidate("lift_again", "lift_again.yaml", LIFT.templates, LIFT.params, "cubes",
                     CUBES)
    decision = PLANNER.plan(PlanRequest("lift the red cube by 0.2 m", (LIFT, twin)))
    assert decision.refusal is not None and decision.refusal.code is RefusalCode.AMBIGUOUS
    assert decision.refusal.reasons == ("2 tasks or bindings fit the instruction",)
    assert decision.refusal.candidates == (
        "lift (target=red_cube, height=0.2) from 'lift the {target} by {height} m'",
        "lift_again (target=red_cube, height=0.2) from 'lift the {target} by {height} m'")


def test_an_impossible_instruction_is_refused_listing_the_tasks_and_their_templates(
        library: tuple[Candidate, ...]) -> None:
    decision = PLANNER.plan(PlanRequest("paint the table", library))
    assert decision.refusal is not None and decision.refusal.code is RefusalCode.NO_MATCH
    assert decision.refusal.reasons == ("no task of the library is asked that way",)
    assert "pick: 'pick up the {target}' | 'fetch the {target}' | 'get the {target} off the " \
           "table' (scene pick_cube)" in decision.refusal.candidates
    assert len(decision.refusal.candidates) == len(library)
    assert "harness run trees/NAME.yaml" in decision.refusal.fix


def test_an_object_the_scene_does_not_have_is_named_in_the_refusal(
        library: tuple[Candidate, ...]) -> None:
    decision = PLANNER.plan(PlanRequest("pick up the purple cube", library))
    assert decision.refusal is not None and decision.refusal.code is RefusalCode.NO_MATCH
    assert decision.refusal.reasons == (
        "task pick: no object of scene pick_cube is called 'purple cube' (for {target}); its "
        "objects: red cube (red_cube), green cube (green_cube), blue cube (blue_cube)",)


def test_numbers_bind_by_type_and_range() -> None:
    ok = PLANNER.plan(PlanRequest("Lift the GREEN cube by 0.25 metres!", (LIFT,)))
    assert ok.plan is not None and dict(ok.plan.params) == {"target": "green_cube",
                                                           "height": 0.25}
    high = PLANNER.plan(PlanRequest("lift the green cube by 2 m", (LIFT,)))
    assert high.refusal is not None and high.refusal.reasons == (
        "task lift: {height} is a number between 0 and 0.3; '2': 2.0 is above the maximum "
        "0.3",)
    words = PLANNER.plan(PlanRequest("lift the green cube by far m", (LIFT,)))
    assert words.refusal is not None
    assert "{height} is a number between 0 and 0.3, not 'far'" in words.refusal.reasons[0]


def test_articles_case_punctuation_plurals_and_synonyms_do_not_matter() -> None:
    assert normalise("Please, grab the Red CUBES!") == ["pick", "red", "cube"]
    assert normalise("Could you put it on top of the tray?") == ["put", "it", "on", "tray"]
    assert normalise("move by -0.05, .1 metres") == ["move", "by", "-0.05", ".1", "m"]
    assert compile_template("Put every red cube into the {container}.").parts == (
        "put", "every", "red", "cube", "in", ("container",))


def test_scene_objects_are_named_by_id_label_colour_and_shape(
        library: tuple[Candidate, ...]) -> None:
    pick_and_place = next(c for c in library if c.name == "pick_and_place")
    words = {o.id: o.words for o in pick_and_place.objects}
    assert words["lego"] == {"lego", "brick", "yellow"}
    assert words["tray"] == {"tray", "grey"}
    from harness_bt.authoring.scenes import load_scene

    assert scene_objects(load_scene("stack").spec)[0].words == {"red", "cube"}


TASK = """\
name: lookup
instruction: look at the {target}
instructions:
  - "find the {thing}"
  - "look for the {target"
params:
  target: {type: object, default: red_cube}
phases:
  - id: look
    tree: {type: observe, name: look, objects: ["{target}"], timeout_s: 1.0}
    transitions:
      - {event: succeeded, target: done}
      - {event: failed, target: aborted_lost}
  - {id: done, kind: final}
  - {id: aborted_lost, kind: final}
"""


def test_a_template_naming_no_declared_param_is_an_error_at_its_place() -> None:
    report = check_file("lookup.yaml", text=TASK).report
    errors = [str(p) for p in report.errors]
    assert errors == [
        "lookup.yaml:4:5: error UNDECLARED_PARAM: template 'find the {thing}' names "
        "'{thing}', which is no parameter of the task; declared: target (at "
        "instructions[0]); fix: declare it (params: {thing: {type: ..., default: ...}}) or "
        "fix the name",
        "lookup.yaml:5:5: error INVALID_TEMPLATE: template 'look for the {target' has a '{' "
        "that is not part of a '{name}' (a parameter's name in braces) (at instructions[1]); "
        "fix: write a parameter as {name}, letters, digits and _ only, or drop the brace"]


def test_a_file_with_one_instruction_and_no_instructions_stays_valid() -> None:
    text = TASK.replace('  - "find the {thing}"\n  - "look for the {target"\n', "").replace(
        "instructions:\n", "")
    assert check_file("lookup.yaml", text=text).report.ok


def test_a_value_the_user_set_settles_which_object_an_ambiguous_slot_means(
        library: tuple[Candidate, ...]) -> None:
    settled = PLANNER.plan(PlanRequest("pick up the cube", library, given={"target": "red_cube"}))
    assert settled.plan is not None and dict(settled.plan.params) == {"target": "red_cube"}
    # a slot the words bind is kept (--set overrides it when the task loads)
    kept = PLANNER.plan(PlanRequest("grab the blue cube", library,
                                    given={"target": "green_cube"}))
    assert kept.plan is not None and dict(kept.plan.params) == {"target": "blue_cube"}
    other = PLANNER.plan(PlanRequest("pick up the cube", library, given={"target": "lego"}))
    assert other.refusal is not None and other.refusal.code is RefusalCode.AMBIGUOUS
