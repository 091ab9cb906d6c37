"""The in-process runtime's frames on demand: a frame when the harness looks (no command
running, or one just ended), every step for executors that read frames, at the watch rate
otherwise, none while an episode is held to its end; and end to end over the simulator."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest

from harness_bt.errors import DefinitionError
from harness_bt.ledger import CommandEvent, EventKind
from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from runtime_bridge.inproc import InProcRuntime
from runtime_bridge.inproc.frames import FramePolicy
from runtime_bridge.inproc.runtime import SETTLE_STEPS
from runtime_bridge.sim import SimBackend, SimConfig, parse_camera_spec
from skills.executors import executor_registry
from tests.runtime_bridge.inproc.test_runtime import command


class Source:
    """The simulator's frame requests, recorded."""

    names = ("front", "left")

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def request(self, cameras: Iterable[str] | None = None) -> None:
        self.requests.append(None if cameras is None else list(cameras))

    def next_in_turn(self, timestep: int) -> str | None:
        return self.names[timestep % 2]


class Blind:
    reads_frames = False


class Unsaid:
    """An executor that does not say whether it reads frames."""


def obs(timestep: int, cameras: Iterable[str] = ()) -> Observation:
    frames = {n: CameraFrame(None, None, np.eye(3), np.zeros(3), np.array([1.0, 0, 0, 0]))
              for n in cameras}
    return Observation(frames, np.zeros(9), (EePose(np.zeros(3), np.array([1.0, 0, 0, 0])),),
                       "", timestep, reset=False)


def event(kind: EventKind) -> CommandEvent:
    return CommandEvent(command_id="c", kind=kind, seq=1)


@pytest.fixture
def source() -> Source:
    return Source()


def policy(source: Source, rendered: list[set[str]], hz: float = 6.0) -> FramePolicy:
    def observe_now(cameras: set[str]) -> Observation:
        rendered.append(cameras)
        return obs(-1, cameras)

    return FramePolicy(source, observe_now, control_period_s=1 / 30, monitor_hz=hz)


def test_a_step_with_no_command_running_is_rendered_after_it_by_round_robins_camera(
        source: Source) -> None:
    rendered: list[set[str]] = []
    frames = policy(source, rendered)
    out = [frames.after_step(obs(t), (), {}) for t in (1, 2, 3)]
    assert rendered == [{"left"}, {"front"}, {"left"}]  # round_robin's camera at each step
    assert [sorted(o.cameras) for o in out] == [["left"], ["front"], ["left"]]
    assert frames.counts == {"before": 0, "after": 3, "none": 0}


def test_while_a_blind_command_runs_frames_come_at_the_watch_rate_and_on_its_end(
        source: Source) -> None:
    rendered: list[set[str]] = []
    frames = policy(source, rendered, hz=6.0)  # every 5 steps at 30 steps/s
    assert frames.period_steps == 5
    delivered = []
    for t in range(1, 11):
        frames.before_step([Blind()])
        asked = bool(source.requests)
        source.requests.clear()
        o = obs(t, ["front"] if asked else ())
        delivered.append(bool(frames.after_step(o, [event(EventKind.PROGRESS)], {"c": 1}).cameras))
    assert delivered == [False, False, False, False, True] * 2
    assert rendered == []
    ended = frames.after_step(obs(11), [event(EventKind.CONTROL_DONE)], {"d": 1})
    assert sorted(ended.cameras) == ["left"] and rendered == [{"left"}]


def test_an_executor_that_reads_frames_or_does_not_say_gets_a_frame_every_step(
        source: Source) -> None:
    frames = policy(source, [])
    for executors in ([Unsaid()], [Blind(), Unsaid()]):
        frames.before_step(executors)
        frames.after_step(obs(1, ["front"]), (), {"c": 1})
    frames.before_step([Blind()])
    assert source.requests == [None, None]


def test_nothing_is_rendered_while_an_episode_is_held_to_its_end(source: Source) -> None:
    rendered: list[set[str]] = []
    frames = policy(source, rendered, hz=30.0)
    frames.holding = True
    for t in range(5):
        frames.before_step([Unsaid()])
        assert not frames.after_step(obs(t), [event(EventKind.CONTROL_DONE)], {}).cameras
    assert (source.requests, rendered) == ([], [])
    assert frames.counts["none"] == 5


def test_a_reader_asking_a_higher_rate_raises_the_watch_rate_and_a_bad_rate_is_refused(
        source: Source) -> None:
    frames = policy(source, [], hz=2.0)
    assert frames.period_steps == 15
    frames.want("recording", 10.0)
    assert (frames.monitor_hz, frames.period_steps) == (10.0, 3)
    frames.want("console", 1.0)
    assert frames.period_steps == 3
    with pytest.raises(DefinitionError, match="recording rate_hz='fast' is not a positive"):
        frames.want("recording", "fast")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="monitor_hz=0 is not a positive number"):
        policy(source, [], hz=0)


def test_the_runtime_renders_for_the_harness_and_not_while_it_holds_the_episode() -> None:
    cams = (parse_camera_spec("front:32x24"), parse_camera_spec("top:32x24"))
    backend = SimBackend(SimConfig(scenes=("pick_cube",), cameras=cams, render="on_demand",
                                   num_steps=30, success_hold_steps=5))
    runtime = InProcRuntime(backend, executor_registry(), monitor_hz=10.0)
    try:
        runtime.start_episode()
        first = runtime.poll().observations[0]
        assert first.reset and sorted(first.cameras) == ["front", "top"]
        idle = [sorted(o.cameras) for _ in range(2) for o in runtime.poll().observations]
        assert idle == [["top"], ["front"]]  # nothing runs: the harness is looking
        end = runtime.finish_episode()
        assert end.ended_by == "task_ended" and end.hold_steps == SETTLE_STEPS
        assert runtime.frames is not None and runtime.frames.counts["none"] == SETTLE_STEPS
        assert backend.env.frames.rendered == 4
    finally:
        runtime.close()


def test_while_nobody_looks_one_poll_runs_several_steps_and_the_clock_follows() -> None:
    cams = (parse_camera_spec("front:32x24"),)
    backend = SimBackend(SimConfig(scenes=("pick_cube",), cameras=cams, render="on_demand",
                                   num_steps=200))
    runtime = InProcRuntime(backend, executor_registry(), monitor_hz=3.0, batch_steps=4)
    try:
        runtime.start_episode()
        runtime.poll()
        idle = runtime.poll()  # nothing runs: the harness looks at every step
        assert [o.timestep for o in idle.observations] == [1] and runtime.steps == 1
        runtime.clock.sleep(runtime.control_period_s)  # as the runner does after each tick
        runtime.dispatch(command("m", "move_ee_to", target=[0.45, 0.1, 0.3], speed_mps=0.05))
        seen: list[tuple[int, bool, float]] = []
        kinds: list[str] = []
        while "control_done" not in kinds:
            now = runtime.clock.monotonic()
            res = runtime.poll()
            assert runtime.clock.monotonic() == now  # the steps of one poll: one moment
            kinds += [str(e.kind) for e in res.events]
            seen += [(o.timestep, bool(o.cameras), now) for o in res.observations]
            runtime.clock.sleep(runtime.control_period_s)
        steps = [t for t, _, _ in seen]
        assert steps[0] == 2 and steps[-1] == runtime.steps
        gaps = {b - a for a, b in itertools.pairwise(steps)}
        assert max(gaps) == 4 and all(1 <= g <= 4 for g in gaps)
        # time stands still within a tick; after the runner's sleep the clock stands where
        # the simulator is: one period per step taken
        assert runtime.clock.monotonic() == pytest.approx(runtime.steps / 30)
        assert seen[-1][1]  # the step that ended the command carries a frame
    finally:
        runtime.close()


def test_a_batch_that_is_not_a_positive_int_is_refused() -> None:
    backend = SimBackend(SimConfig(scenes=("pick_cube",), cameras=(), render="on_demand"))
    with pytest.raises(DefinitionError, match="batch_steps=0 must be an int >= 1"):
        InProcRuntime(backend, executor_registry(), batch_steps=0)
    backend.close()


def test_an_executor_that_reads_frames_starts_on_a_frame_rendered_for_it(source: Source) -> None:
    rendered: list[set[str]] = []
    frames = policy(source, rendered)
    assert frames.render_latest(obs(4, ["front"])) is None  # it has one already
    started = frames.render_latest(obs(5))
    assert started is not None and sorted(started.cameras) == ["left"] and rendered == [{"left"}]


class Chunked:
    """An executor that reads frames at some steps only (a policy asking for chunks)."""

    def __init__(self, now: bool, ahead: bool) -> None:
        self.reads_frames = now
        self.reads_next_frame = ahead


def test_an_executor_reading_some_frames_gets_those_only(source: Source) -> None:
    rendered: list[set[str]] = []
    frames = policy(source, rendered, hz=1.0)  # no watcher due in these steps
    frames.before_step([Chunked(now=True, ahead=False)])  # its step reads, the next does not
    frames.before_step([Chunked(now=False, ahead=False)])
    assert source.requests == []
    frames.before_step([Chunked(now=False, ahead=True)])  # the step after this one reads
    assert source.requests == [None]
    assert frames.reads([Chunked(now=True, ahead=False)])  # rendered for it after the step
    assert not frames.reads([Chunked(now=False, ahead=True)])
    started = frames.render_latest(obs(6))
    assert started is not None and rendered == [{"front"}]
