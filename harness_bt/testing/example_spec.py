"""The running example (:func:`harness_bt.testing.example.fetch_cup_task`) as a task spec:
built in Python with :mod:`harness_bt.authoring.builder`, and written by hand as YAML
(:data:`FETCH_CUP_YAML`). Both give the same spec; the task built from either behaves like the
Python one under every scenario (its monitor waits on an expression instead of a callable)."""

from __future__ import annotations

from pathlib import Path

from harness_bt.authoring import builder as b
from harness_bt.authoring import tree as t
from harness_bt.authoring.model import TaskSpec

__all__ = ["FETCH_CUP_YAML", "fetch_cup_spec"]

#: The hand-written YAML of the running example.
FETCH_CUP_YAML = Path(__file__).with_name("fetch_cup.yaml")


def _aborts(*events: str) -> list[b.TransitionSpec]:
    targets = {"failed": "aborted_pick", "unknown": "aborted_unknown",
               "budget_exhausted": "aborted_budget_exhausted"}
    return [b.on(e, targets[e]) for e in events]


def fetch_cup_spec() -> TaskSpec:
    """navigate -> pick (grasp beside a monitor) -> deliver (evaluate, recover, place)."""
    steps = t.sequence("steps", [
        t.observe("observe", ["cup"], record="plan", timeout_s=1.0),
        t.act_and_evaluate("align", "align", objects={"target": "cup"}, snapshot="plan",
                           params={"height_m": 0.1}),
        t.act_and_evaluate("approach", "approach", objects={"target": "cup"},
                           snapshot="plan"),
        t.skill("close", "grasp", params={"object_id": "cup"}, premises=["cup"],
                snapshot="plan", output="grasp", handover=True),
    ])
    regrasp = t.sequence("regrasp", [
        t.act_and_evaluate("release", "release", params={"object_id": "cup"}),
        t.skill("close_again", "grasp", params={"object_id": "cup"}, output="grasp",
                handover=True),
    ])
    return b.task("fetch_cup", [
        b.phase("navigate", t.act_and_evaluate("go", "navigate",
                                               params={"x_m": 1.6, "y_m": 0.5}),
                transitions=[b.on("succeeded", "pick"), b.on("failed", "aborted_navigation"),
                             *_aborts("unknown", "budget_exhausted")]),
        b.parallel("pick", [
            b.phase("grasp", t.retry("pick", steps, attempts=2,
                                     backoff={"base_s": 0.05, "cap_s": 0.2}),
                    transitions=[b.on("succeeded", "deliver")]),
            b.phase("watch", t.inverter("cup_still_there",
                                        t.wait_for("cup_lost", when="not exists(world.cup)")),
                    description="fails if the cup disappears"),
        ], transitions=_aborts("budget_exhausted", "unknown", "failed")),
        b.compound("deliver", [
            b.phase("evaluate", t.recover(
                "hold_cup", t.evaluate("grasp_ok", "grasp", max_observations=3,
                                       observation_timeout_s=0.5), regrasp, budget=2),
                transitions=[b.on("succeeded", "place"),
                             b.on("failed", "aborted_grasp_failed")]),
            b.phase("place", t.act_and_evaluate("put", "place",
                                                params={"object_id": "cup",
                                                        "target_id": "tray"},
                                                objects={"target": "tray"}),
                    transitions=[b.on("succeeded", "placed")]),
            b.final("placed"),
        ], transitions=[b.on("done", "done"), *_aborts("budget_exhausted", "unknown"),
                        b.on("failed", "aborted_place")]),
        b.final("done"), b.final("aborted_navigation"), b.final("aborted_pick"),
        b.final("aborted_grasp_failed"), b.final("aborted_place"), b.final("aborted_unknown"),
        b.final("aborted_budget_exhausted"),
    ], budget=b.budget(max_retries=6, max_time_s=60.0),
        description="navigate -> pick (observe, align, approach, close) -> evaluate -> place",
        instruction="fetch the cup and put it on the tray")
