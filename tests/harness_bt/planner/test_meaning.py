"""The meaning planner (the default): every row of a held-out table of varied phrasings
(tests/harness_bt/planner/meaning_table.py, written before the planner) and of the templates
table chooses its task and binding; a clarification when two bindings tie; refusals say why
and list the tasks; the parts (frames, offsets, pronouns, containers) on their own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harness_bt.planner.meaning import MeaningPlanner, vocabulary
from harness_bt.planner.model import Candidate, PlanRequest, RefusalCode
from harness_bt.planner.parse import parse
from tests.harness_bt.planner.library_table import TABLE
from tests.harness_bt.planner.meaning_table import AFTER, CLEARING, HELD_OUT

PLANNER = MeaningPlanner()


@pytest.mark.parametrize(("instruction", "task", "params"), [*HELD_OUT, *CLEARING],
                         ids=[row[0] for row in [*HELD_OUT, *CLEARING]])
def test_every_held_out_phrasing_chooses_its_task_and_binding(
        library: tuple[Candidate, ...], instruction: str, task: str,
        params: dict[str, object]) -> None:
    decision = PLANNER.plan(PlanRequest(instruction, library))
    assert decision.refusal is None, decision.refusal
    assert decision.plan is not None
    assert (decision.plan.task, dict(decision.plan.params)) == (task, params)
    assert Path(decision.plan.file).name == f"{task}.yaml"
    assert decision.planner == "meaning"


@pytest.mark.parametrize(("instruction", "task", "params"), [*AFTER, *TABLE],
                         ids=[row[0] for row in [*AFTER, *TABLE]])
def test_later_phrasings_and_the_templates_table_are_understood_too(
        library: tuple[Candidate, ...], instruction: str, task: str,
        params: dict[str, object]) -> None:
    decision = PLANNER.plan(PlanRequest(instruction, library))
    assert decision.plan is not None, decision.refusal
    assert (decision.plan.task, dict(decision.plan.params)) == (task, params)


def test_the_held_out_table_has_sixty_rows_or_more_covering_every_library_task(
        library: tuple[Candidate, ...]) -> None:
    assert len(HELD_OUT) >= 60
    counts = Counter(task for _, task, _ in HELD_OUT)
    assert set(counts) == {c.name for c in library}
    assert min(counts.values()) >= 6
    templates = {t.lower() for c in library for t in c.templates}
    assert not [row for row in HELD_OUT if row[0].lower() in templates]


def test_the_held_out_table_scores_one_hundred_percent(library: tuple[Candidate, ...]) -> None:
    hits = 0
    for instruction, task, params in [*HELD_OUT, *CLEARING]:
        plan = PLANNER.plan(PlanRequest(instruction, library)).plan
        hits += plan is not None and (plan.task, dict(plan.params)) == (task, params)
    assert hits / len(HELD_OUT + CLEARING) == 1.0


def test_clearing_needs_a_surface_and_is_about_what_is_not_a_container(
        library: tuple[Candidate, ...]) -> None:
    decision = PLANNER.plan(PlanRequest("tidy up", library))
    assert decision.refusal is not None
    assert decision.refusal.reasons[0] == "no object of any scene is named"
    said = parse("clear the table", vocabulary(library))
    assert said.clears and said.theme is not None and said.theme.surface
    assert said.destination is None and said.moves
    assert not parse("clear every red block into the tray", vocabulary(library)).clears
    plan = PLANNER.plan(PlanRequest("clear the table", library,
                                    given={"container": "tray"})).plan
    assert plan is not None and plan.task == "clear_table"


def test_two_objects_the_words_fit_ask_for_a_clarification(
        library: tuple[Candidate, ...]) -> None:
    refusal = PLANNER.plan(PlanRequest("put the cube in the tray", library)).refusal
    assert refusal is not None and refusal.code is RefusalCode.AMBIGUOUS
    assert refusal.reasons == ("target of pick_and_place could be any of red_cube, green_cube",)
    assert refusal.candidates == ("pick_and_place (container=tray, target=red_cube)",
                                  "pick_and_place (container=tray, target=green_cube)")


def test_an_open_role_never_offers_the_object_of_the_other_role(
        library: tuple[Candidate, ...]) -> None:
    refusal = PLANNER.plan(PlanRequest("stack the cube on the red cube", library)).refusal
    assert refusal is not None and refusal.code is RefusalCode.AMBIGUOUS
    assert refusal.candidates == ("stack (bottom=red_cube, top=green_cube)",
                                  "stack (bottom=red_cube, top=blue_cube)")


def test_two_tasks_that_fit_equally_well_ask_for_a_clarification(
        library: tuple[Candidate, ...]) -> None:
    # a pick that says neither "hold" nor "policy" twice: the library's two picks both fit
    twin = next(c for c in library if c.name == "pick")
    copy = Candidate("pick_again", "pick_again.yaml", twin.templates, twin.params, twin.scene,
                     twin.objects)
    refusal = PLANNER.plan(PlanRequest("grab the red cube", (*library, copy))).refusal
    assert refusal is not None and refusal.code is RefusalCode.AMBIGUOUS
    assert refusal.candidates == ("pick (target=red_cube)", "pick_again (target=red_cube)")


def test_a_user_value_settles_an_open_object(library: tuple[Candidate, ...]) -> None:
    plan = PLANNER.plan(PlanRequest("put the cube in the tray", library,
                                    given={"target": "green_cube"})).plan
    assert plan is not None and dict(plan.params) == {"target": "green_cube",
                                                      "container": "tray"}


@pytest.mark.parametrize(("instruction", "reason"), [
    ("pick up the purple cube", "no object of scene pick_cube is 'purple cube'; its objects: "
                                "red cube (red_cube), green cube (green_cube), blue cube "
                                "(blue_cube)"),
    ("put it in the tray", "'it' refers to nothing said before it: name the object"),
    ("move the red cube 5 cm", "1 number(s) (5) but no direction: say which way"),
    ("make me a coffee", "no object of any scene is named"),
    ("push the red cube", "a verb of carrying, but no destination or offset"),
    ("put the red cube on the red cube", "red_cube cannot go on or in itself"),
    ("don't pick up the red cube", "a negation (\"don't\"): say what to do"),
    ("put the red cube in the tray and the green cube in the tray",
     "it names more objects (red cube, tray, green cube, tray) than a task takes"),
    ("move the red cube to the left", "a direction but no distance: say how far"),
])
def test_a_refusal_says_why_and_lists_every_task(library: tuple[Candidate, ...],
                                                 instruction: str, reason: str) -> None:
    refusal = PLANNER.plan(PlanRequest(instruction, library)).refusal
    assert refusal is not None and refusal.code is RefusalCode.NO_MATCH
    assert any(reason in r for r in refusal.reasons), refusal.reasons
    assert len(refusal.candidates) == len(library)
    assert refusal.candidates[0].startswith("clear_table: 'put every cube in the {container}, "
                                            "nearest first'")
    text = str(refusal.error(instruction, "meaning"))
    assert f"planner 'meaning' gave no plan for {instruction!r}" in text


def test_a_container_or_a_stackable_object_chooses_put_in_or_stack(
        library: tuple[Candidate, ...]) -> None:
    on_tray = PLANNER.plan(PlanRequest("put the green cube on the tray", library)).plan
    in_cube = PLANNER.plan(PlanRequest("put the green cube in the blue cube", library)).plan
    assert on_tray is not None and on_tray.task == "pick_and_place"
    assert in_cube is not None and (in_cube.task, dict(in_cube.params)) == (
        "stack", {"top": "green_cube", "bottom": "blue_cube"})


def test_offsets_read_units_and_the_robots_directions(library: tuple[Candidate, ...]) -> None:
    words = vocabulary(library)
    assert parse("move it 10 cm left and 2 cm back", words).offset == (-0.02, 0.1)
    assert parse("shift the red cube 15 mm to the right", words).offset == (0.0, -0.015)
    assert parse("move the red cube by 0.1, -0.05", words).offset == (0.1, -0.05)
    assert parse("move the red cube", words).offset is None


def test_a_pronoun_takes_the_object_said_before_it(library: tuple[Candidate, ...]) -> None:
    frame = parse("grab the lego and drop it in the tray", vocabulary(library))
    assert frame.theme is not None and frame.theme.text == "lego"
    assert frame.destination is not None and frame.destination.text == "tray"
    assert frame.destination.prep == "in"
