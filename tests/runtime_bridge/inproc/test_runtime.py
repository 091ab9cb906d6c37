"""The in-process runtime: one simulator step per poll, executor lifecycle as command events,
episodes that the simulator ends (rollover, timeout, success, the final metric), over the
built-in simulator in-process and over a GenManip server through real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.ledger import Command
from harness_bt.runtime.bridge import PollResult
from harness_bt.runtime.episodes import EpisodeRuntime, RunOptions
from harness_bt.runtime.settings import RuntimeSettings
from runtime_bridge.genmanip import GenManipBackend, ServerThread
from runtime_bridge.inproc import InProcRuntime, open_runtime
from runtime_bridge.inproc.runtime import SETTLE_STEPS
from runtime_bridge.sim import SimBackend, SimConfig, create_sim_app
from skills.executors import executor_registry


def command(cid: str, skill: str, **params: Any) -> Command:
    return Command(command_id=cid, skill=skill, params=params, resources=("arm",),
                   start_within_ms=1000, execution_timeout_ms=30_000)


def sim_runtime(**config: Any) -> InProcRuntime:
    cfg = {"scenes": ("pick_cube",), "cameras": (), "seed": 0, **config}
    return InProcRuntime(SimBackend(SimConfig(**cfg)), executor_registry())


@pytest.fixture
def runtime() -> Iterator[InProcRuntime]:
    rt = sim_runtime(num_steps=40, episodes=2)
    yield rt
    rt.close()


def kinds(result: PollResult) -> list[str]:
    return [str(e.kind) for e in result.events]


def test_it_is_an_episode_runtime_whose_clock_is_the_simulation(runtime: InProcRuntime) -> None:
    assert isinstance(runtime, EpisodeRuntime)
    assert runtime.control_period_s == pytest.approx(1 / 30)
    assert runtime.clock.monotonic() == 0.0


def test_the_first_poll_delivers_the_reset_observation_then_each_poll_steps_once(
        runtime: InProcRuntime) -> None:
    start = runtime.start_episode()
    assert start is not None and start.index == 0 and start.instruction == "pick up the red cube"
    first = runtime.poll()
    assert [(o.timestep, o.reset) for o in first.observations] == [(0, True)]
    assert [o.timestep for _ in range(3) for o in runtime.poll().observations] == [1, 2, 3]
    assert runtime.steps == 3


def test_executor_lifecycle_arrives_as_command_events(runtime: InProcRuntime) -> None:
    runtime.start_episode()
    runtime.poll()
    ack = runtime.dispatch(command("m", "move_ee_to", target=[0.45, 0.0, 0.35]))
    assert ack.accepted
    seen: list[str] = []
    for _ in range(30):
        seen += kinds(runtime.poll())
        if seen and seen[-1] == "control_done":
            break
    assert seen[0] == "started" and "progress" in seen and seen[-1] == "control_done"
    assert runtime.query("m").state.value == "CONTROL_DONE"
    assert runtime.dispatch(command("m", "move_ee_to", target=[0.45, 0.0, 0.35])).duplicate


def test_an_episode_that_times_out_ends_its_commands_and_rolls_over(
        runtime: InProcRuntime) -> None:
    runtime.start_episode()
    runtime.poll()
    runtime.dispatch(command("w", "move_ee_to", target=[0.6, 0.2, 0.2], speed_mps=0.01))
    events, notices = [], []
    while not runtime.episode_over:
        res = runtime.poll()
        events += res.events
        notices += res.notices
    res = runtime.poll()
    events += res.events
    assert (str(events[-1].kind), events[-1].reason.split(":")[0]) == ("aborted", "EPISODE_ENDED")
    ended = [n for n in notices if n.kind == "episode_ended"]
    assert ended and ended[0].data["ended_by"] == "timeout" and ended[0].data["steps"] == 40
    assert not res.observations  # the next episode's first observation is kept for later
    end = runtime.finish_episode()
    assert (end.ended_by, end.sim_success, end.steps) == ("timeout", False, 40)
    nxt = runtime.start_episode()
    assert nxt is not None and nxt.index == 1
    assert [(o.timestep, o.reset) for o in runtime.poll().observations] == [(0, True)]


def test_after_the_last_episode_the_final_metric_arrives(runtime: InProcRuntime) -> None:
    for _ in (0, 1):
        assert runtime.start_episode() is not None
        runtime.poll()
        end = runtime.finish_episode()  # nothing holds the success condition: ended at once
        assert (end.ended_by, end.sim_success, end.hold_steps) == (
            "task_ended", False, SETTLE_STEPS)
    assert end.metric == {"pick_cube": 0.0}
    assert runtime.final_metric() == {"pick_cube": 0.0}
    assert runtime.start_episode() is None


def test_holding_cut_short_leaves_the_episode_unjudged_and_the_next_reset_skips_it(
        runtime: InProcRuntime) -> None:
    runtime.start_episode()
    end = runtime.finish_episode(max_hold_steps=5)
    assert (end.ended_by, end.sim_success, end.hold_steps) == ("not_ended", None, 5)
    assert runtime.start_episode() is not None
    assert runtime.backend.env.results()["skipped"][0]["index"] == 0  # type: ignore[attr-defined]


def pick_up(rt: InProcRuntime) -> None:
    """Start an episode and pick the red cube up (approach, grasp, lift 10 cm), stopping
    early when the simulator ends the episode."""
    rt.start_episode()
    rt.poll()
    truth = rt.backend.env.ground_truth()["objects"]["red_cube"]  # type: ignore[attr-defined]
    pose = truth["position"] + truth["quaternion_wxyz"]
    for cid, skill, params in (("a", "approach", {}), ("g", "grasp", {}),
                               ("l", "lift", {"height_m": 0.1})):
        rt.dispatch(Command(command_id=cid, skill=skill,
                            params={"object_id": "red_cube", "object_pose": pose, **params},
                            start_within_ms=1000, execution_timeout_ms=30_000))
        while "control_done" not in kinds(rt.poll()) and not rt.episode_over:
            pass


def test_a_real_pick_ends_the_episode_early_which_is_the_simulators_success() -> None:
    rt = sim_runtime(num_steps=400, success_hold_steps=10)
    try:
        pick_up(rt)
        assert rt.episode_over  # held 10 steps during the lift: the simulator ended it
        rt.poll()
        assert rt.query("l").reason.startswith("EPISODE_ENDED")
        end = rt.finish_episode()
        assert (end.ended_by, end.sim_success) == ("success", True)
        assert rt.backend.env.results()["episodes"][0]["success"] == 1.0  # type: ignore[attr-defined]
    finally:
        rt.close()


def test_a_success_when_the_steps_run_out_is_read_as_the_simulator_recorded_it() -> None:
    """The hold (150 steps) cannot complete before num_steps: the simulator judges the last
    step by the scene's own hold, and the runtime reads its record, not the step count."""
    rt = sim_runtime(num_steps=140, success_hold_steps=150)
    try:
        pick_up(rt)
        end = rt.finish_episode()
        assert (end.ended_by, end.sim_success, end.steps) == ("success", True, 140)
        [record] = rt.backend.env.results()["episodes"]  # type: ignore[attr-defined]
        assert record["success"] == 1.0 and record["steps"] == 140
    finally:
        rt.close()


def test_while_the_success_condition_holds_the_episode_is_held_until_it_succeeds() -> None:
    rt = sim_runtime(num_steps=400, success_hold_steps=60)
    try:
        pick_up(rt)
        assert not rt.episode_over  # the hold (60 steps) has not completed during the lift
        streak = rt.backend.env.progress.streak  # type: ignore[attr-defined]
        assert 0 < streak < 60 - SETTLE_STEPS  # the task ended with the cube held up
        end = rt.finish_episode()
        assert (end.ended_by, end.sim_success) == ("success", True)
        assert end.hold_steps == 60 - streak  # held until the condition had held long enough
    finally:
        rt.close()


def test_a_task_that_aborts_early_ends_its_episode_near_its_end_not_at_num_steps(
        tmp_path: Path) -> None:
    from harness_bt.authoring import load_task
    from harness_bt.authoring.scenes import with_scene
    from harness_bt.run.episodes import run_episodes

    task_file = tmp_path / "give_up.yaml"
    task_file.write_text(GIVE_UP)
    task = load_task(task_file)
    report = run_episodes(task, with_scene(RunOptions(
        task=task.name, scene=task.scene, episodes=2, seed=0,
        runtime_settings=RuntimeSettings.from_mapping({"num_steps": 600}))))
    for episode in report.episodes:
        assert (episode.outcome, episode.reason) == ("aborted", "aborted_gave_up")
        assert (episode.sim_ended_by, episode.sim_success) == ("task_ended", False)
        task_steps = round(episode.sim_time_s * 30)  # the task's own time, in steps
        assert task_steps == 91  # 3 s of waiting, then the tick that ends it
        # the episode ends SETTLE_STEPS after the task, not at num_steps (600)
        assert episode.sim_steps == task_steps + SETTLE_STEPS + 1
        assert episode.details["sim"]["hold_steps"] == SETTLE_STEPS
    assert report.final_metric == {"pick_and_place": 0.0}


GIVE_UP = """\
name: give_up
version: "1"
description: wait 3 s for a flag nobody sets, then give up
scene: pick_and_place
blackboard: {flag: false}
initial: wait
phases:
  - id: wait
    description: a condition that never holds
    tree: {type: wait_for, name: never, when: "bb.flag", timeout_s: 3.0}
    transitions:
      - {event: succeeded, target: done}
      - {event: failed, target: aborted_gave_up}
  - {id: done, kind: final, reason: done}
  - {id: aborted_gave_up, kind: final}
"""


def test_a_genmanip_server_over_http_is_driven_the_same_way() -> None:
    app = create_sim_app(SimConfig(scenes=("pick_cube",), cameras=(), num_steps=25, episodes=2))
    with ServerThread(app) as server:
        backend = GenManipBackend(server.url)
        rt = InProcRuntime(backend, executor_registry())
        try:
            assert rt.start_episode() is not None
            assert backend.num_steps == 25  # from GET /harness/sim
            assert rt.poll().observations[0].reset
            rt.dispatch(command("m", "move_ee_to", target=[0.45, 0.0, 0.3]))
            assert kinds(rt.poll())[0] == "started"
            end = rt.finish_episode()
            assert (end.ended_by, end.steps) == ("timeout", 25)
            rt.start_episode()
            end = rt.finish_episode()
            assert end.metric == {"pick_cube": 0.0}
            assert rt.start_episode() is None
        finally:
            rt.close()


def test_open_runtime_builds_the_built_in_simulator_from_run_options() -> None:
    rt = open_runtime(RunOptions(task="pick_and_place", scene="pick_and_place", episodes=3,
                                 seed=5, faults={"slip": 0.5}, cameras=("front:64x48",)))
    try:
        config = rt.backend.config  # type: ignore[attr-defined]
        assert (config.scenes, config.episodes, config.seed, config.faults.slip) == \
            (("pick_and_place",), 3, 5, 0.5)
        assert config.success_hold_steps == 150 and config.cameras[0].width == 64
    finally:
        rt.close()


@pytest.mark.parametrize(("options", "message"), [
    (RunOptions(task="pick_cube", scene="pick_cube", faults={"wobble": 0.2}),
     "unknown fault(s) wobble; known: nudge, slip, occlude"),
    (RunOptions(task="pick_cube", scene="pick_cube", faults={"drop": 0.2}),
     "drop are faults of the HTTP transport"),
    (RunOptions(task="pick_cube", sim_url="http://127.0.0.1:9", faults={"slip": 0.2}),
     "--inject configures the built-in simulator"),
    (RunOptions(task="stack_cubes", scene="stack_cubes"), "unknown scene 'stack_cubes'"),
    (RunOptions(task="stack_cubes"), "NO_SCENE: task 'stack_cubes' names no scene"),
    (RunOptions(task="pick", scene="pick_cube", params={"target": "pink_cube"}),
     "scene parameter 'target' (set to 'pink_cube') is not an object of scene 'pick_cube'"),
])
def test_open_runtime_refuses_what_it_cannot_do(options: RunOptions, message: str) -> None:
    with pytest.raises(DefinitionError) as err:
        open_runtime(options).close()
    assert message in str(err.value)


def test_starting_an_episode_while_one_runs_is_refused(runtime: InProcRuntime) -> None:
    runtime.start_episode()
    with pytest.raises(BridgeError, match="EPISODE_OPEN"):
        runtime.start_episode()


@pytest.mark.slow
def test_a_run_on_a_scene_without_a_success_condition_is_not_judged(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The harness succeeds; the simulator judges nothing: no verdict, no false success, and
    the summary says '-' (JSON null)."""
    from harness_bt.cli import main

    trees = Path(__file__).resolve().parents[3] / "trees"
    code = main(["run", str(trees / "pick.yaml"), "--scene", "table", "--json",
                 "--camera", "front:256x192:fov=40"])
    report = json.loads(capsys.readouterr().out)
    (episode,) = report["episodes"]
    assert code == 0 and report["scene"] == "table"
    assert (episode["reason"], episode["sim_success"], episode["sim_ended_by"],
            episode["false_success"]) == ("done", None, "not_judged", False)
    assert report["sim_success_rate"] is None and report["false_success_count"] == 0


def test_a_server_that_judges_nothing_says_so() -> None:
    for scene, judged in (("table", False), ("pick_cube", True)):
        with ServerThread(create_sim_app(SimConfig(scenes=(scene,), cameras=()))) as running:
            backend = GenManipBackend(running.url)
            try:
                backend.reset()
                assert backend.judged is judged
                assert backend.sim_info is not None
                assert backend.sim_info["scenes"][scene]["judged"] is judged
            finally:
                backend.close()
