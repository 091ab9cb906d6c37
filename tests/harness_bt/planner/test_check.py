"""An answer checked like a task file's parameters: every problem reported at once."""

from __future__ import annotations

from harness_bt.authoring.model import ParamSpec
from harness_bt.planner.check import check_answer
from harness_bt.planner.model import Candidate, Plan, PlanRequest, Refusal, RefusalCode
from tests.harness_bt.planner.test_templates import CUBES

LIFT = Candidate("lift", "lift.yaml", ("lift the {target} by {height} m",),
                 {"target": ParamSpec(type="object"),
                  "height": ParamSpec(type="number", default=0.1, min=0.0, max=0.3)},
                 "cubes", CUBES)
REQUEST = PlanRequest("lift it", (LIFT,))


def test_a_checked_answer_keeps_only_the_values_given() -> None:
    plan = check_answer(REQUEST, "lift", {"target": "red_cube", "height": None})
    assert plan == Plan("lift", "lift.yaml", {"target": "red_cube"})


def test_every_problem_of_an_answer_is_reported_at_once() -> None:
    refusal = check_answer(REQUEST, "lift", {"height": 1, "speed": 2})
    assert isinstance(refusal, Refusal) and refusal.code is RefusalCode.INVALID
    assert refusal.reasons == (
        "parameter 'height' of lift is number (a number between 0 and 0.3); got 1: 1.0 is "
        "above the maximum 0.3",
        "task lift has no parameter 'speed'; its parameters: height, target",
        "parameter 'target' of lift (an object id) has no default and the answer gives none")
    assert refusal.candidates == ("lift: 'lift the {target} by {height} m' (scene cubes)",)


def test_parameters_that_are_not_an_object_are_refused() -> None:
    refusal = check_answer(REQUEST, "lift", ["red_cube"])
    assert isinstance(refusal, Refusal)
    assert refusal.reasons == ("the parameters of lift must be an object (name -> value), got "
                               "['red_cube']",)
