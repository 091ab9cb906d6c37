"""Episodes run over tasks x seeds; rollover happens inside step; the final answer carries
{task: mean success}; /reset abandons an episode without a result, as upstream."""

from __future__ import annotations

from collections.abc import Callable

from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.episodes import EpisodeBook
from runtime_bridge.sim.faults import FaultRates

HOLD = {"control_type": "joint_position", "action": [0.0] * 7 + [0.04, 0.04]}


def test_episodes_roll_over_inside_step_and_end_with_the_final_metric(
        make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube", "pick_and_place"), episodes=2, num_steps=3)
    seen = [(env.reset()["obs"]["timestep"], env.task.name, env.episode.seed)]
    while True:
        result = env.step(HOLD)
        if result["obs"] is None:
            break
        assert result["metric"] is None
        seen.append((result["obs"]["timestep"], env.task.name, env.episode.seed))
    starts = [(task, seed) for t, task, seed in seen if t == 0]
    assert starts == [("pick_cube", 0), ("pick_cube", 1), ("pick_and_place", 0),
                      ("pick_and_place", 1)]
    assert [t for t, _, _ in seen] == [0, 1, 2] * 4
    assert result == {"obs": None, "metric": {"pick_cube": 0.0, "pick_and_place": 0.0},
                      "episode_ended": "timeout"}  # how the last episode ended
    # a finished worker keeps answering with the metric (no episode ends in those steps)
    assert env.step(HOLD) == {"obs": None, "metric": result["metric"]}
    assert [e["ended"] for e in env.results()["episodes"]] == ["timeout"] * 4


def test_the_first_observation_of_each_episode_says_reset(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), episodes=2, num_steps=2)
    assert env.reset()["obs"]["reset"] is True
    assert env.step(HOLD)["obs"]["reset"] is False
    rolled = env.step(HOLD)["obs"]
    assert rolled["reset"] is True and rolled["timestep"] == 0


def test_reset_mid_episode_skips_it_without_a_result(make_env: Callable[..., SimEnv]) -> None:
    env = make_env(scenes=("pick_cube",), episodes=3, num_steps=50)
    env.reset()
    env.step(HOLD)
    assert env.reset()["obs"]["timestep"] == 0
    assert env.episode.seed == 1
    results = env.results()
    assert results["episodes"] == [] and results["skipped"][0]["seed"] == 0


def test_layouts_are_deterministic_per_seed(make_env: Callable[..., SimEnv]) -> None:
    a = make_env(scenes=("pick_and_place",), seed=7)
    b = make_env(scenes=("pick_and_place",), seed=7)
    a.reset()
    b.reset()
    assert a.ground_truth()["objects"] == b.ground_truth()["objects"]


def test_an_episode_depends_on_its_seed_alone(make_env: Callable[..., SimEnv]) -> None:
    """The third episode from seed 5 is the first from seed 7: any episode replays from its
    seed (``--seed S --episodes 1``), whatever its place in the queue."""
    many = make_env(scenes=("pick_and_place",), seed=5, episodes=3, faults=FaultRates(nudge=1.0))
    for _ in range(3):
        many.reset()
    one = make_env(scenes=("pick_and_place",), seed=7, faults=FaultRates(nudge=1.0))
    one.reset()
    assert many.episode.seed == one.episode.seed == 7
    assert many.ground_truth()["objects"] == one.ground_truth()["objects"]
    assert many.faults.rng.random() == one.faults.rng.random()  # the same faults to come


def test_the_book_averages_success_per_task() -> None:
    book = EpisodeBook(("a", "b"), 2)
    for task, success in [("a", 1.0), ("a", 0.0), ("b", 1.0)]:
        book.record({"task": task, "success": success})
    assert book.final_metric() == {"a": 0.5, "b": 1.0}
