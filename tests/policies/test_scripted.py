"""The scripted pick policy: the prompt names the target, requests are checked, sessions draw
their imperfections from (seed, session) alone; and, driving the built-in simulator in a
closed loop from its cameras, it picks each cube, opens a closed gripper first, and with
misgrasp_rate 1 fails while still saying done."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from harness_bt.errors import CommandError, DefinitionError
from harness_bt.policy.client import PolicyClient
from policies.registry import (
    ACTION_FORMAT,
    PolicyKind,
    PolicySettings,
    policy_metadata,
    policy_registry,
)
from policies.request import parse_request
from policies.scripted import (
    PICK,
    PickFactory,
    PickPolicy,
    draw_key,
    session_rng,
    target_of,
)
from policies.server import PolicyServer
from policies.spec import observation_spec
from tests.policies.simloop import pick_env, run_pick, sim_action

OBJECTS = {"red_cube": "red cube", "green_cube": "green cube", "blue_cube": "blue cube",
           "lego": "LEGO brick"}
DOWN = [0.0, 1.0, 0.0, 0.0]  # the hand pointing down (w, x, y, z)


def blank(width: float = 0.08, *, session: str | None = "s", prompt: str = "pick up the red "
          "cube", **extra: Any) -> dict[str, Any]:
    """A well-formed request whose one camera sees nothing."""
    out: dict[str, Any] = {
        "observation/image/front": np.zeros((12, 16, 3), dtype=np.uint8),
        "observation/depth/front": np.ones((12, 16), dtype=np.float32),
        "observation/intrinsics/front": np.array([[10.0, 0, 8], [0, 10.0, 6], [0, 0, 1]]),
        "observation/camera_pose/front": np.array([1.0, 0, 0.5, *DOWN]),
        "observation/state": np.array([0.4, 0.0, 0.3, *DOWN, width], dtype=np.float32),
        "observation/joint_position": np.zeros(9, dtype=np.float32),
        "prompt": prompt,
    }
    if session is not None:
        out["session"] = session
    out.update(extra)
    return out


def pick(**settings: Any) -> PickPolicy:
    return PICK.build(PolicySettings(**settings))()  # type: ignore[return-value]


# ---------------------------------------------------------------------- prompts and requests

@pytest.mark.parametrize(("prompt", "target"), [
    ("pick up the green cube", "green_cube"),
    ("Pick up the RED cube, please.", "red_cube"),
    ("grasp blue_cube", "blue_cube"),
    ("lift the lego brick", "lego"),
])
def test_the_prompt_names_the_target(prompt: str, target: str) -> None:
    assert target_of(prompt, OBJECTS) == target


def test_an_unknown_object_is_refused_with_the_known_ones_and_a_near_name() -> None:
    with pytest.raises(CommandError, match=r"POLICY_UNKNOWN_OBJECT: the prompt 'pick up the "
                       r"gren cube' names no object this policy knows; known: LEGO brick, blue "
                       r"cube, green cube, red cube; did you mean 'green cube'\?"):
        target_of("pick up the gren cube", OBJECTS)
    with pytest.raises(CommandError, match="names no object this policy knows; known: LEGO "
                       "brick, blue cube, green cube, red cube; name one object"):
        target_of("pick up the purple banana", OBJECTS)


def test_a_prompt_naming_two_objects_is_refused() -> None:
    with pytest.raises(CommandError, match=r"POLICY_AMBIGUOUS_PROMPT: .* names several objects "
                       r"\(red cube, blue cube\)"):
        target_of("pick up the red cube and put it on the blue cube", OBJECTS)


def test_a_request_rebuilds_the_observation_the_perception_reads() -> None:
    request = parse_request(blank(0.05), timestep=3, reset=True)
    frame = request.observation.cameras["front"]
    assert frame.rgb is not None and frame.rgb.shape == (12, 16, 3)
    assert frame.depth is not None and frame.depth.dtype == np.float32
    assert frame.position.tolist() == [1.0, 0.0, 0.5]
    assert frame.quaternion_wxyz.tolist() == DOWN
    assert request.observation.ee_pose.position.tolist() == pytest.approx([0.4, 0.0, 0.3])
    assert (request.observation.timestep, request.observation.reset) == (3, True)
    assert request.gripper_width == pytest.approx(0.05)
    assert (request.prompt, request.session) == ("pick up the red cube", "s")


def test_a_malformed_request_is_refused_with_every_problem_at_once() -> None:
    bad = blank(**{"observation/state": np.zeros(7, dtype=np.float32),
                   "observation/image/front": np.zeros((12, 16, 3), dtype=np.float32),
                   "prompt": ""})
    del bad["observation/camera_pose/front"]
    with pytest.raises(CommandError) as refused:
        parse_request(bad)
    assert refused.value.code == "POLICY_BAD_OBSERVATION"
    assert refused.value.details["problems"] == [
        "observation/state has shape [7], not 8",
        "prompt is '', not a text such as 'pick up the red cube'",
        "observation/image/front has dtype float32, not uint8",
        "camera 'front' has no observation/camera_pose/front",
    ]
    assert "observation_spec; see docs/policies.md" in str(refused.value)


def test_a_request_without_cameras_is_refused() -> None:
    request = {k: v for k, v in blank().items() if "front" not in k}
    with pytest.raises(CommandError, match="no camera: no observation/image/NAME"):
        parse_request(request)


# ---------------------------------------------------------------------- sessions

def test_a_session_opens_a_closed_gripper_first_and_looks_once_it_is_open() -> None:
    policy = pick()
    reply = policy.infer(blank(0.0))
    assert reply["stage"] == "open" and reply["done"] is False
    assert reply["actions"].dtype == np.float32
    assert reply["actions"].tolist() == [[0.0] * 7] * 4
    reply = policy.infer(blank(0.08))
    assert reply["stage"] == "locate" and reply["actions"].tolist() == [[0.0] * 7]


def test_a_target_never_seen_ends_the_session_with_an_error() -> None:
    policy = pick()
    for _ in range(30):
        assert policy.infer(blank())["stage"] == "locate"
    with pytest.raises(CommandError, match=r"POLICY_TARGET_NOT_SEEN: the red cube was not seen "
                       r"in 31 requests \(cameras: front\)"):
        policy.infer(blank())


def test_sessions_are_kept_apart_by_session_id_or_else_by_connection() -> None:
    factory = PICK.build(PolicySettings())
    first, second = factory(), factory()
    first.infer(blank(0.0, session="a"))
    first.infer(blank(0.08, session="b"))
    assert {k: str(s.stage) for k, s in first.sessions.items()} == {"a": "open", "b": "locate"}
    first.infer(blank(0.0, session=None))
    second.infer(blank(0.0, session=None))
    assert "connection-1" in first.sessions and list(second.sessions) == ["connection-2"]  # type: ignore[attr-defined]


def misgrasps(settings: PolicySettings, sessions: int = 40) -> list[bool]:
    policy: Any = PICK.build(settings)()
    for k in range(sessions):
        policy.infer(blank(session=f"episode-{k}"))
    return [policy.sessions[f"episode-{k}"].misgrasp for k in range(sessions)]


def test_a_sessions_imperfections_come_from_the_seed_and_the_session_alone() -> None:
    half = misgrasps(PolicySettings(misgrasp_rate=0.45, seed=7))
    assert half == misgrasps(PolicySettings(misgrasp_rate=0.45, seed=7))
    assert half != misgrasps(PolicySettings(misgrasp_rate=0.45, seed=8))
    assert 8 <= sum(half) <= 32
    more = misgrasps(PolicySettings(misgrasp_rate=0.7, seed=7))
    assert all(m for h, m in zip(half, more, strict=True) if h)  # common random numbers
    assert not any(misgrasps(PolicySettings(misgrasp_rate=0.0, seed=7)))
    assert all(misgrasps(PolicySettings(misgrasp_rate=1.0, seed=7)))
    a = session_rng(3, "episode-1").normal(size=3)
    assert a.tolist() == session_rng(3, "episode-1").normal(size=3).tolist()
    assert a.tolist() != session_rng(3, "episode-2").normal(size=3).tolist()


def test_pose_noise_is_drawn_once_per_session_at_the_set_scale() -> None:
    policy: Any = PICK.build(PolicySettings(pose_noise_m=0.01, seed=1))()
    for k in range(200):
        policy.infer(blank(session=f"s{k}"))
    noise = np.array([s.noise_xy for s in policy.sessions.values()])
    assert len(noise) == 64  # the oldest sessions are forgotten
    assert 0.006 < float(noise.std()) < 0.014
    quiet: Any = pick()
    quiet.infer(blank())
    assert quiet.sessions["s"].noise_xy.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(("settings", "message"), [
    ({"misgrasp_rate": 1.5}, "misgrasp_rate=1.5 is not a probability"),
    ({"misgrasp_rate": float("nan")}, "misgrasp_rate=nan is not a probability"),
    ({"pose_noise_m": -0.01}, r"pose_noise_m=-0.01 is not a standard deviation in 0..0.1 m"),
    ({"seed": -1}, "seed=-1 is not a non-negative integer"),
])
def test_bad_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        PolicySettings(**settings)


# ---------------------------------------------------------------------- the plug-in

def test_pick_is_installed_and_describes_itself_in_its_metadata() -> None:
    registry = policy_registry(entry_points=True)
    assert registry.get("pick") is PICK
    settings = PolicySettings(misgrasp_rate=0.3, pose_noise_m=0.002, seed=5)
    factory = PICK.build(settings)
    assert policy_metadata("pick", PICK, settings, factory) == {
        "policy": "pick", "description": PICK.description, "server": "harness-bt",
        "action_format": ACTION_FORMAT,
        "settings": {"misgrasp_rate": 0.3, "pose_noise_m": 0.002, "seed": 5},
        "observation_spec": observation_spec(depth_required=True,
                                             objects=factory.objects.values())}
    with pytest.raises(DefinitionError, match=r"unknown policy 'pik'; known: pick; did you "
                       r"mean 'pick'\?"):
        registry.get("pik")


def test_a_policy_plugin_must_be_a_policy_kind() -> None:
    registry = policy_registry(entry_points=False)
    with pytest.raises(DefinitionError, match=r"policy 'wave' is a function, not a "
                       r"policies\.registry\.PolicyKind"):
        registry.register("wave", lambda: None)  # type: ignore[arg-type]
    registry.register("pick", PICK)
    with pytest.raises(DefinitionError, match="DUPLICATE_REGISTRATION"):
        registry.register("pick", PolicyKind("another", PICK.build))


# ---------------------------------------------------------------------- in the simulator

@pytest.fixture
def served() -> Iterator[str]:
    """The pick policy (no imperfection) behind the real wire."""
    server = PolicyServer(PickFactory(PolicySettings()),
                          metadata=policy_metadata("pick", PICK, PolicySettings()))
    server.start()
    yield server.url
    server.stop()


@pytest.mark.parametrize("target", ["red_cube", "green_cube", "blue_cube"])
def test_pick_lifts_each_cube_from_the_cameras_through_the_server(served: str,
                                                                  target: str) -> None:
    with PolicyClient(served) as client, pick_env(target, seed=2) as env:
        assert client.metadata["policy"] == "pick"
        outcome = run_pick(client.infer, env, session=f"{target}-1")
    assert outcome.stages == ["above", "descend", "close", "lift", "done"]
    assert (outcome.done, outcome.success) == (True, True)


def test_a_gripper_closed_at_the_start_is_opened_before_the_pick(served: str) -> None:
    with PolicyClient(served) as client, pick_env("green_cube", seed=3) as env:
        entry = env.reset()
        for _ in range(15):
            entry = env.step(sim_action(np.array([0.0] * 6 + [1.0])))
        width = entry["obs"]["joint_position_state"][7:].sum()
        assert width < 0.01
        outcome = run_pick(client.infer, env, first=entry)
    assert outcome.stages == ["open", "above", "descend", "close", "lift", "done"]
    assert outcome.success


def test_with_misgrasp_rate_one_the_grasp_fails_and_the_policy_says_done_anyway() -> None:
    policy = pick(misgrasp_rate=1.0)
    with pick_env("blue_cube", seed=2) as env:
        outcome = run_pick(policy.infer, env, session="frozen")
        held = env.ground_truth()["held"]
    assert outcome.stages == ["above", "descend", "close", "lift", "done"]
    assert (outcome.done, outcome.success, held) == (True, False, [])


@pytest.mark.parametrize("rows", [1, 10])
def test_any_number_of_rows_run_per_chunk_reaches_the_same_result(rows: int) -> None:
    """Each chunk is planned from the state it is sent: an executor that runs one row of each
    chunk, or all of them, picks as well (here with 3 mm of perception noise)."""
    policy = pick(pose_noise_m=0.003)
    with pick_env("red_cube", seed=5) as env:
        outcome = run_pick(policy.infer, env, session="s", rows_per_request=rows,
                           max_requests=400)
    assert outcome.stages == ["above", "descend", "close", "lift", "done"]
    assert (outcome.done, outcome.success) == (True, True)


def test_a_run_draws_the_same_for_the_same_episode_whatever_its_random_run_id() -> None:
    seen = parse_request(blank())
    other = parse_request(blank(**{"observation/image/front": np.full((12, 16, 3), 9, np.uint8)}))
    one = draw_key("1f2e3d4c-ep0/run.1/policy/policy.act#1", seen)
    assert one == draw_key("99aa88bb-ep0/run.1/policy/policy.act#1", seen)  # another run
    assert one != draw_key("99aa88bb-ep0/run.1/policy/policy.act#2", seen)  # another attempt
    assert one != draw_key("1f2e3d4c-ep0/run.1/policy/policy.act#1", other)  # another layout
    assert draw_key("episode-1", seen).startswith("episode-1|")  # a foreign client's own id
