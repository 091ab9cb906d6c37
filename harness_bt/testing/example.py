"""The seed's running example, ready to run against :class:`FakeRuntime`: fetch the cup.

``navigate`` -> ``pick`` (a parallel phase: the grasp tree *observe -> align -> approach ->
close* beside a monitor that fails if the cup vanishes) -> ``deliver`` (a compound phase:
``evaluate`` the grasp, with a recovery that releases and grasps again, then ``place`` it on the
tray) -> ``done``. Failures end in named aborts.

The skill contracts here are deliberately small (the real ones live in ``skills``); the effects
that make the fake scene change live in :func:`example_runtime`.
"""

from __future__ import annotations

from typing import Any

import py_trees
from pydantic import BaseModel, ConfigDict, Field

from harness_bt.budget import TaskBudget
from harness_bt.clock import Clock, FakeClock
from harness_bt.errors import DefinitionError
from harness_bt.ledger import Command
from harness_bt.nodes import (
    Evaluate,
    Observe,
    Retry,
    SkillAction,
    WaitFor,
    act_and_evaluate,
    recover,
)
from harness_bt.plugins import did_you_mean
from harness_bt.run.runner import TaskRunner
from harness_bt.run.settings import RunnerSettings
from harness_bt.skill import Lifecycle, Postcondition, Skill, SkillRegistry, Violation
from harness_bt.task import Compound, Final, Parallel, Phase, Task, on
from harness_bt.testing.fake_runtime import FakeRuntime, FakeScene, Script
from harness_bt.world import WorldView

__all__ = [
    "CUP",
    "SCENARIOS",
    "TRAY",
    "example_runtime",
    "example_scene",
    "example_skills",
    "fetch_cup_task",
    "grasp_effect",
    "run_example",
    "slip_effect",
]

CUP = [0.5, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0]
TRAY = [0.5, 0.3, 0.02, 1.0, 0.0, 0.0, 0.0]
PRE_GRASP_HEIGHT_M = 0.1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NavigateParams(_Model):
    x_m: float
    y_m: float
    yaw_rad: float = 0.0
    landmark: str = "cup"


class PoseParams(_Model):
    target: list[float] = Field(min_length=3, max_length=7)
    height_m: float = 0.0


class ObjectParams(_Model):
    object_id: str


class PlaceParams(_Model):
    object_id: str
    target_id: str
    target: list[float] = Field(min_length=3, max_length=7)


def _reachable(params: Any, world: WorldView) -> list[Violation]:
    x, y, z = params.target[:3]
    if (x * x + y * y + z * z) ** 0.5 > 0.85:
        return [Violation("params.target", "outside the arm's 0.85 m workspace",
                          value=params.target, fix="move the base closer first")]
    return []


def example_skills() -> SkillRegistry:
    """navigate, align, approach, grasp, release, place: contracts with postconditions."""
    arm = ("arm",)
    hand = ("arm", "gripper")

    def above(p: PoseParams) -> list[Postcondition]:
        goal = [*p.target[:2], p.target[2] + p.height_m]
        return [Postcondition("ee_at", {"target": goal, "tolerance_m": 0.01})]

    return SkillRegistry([
        Skill("navigate", NavigateParams, resources=("base",),
              lifecycle=Lifecycle(start_within_ms=500, execution_timeout_ms=10_000,
                                  progress_timeout_ms=2_000),
              postconditions=lambda p: [Postcondition("object_visible",
                                                      {"object_id": p.landmark})],
              description="drive the base to (x, y, yaw)"),
        Skill("align", PoseParams, resources=arm, check=_reachable, postconditions=above,
              lifecycle=Lifecycle(start_within_ms=500, execution_timeout_ms=5_000,
                                  needs_fresh_observation_ms=500),
              description="move the hand above the target"),
        Skill("approach", PoseParams, resources=arm, check=_reachable, postconditions=above,
              lifecycle=Lifecycle(start_within_ms=500, execution_timeout_ms=5_000),
              description="descend onto the target"),
        Skill("grasp", ObjectParams, resources=hand,
              lifecycle=Lifecycle(start_within_ms=500, execution_timeout_ms=3_000,
                                  stop_timeout_ms=500, progress_timeout_ms=1_000,
                                  retry_safe=True),
              postconditions=lambda p: [Postcondition("object_held",
                                                      {"object_id": p.object_id})],
              description="close the gripper on an object"),
        Skill("release", ObjectParams, resources=hand,
              lifecycle=Lifecycle(start_within_ms=500, execution_timeout_ms=2_000),
              postconditions=lambda p: [Postcondition("gripper_open", {})],
              description="open the gripper"),
        Skill("place", PlaceParams, resources=hand, check=_reachable,
              lifecycle=Lifecycle(start_within_ms=500, execution_timeout_ms=5_000,
                                  retry_safe=False),
              postconditions=lambda p: [Postcondition("object_on", {
                  "object_id": p.object_id, "target": p.target_id})],
              description="put the held object on a target"),
    ])


def example_scene() -> FakeScene:
    return FakeScene({
        "cup": {"pose": list(CUP), "extent": [0.08, 0.08, 0.1], "relations": {"on": "table"}},
        "tray": {"pose": list(TRAY), "extent": [0.3, 0.2, 0.02], "relations": {"on": "table"}},
    })


def _move_ee(scene: FakeScene, cmd: Command) -> None:
    t = cmd.params["target"]
    scene.ee_position = [t[0], t[1], t[2] + cmd.params.get("height_m", 0.0)]


def grasp_effect(scene: FakeScene, cmd: Command) -> None:
    """The grasp holds the object."""
    oid = cmd.params["object_id"]
    scene.relate(oid, "held_by", "gripper")
    scene.relate(oid, "on", None)
    scene.gripper_width = 0.07


def slip_effect(scene: FakeScene, cmd: Command) -> None:
    """The fingers close on nothing: the object stays where it was."""
    scene.gripper_width = 0.0


def _release(scene: FakeScene, cmd: Command) -> None:
    oid = cmd.params["object_id"]
    scene.gripper_width = 0.08
    if scene.objects[oid]["relations"].get("held_by") is not None:
        scene.relate(oid, "held_by", None)
        scene.relate(oid, "on", "table")


def _place(scene: FakeScene, cmd: Command) -> None:
    oid = cmd.params["object_id"]
    t = cmd.params["target"]
    scene.move(oid, [t[0], t[1], t[2] + 0.05, 1.0, 0.0, 0.0, 0.0])
    scene.relate(oid, "held_by", None)
    scene.relate(oid, "on", cmd.params["target_id"])
    scene.gripper_width = 0.08


def example_runtime(clock: Clock, *, grasps: list[Script] | None = None,
                    **kwargs: Any) -> FakeRuntime:
    """A FakeRuntime over :func:`example_scene` where every skill succeeds in 0.1-0.3 s, with
    effects; ``grasps`` replaces the grasp scripts (e.g. a slip, then a hold)."""
    rt = FakeRuntime(clock, scene=kwargs.pop("scene", None) or example_scene(), **kwargs)
    rt.script("navigate", Script(duration_s=0.3, progress_every_s=0.1))
    rt.script("align", Script(duration_s=0.2, effect=_move_ee))
    rt.script("approach", Script(duration_s=0.2, effect=_move_ee))
    rt.script("grasp", *(grasps or [Script(duration_s=0.1, effect=grasp_effect)]))
    rt.script("release", Script(duration_s=0.1, effect=_release))
    rt.script("place", Script(duration_s=0.2, effect=_place))
    return rt


def _pick_tree(pick_attempts: int) -> py_trees.behaviour.Behaviour:
    steps = py_trees.composites.Sequence("steps", memory=True, children=[
        Observe("observe", ["cup"], record="plan", timeout_s=1.0),
        act_and_evaluate("align", "align", objects={"target": "cup"}, snapshot="plan",
                         params={"height_m": PRE_GRASP_HEIGHT_M}),
        act_and_evaluate("approach", "approach", objects={"target": "cup"}, snapshot="plan"),
        SkillAction("close", "grasp", params={"object_id": "cup"}, premises=["cup"],
                    snapshot="plan", output="grasp", handover=True),
    ])
    return Retry("pick", steps, attempts=pick_attempts, backoff={"base_s": 0.05, "cap_s": 0.2})


def _cup_lost(ctx: Any) -> bool:
    return ctx.world.get("cup") is None


def _monitor_tree() -> py_trees.behaviour.Behaviour:
    return py_trees.decorators.Inverter("cup_still_there",
                                        WaitFor("cup_lost", condition=_cup_lost))


def _evaluate_tree(grasp_budget: int, max_observations: int) -> py_trees.behaviour.Behaviour:
    regrasp = py_trees.composites.Sequence("regrasp", memory=True, children=[
        act_and_evaluate("release", "release", params={"object_id": "cup"}),
        SkillAction("close_again", "grasp", params={"object_id": "cup"}, output="grasp",
                    handover=True),
    ])
    return recover(Evaluate("grasp_ok", "grasp", max_observations=max_observations,
                            observation_timeout_s=0.5),
                   regrasp, budget=grasp_budget, name="hold_cup")


def _place_tree() -> py_trees.behaviour.Behaviour:
    return act_and_evaluate("put", "place", params={"object_id": "cup", "target_id": "tray"},
                            objects={"target": "tray"})


def _navigate_tree() -> py_trees.behaviour.Behaviour:
    return act_and_evaluate("go", "navigate", params={"x_m": 1.6, "y_m": 0.5})


def fetch_cup_task(*, pick_attempts: int = 2, grasp_budget: int = 2, max_observations: int = 3,
                   budget: TaskBudget | None = None) -> Task:
    """The running example as a :class:`Task` (pure configuration; nothing runs)."""
    return Task(
        "fetch_cup",
        [
            Phase("navigate", _navigate_tree, transitions=[
                on("succeeded", "pick"), on("failed", "aborted_navigation"),
                on("unknown", "aborted_unknown"),
                on("budget_exhausted", "aborted_budget_exhausted")]),
            Parallel("pick", [
                Phase("grasp", lambda: _pick_tree(pick_attempts),
                      transitions=[on("succeeded", "deliver")]),
                Phase("watch", _monitor_tree, description="fails if the cup disappears"),
            ], transitions=[on("budget_exhausted", "aborted_budget_exhausted"),
                            on("unknown", "aborted_unknown"), on("failed", "aborted_pick")]),
            Compound("deliver", [
                Phase("evaluate", lambda: _evaluate_tree(grasp_budget, max_observations),
                      transitions=[on("succeeded", "place"),
                                   on("failed", "aborted_grasp_failed")]),
                Phase("place", _place_tree, transitions=[on("succeeded", "placed")]),
                Final("placed"),
            ], transitions=[on("done", "done"),
                            on("budget_exhausted", "aborted_budget_exhausted"),
                            on("unknown", "aborted_unknown"), on("failed", "aborted_place")]),
            Final("done"),
            Final("aborted_navigation"),
            Final("aborted_pick"),
            Final("aborted_grasp_failed"),
            Final("aborted_place"),
            Final("aborted_unknown"),
            Final("aborted_budget_exhausted"),
        ],
        budget=budget or TaskBudget(max_retries=6, max_time_s=60.0),
        description="navigate -> pick (observe, align, approach, close) -> evaluate -> place",
    )


def _occluded_grasp(scene: FakeScene, cmd: Command) -> None:
    grasp_effect(scene, cmd)
    scene.occlude("cup", 0.2)


def _scenario(name: str, clock: Clock) -> tuple[FakeRuntime, dict[str, Any]]:
    if name == "clean":
        return example_runtime(clock), {}
    if name == "slip":
        return example_runtime(clock, grasps=[Script(effect=slip_effect),
                                              Script(effect=grasp_effect)]), {}
    if name == "occlusion":
        rt = example_runtime(clock, grasps=[Script(effect=_occluded_grasp)])
        rt.at(1.12, lambda scene: scene.reveal("cup"))
        return rt, {}
    if name == "no-stop":
        rt = example_runtime(clock, confirm_stops=False, grasps=[Script(outcome="hang")])
        return rt, {"budget": TaskBudget(max_retries=6, max_time_s=5.0)}
    if name == "duplicates":
        rt = example_runtime(clock)
        rt.duplicate(event="started", times=10)
        rt.duplicate(event="control_done", times=10)
        rt.delay(event="progress", by_s=0.5, times=2)
        return rt, {}
    if name == "budget":
        return example_runtime(clock, grasps=[Script(outcome="aborted", reason="IK_FAILED")]), {}
    raise DefinitionError("UNKNOWN_SCENARIO", f"unknown scenario {name!r}; known: "
                          f"{', '.join(SCENARIOS)}{did_you_mean(name, SCENARIOS)}")


#: The scenarios :func:`run_example` knows (the acceptance scenarios of the orchestration core).
SCENARIOS = ("clean", "slip", "occlusion", "no-stop", "duplicates", "budget")


def run_example(scenario: str = "clean", *, trace: str | None = None,
                tick_period_s: float = 0.05) -> Any:
    """Run the running example under one of :data:`SCENARIOS` on a FakeClock; returns the
    finished :class:`~harness_bt.TaskRunner`."""
    clock = FakeClock()
    rt, task_kw = _scenario(scenario, clock)
    runner = TaskRunner(fetch_cup_task(**task_kw), bridge=rt, clock=clock,
                        skills=example_skills(), run_id="example", trace=trace,
                        settings=RunnerSettings(tick_period_s=tick_period_s))
    runner.run(max_ticks=2_000)
    runner.close()
    return runner
