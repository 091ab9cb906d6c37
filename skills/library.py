"""The task library (``trees/``) built in Python: each builder makes the same task as its YAML
document (``trees/<name>.yaml``), which is the library's source of truth: ``trees/<name>.py``
exposes one as ``task(**params)``, and ``tests/trees/test_library_written_once.py`` holds every
builder here to its YAML task (equal structures for the defaults and for every other object of
the scene in each parameter), so a change made on one side only fails the tests.

- :func:`pick_task`: find the target, approach, grasp and lift it, judge that it is held.
- :func:`move_task`: pick the target, carry it over a destination object, put it inside (a
  container: ``pick_and_place``) or on top (an object: ``stack``).
- :func:`place_at_task`: pick the target and put it back at an offset from where it was seen
  (a pose derived as data, with no premise on the moved object).
- :func:`sort_task`: a loop through the statechart: survey, pick the next object of a group
  that is not in the container yet, put it in, survey again; done when none is left.
- :func:`clear_task`: the same loop as one ``for_each`` node (``clear_table``): survey, put
  the object left outside the container that ``order`` picks (nearest it) in its slot, again
  until none is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import py_trees

from harness_bt import Final, Phase, Task, TaskBudget, on
from harness_bt.nodes import DerivePose, act_and_evaluate
from harness_bt.nodes.decorators import RecoveryGate
from harness_bt.nodes.loops import BodyUse, Choice, ForEach
from skills.phase_trees import (
    Behaviour,
    approach_tree,
    carry_to_goal_tree,
    carry_tree,
    evaluate_tree,
    grasp_tree,
    look,
    pick_phases,
    put_at_goal_tree,
    put_in_slot_tree,
    put_tree,
    sequence,
)

__all__ = ["RECOVERIES", "clear_task", "move_task", "pick_task", "place_at_task", "sort_task"]

PICK_ABORTS = ("aborted_not_observed", "aborted_approach", "aborted_grasp",
               "aborted_grasp_failed")
MOVE_ABORTS = (*PICK_ABORTS, "aborted_dropped", "aborted_place_failed")
ENDS = ("aborted_unknown", "aborted_budget_exhausted")
RECOVERIES = ("Recoveries: back off home after an IK failure or a stall on the way; reopen, "
              "look again and realign after a failed grasp; after a slip (the object not held "
              "after the lift) let go, look again and grasp again.")


def _finals(aborts: Sequence[str]) -> list[Final]:
    return [Final("done", reason="done"), *(Final(a) for a in (*aborts, *ENDS))]


def pick_task(name: str, target: str) -> Task:
    """``pick`` (and ``pick_cube``, the same with its default)."""
    return Task(
        name,
        [
            Phase("observe", lambda: look("find_target", target), transitions=[
                on("succeeded", "approach"), on("failed", "aborted_not_observed")],
                description="find the target (the plan's snapshot)"),
            *pick_phases(target, then="done"),
            *_finals(PICK_ABORTS),
        ],
        initial="observe", budget=TaskBudget(max_retries=8, max_time_s=25.0),
        description="Find the target, go above it, grasp and lift it, and judge from "
                    f"observations that it is held. {RECOVERIES}",
        instruction=f"pick up the {target}", version="2", scene="pick_cube",
        params={"target": target},
    )


def _carry_phases(transport: Behaviour, put: Behaviour, transport_text: str,
                  put_text: str) -> list[Phase]:
    return [
        Phase("transport", lambda: transport, transitions=[
            on("succeeded", "place"), on("failed", "aborted_dropped"),
            on("unknown", "aborted_unknown")], description=transport_text),
        Phase("place", lambda: put, transitions=[
            on("succeeded", "done"), on("failed", "aborted_place_failed"),
            on("unknown", "aborted_unknown")], description=put_text),
    ]


def move_task(name: str, target: str, dest: str, *, onto: str, clearance: float,
              scene: str, params: dict[str, str], instruction: str, description: str,
              budget: TaskBudget) -> Task:
    """Pick ``target``, carry it over ``dest`` and put it ``onto`` (inside | top) it."""
    return Task(
        name,
        [
            Phase("observe", lambda: look("find_objects", target, dest), transitions=[
                on("succeeded", "approach"), on("failed", "aborted_not_observed")],
                description="find the target and where it goes (the plan's snapshot)"),
            *pick_phases(target, then="transport"),
            *_carry_phases(carry_tree(target, dest), put_tree(target, dest, onto, clearance),
                           "carry the target over where it goes, checking it stays in the "
                           "hand", "lower it, let go, back off; judge where it rests"),
            *_finals(MOVE_ABORTS),
        ],
        initial="observe", budget=budget, description=description,
        instruction=instruction.format(**params), version="2", scene=scene, params=params,
    )


def place_at_task(target: str, offset: Sequence[float]) -> Task:
    """``place_at``: move ``target`` by ``offset`` ([dx, dy] metres) from where it was seen."""
    def observe() -> Behaviour:
        return sequence("find_and_aim", look("find_target", target), DerivePose(
            "aim", target, offset=list(offset), at="sighting", snapshot="plan",
            output="goal"))

    return Task(
        "place_at",
        [
            Phase("observe", observe, transitions=[
                on("succeeded", "approach"), on("failed", "aborted_not_observed")],
                description="find the target; the goal is where it was seen plus the offset "
                            "(a fixed place: no premise on the target, which moves)"),
            *pick_phases(target, then="transport"),
            *_carry_phases(carry_to_goal_tree(target), put_at_goal_tree(target),
                           "carry the target over the goal, checking it stays in the hand",
                           "lower it at the goal, let go, back off; judge where it rests"),
            *_finals(MOVE_ABORTS),
        ],
        initial="observe", budget=TaskBudget(max_retries=10, max_time_s=27.0),
        description="Pick the target up and put it down again at an offset from where it was "
                    f"seen. {RECOVERIES}",
        instruction=f"move the {target} by {','.join(f'{v:g}' for v in offset)} m", version="2",
        scene="place_at",
        params={"target": target, "offset": list(offset)},
    )


def _put_away_or_let_go(obj: str, container: str, slot: Sequence[float]) -> Behaviour:
    """steps.yaml's ``put_away`` for ``obj``, named after it (a ``for_each`` body)."""
    return py_trees.composites.Selector(obj, memory=True, children=[
        sequence("pick_and_put", approach_tree(obj), grasp_tree(obj), evaluate_tree(obj),
                 carry_tree(obj, container), put_in_slot_tree(obj, container, slot)),
        sequence("after_a_failure", RecoveryGate("plain_failure"),
                 act_and_evaluate("let_go", "release", params={"object_id": obj}),
                 py_trees.behaviours.Failure("failed"))])


@dataclass(frozen=True)
class _Loop:
    """One ``for_each`` over ``objects`` into ``container`` (trees/sort.yaml, clear_table)."""

    name: str
    objects: Sequence[str]
    container: str
    slots: Sequence[Sequence[float]]
    order: str | None
    attempts: int
    group: str | None = None  # over the scene's group (its members: ``objects``)
    look_in: bool = False  # the survey may see the container alone

    def tree(self) -> Behaviour:
        pairs = list(zip(self.objects, self.slots, strict=True))
        seen = look("look", *self.objects, self.container)
        if self.look_in:  # else the container alone: one put in it may be hidden there
            seen = py_trees.composites.Selector("look_all", memory=True, children=[
                seen, look("look_in", self.container)])
        survey = sequence("survey", act_and_evaluate("clear_view", "home"), seen)
        return ForEach(
            self.name, "obj", {"group": self.group} if self.group else list(self.objects),
            [_put_away_or_let_go(o, self.container, s) for o, s in pairs], before=survey,
            choice=Choice(f"it.in != '{self.container}'", self.order, self.attempts),
            body=BodyUse("put_away", {"dest": self.container},
                         {"slot": {o: list(s) for o, s in pairs}}))

    def phases(self, phase: str, description: str) -> list[Any]:
        return [Phase(phase, self.tree, description=description, transitions=[
            on("succeeded", "done"), on("failed", "aborted_failed"),
            on("unknown", "aborted_unknown"), on("budget_exhausted", "aborted_budget_exhausted")]),
            Final("done", reason="done"), Final("aborted_failed"), Final("aborted_unknown"),
            Final("aborted_budget_exhausted")]


def sort_task(objects: Sequence[str], container: str,
              slots: Sequence[Sequence[float]]) -> Task:
    """``sort``: every object of ``objects`` into ``container``, each in its slot (an offset
    from the container's centre, so that they do not land on one another): one ``for_each``
    that surveys before each object and takes the first left outside, in ``objects``' order;
    one knocked out on the way is left again, and put in again."""
    loop = _Loop("reds", objects, container, slots, order=None, attempts=4, group="reds",
                 look_in=True)
    return Task(
        "sort", loop.phases("sort", "move the arm out of the view and see every object to "
                            "sort and the container; put the first one not in it yet in its "
                            "slot (after a failure: let go); again until none is left"),
        budget=TaskBudget(max_retries=24, max_time_s=75.0),
        description="Put every object of a group into the container, one at a time, looking "
                    "again after each: an object knocked out on the way is simply put in "
                    "again, and the task ends when none is left outside.",
        instruction=f"put every red cube in the {container}", version="1", scene="sort",
        params={"container": container},
    )


def clear_task(objects: Sequence[str], container: str, slots: Sequence[Sequence[float]],
               *, order: str | None) -> Task:
    """``clear_table``: every object of ``objects`` into ``container``, each in its slot, one
    ``for_each`` choosing the next left outside (by ``order``) after a survey each time."""
    loop = _Loop("cubes", objects, container, slots, order=order, attempts=3,
                 group="to_clear")
    return Task(
        "clear_table", loop.phases("clear", "look; put the cube nearest the container in its "
                                   "slot; again until none is left"),
        budget=TaskBudget(max_retries=24, max_time_s=75.0),
        description="put every cube on the table in the container, the one nearest to it first",
        instruction=f"put every cube in the {container}, nearest first", version="1",
        scene="clear_table",
        params={"container": container})
