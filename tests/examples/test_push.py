"""The harness-push example package: its entry points reach every registry, its contract
refuses what cannot be pushed, its executor plans the push from the observation, its
evaluator judges from observations only, and its task runs on the built-in simulator."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness_bt.ledger import Command, Verdict
from harness_bt.runtime.observation import EePose, Observation
from harness_bt.skill import Postcondition, validate_params
from harness_bt.world import ObjectUpdate, Pose, WorldModel, WorldView
from skills.geometry import DOWN, HOME_JOINTS


@pytest.fixture(autouse=True)
def installed(push_package: Path) -> Path:
    return push_package


def world(t: int = 5, confidence: float = 1.0, at: tuple[float, float, float] = (
        0.5, 0.0, 0.02)) -> WorldView:
    w = WorldModel()
    w.update([ObjectUpdate("red_cube", Pose(at), extent=(0.04, 0.04, 0.04),
                           confidence=confidence, camera="front")], now=1.0, timestep=t)
    return w.view(1.0)


def obs(tcp: tuple[float, float, float] = (0.45, 0.0, 0.3), gap: float = 0.08,
        t: int = 5) -> Observation:
    joints = np.array([*HOME_JOINTS, gap / 2, gap / 2])
    return Observation({}, joints, (EePose(np.array(tcp), DOWN.copy()),), "", t, False)


PARAMS: dict[str, Any] = {"object_id": "red_cube", "object_pose": [0.5, 0.0, 0.02],
                          "goal": [0.6, 0.0, 0.02]}


def command(params: dict[str, Any]) -> Command:
    return Command(command_id="c1", task_id="t", robot_id="r", skill="push", params=params,
                   start_within_ms=1000, execution_timeout_ms=15000)


def test_every_registry_finds_the_package_through_its_entry_points() -> None:
    from harness_bt.evaluation import EvaluatorRegistry
    from harness_bt.runtime.executor import ExecutorRegistry
    from harness_bt.scene import scene_registry
    from harness_bt.skill import SkillRegistry

    skills = SkillRegistry(entry_points=True)
    assert "push" in skills and skills.origin("push").package == "harness-push"
    assert "pushed_to" in EvaluatorRegistry(entry_points=True)
    assert "push" in ExecutorRegistry(entry_points=True)
    assert "push_cube" in scene_registry(entry_points=True)


def test_the_task_validates_and_names_the_package_scene(push_package: Path) -> None:
    from harness_bt.authoring import check_file, load_task

    path = push_package / "tasks" / "push_cube.yaml"
    assert check_file(path).report.problems == []
    task = load_task(path)
    assert task.scene == "push_cube"


def test_the_contract_refuses_a_push_too_long_and_an_unknown_object() -> None:
    from harness_push import PUSH

    params, problems = validate_params(PUSH, {**PARAMS, "goal": [0.9, 0.0]})
    assert problems == [] and params is not None
    codes = {v.code for v in PUSH.check(params, world())}
    assert "PUSH_TOO_LONG" in codes
    params, _ = validate_params(PUSH, {**PARAMS, "object_id": "blue_cube"})
    assert params is not None
    assert [v.code for v in PUSH.check(params, world())] == ["UNKNOWN_OBJECT"]
    _, problems = validate_params(PUSH, {**PARAMS, "speed_mps": 2.0})
    assert [p.field for p in problems] == ["params.speed_mps"]


def test_a_push_asks_the_evaluator_for_the_goal_within_the_tolerance() -> None:
    from harness_push import PUSH

    params, _ = validate_params(PUSH, PARAMS)
    assert params is not None
    assert [p.to_dict() for p in PUSH.postconditions(params)] == [
        {"evaluator": "pushed_to", "params": {"object_id": "red_cube", "goal": [0.6, 0.0],
                                              "tolerance_m": 0.02}}]


def test_the_executor_sets_the_fingers_goes_behind_the_object_and_pushes_to_the_goal() -> None:
    from harness_push import PushExecutor

    executor = PushExecutor(command(PARAMS))
    segments = executor.plan(obs())
    assert [s.name for s in segments] == ["fingers", "over", "down", "push", "settle",
                                          "back off", "up"]
    down, push = segments[2], segments[3]
    assert np.allclose(down.goal, [0.5 - 0.025 - 0.03, 0.0, 0.02])  # behind, at the centre
    assert np.allclose(push.goal, [0.6 - 0.025, 0.0, 0.02])  # the near face at the goal
    assert math.isclose(push.step_m, 0.06 / 30)


def test_a_push_already_at_its_goal_plans_nothing() -> None:
    from harness_push import PushExecutor

    assert PushExecutor(command({**PARAMS, "goal": [0.505, 0.0]})).plan(obs()) == []


GOAL = Postcondition("pushed_to", {"object_id": "red_cube", "goal": [0.6, 0.0],
                                   "tolerance_m": 0.02})


@pytest.mark.parametrize(("label", "view", "observation", "verdict", "says"), [
    ("at the goal, hand clear", world(at=(0.59, 0.005, 0.02)), obs(), Verdict.SUCCEEDED,
     "pushed to the goal"),
    ("short of the goal", world(at=(0.55, 0.0, 0.02)), obs(), Verdict.FAILED,
     "0.050 m from the goal"),
    ("the hand still on it", world(at=(0.6, 0.0, 0.02)), obs(tcp=(0.57, 0.0, 0.02)),
     Verdict.FAILED, "the hand is still on the object"),
    ("not seen in this observation", world(t=4, at=(0.6, 0.0, 0.02)), obs(), Verdict.UNKNOWN,
     "not seen at t=5"),
    ("seen with little confidence", world(confidence=0.2, at=(0.6, 0.0, 0.02)), obs(),
     Verdict.UNKNOWN, "confidence 0.20 < 0.50"),
])
def test_the_evaluator_judges_from_the_observation(label: str, view: WorldView,
                                                   observation: Observation, verdict: Verdict,
                                                   says: str) -> None:
    from harness_push import pushed_to

    result = pushed_to(GOAL, observation, view)
    assert result.verdict is verdict, label
    assert says in " ".join(result.evidence), label


def test_harness_skills_describes_push_with_its_package(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    import json

    from harness_bt.cli import main

    assert main(["skills", "push", "--json"]) == 0
    push = json.loads(capsys.readouterr().out)
    assert push["source"]["package"] == "harness-push"
    assert push["executor"]["origin"] == "entry point harness_push.executor:PushExecutor"
    assert push["evaluators"] == ["pushed_to"]
    assert main(["evaluators", "pushed_to", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["used_by"] == ["push"]


@pytest.mark.slow
def test_the_task_pushes_the_cube_on_the_built_in_simulator(push_package: Path) -> None:
    from harness_bt.authoring import load_task
    from harness_bt.authoring.scenes import with_scene
    from harness_bt.run.episodes import run_episodes
    from harness_bt.runtime.episodes import RunOptions
    from runtime_bridge.inproc import open_runtime

    task = load_task(push_package / "tasks" / "push_cube.yaml")
    options = with_scene(RunOptions(task=task.name, scene=task.scene, params=task.params,
                                    episodes=1, seed=1))
    runtime = open_runtime(options)
    try:
        report = run_episodes(task, options, runtime=runtime)
    finally:
        runtime.close()
    (episode,) = report.episodes
    assert (episode.outcome, episode.reason, episode.sim_success) == ("succeeded", "done",
                                                                      True)
    assert episode.phases_visited[:2] == ("observe", "push")


def test_the_excerpts_docs_extending_quotes_are_in_the_package() -> None:
    """A block of docs/extending.md marked as an excerpt of a file is that file's text."""
    import re

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "extending.md").read_text(encoding="utf-8")
    found = re.findall(r"<!-- not run: an excerpt of (\S+) -->\n```\w*\n(.*?)^```", page,
                       re.S | re.M)
    assert len(found) >= 3
    stale = [path for path, text in found if text not in (root / path).read_text()]
    assert stale == []
