"""The host across episode boundaries: a simulator that ends an episode inside a step (GenManip
semantics) ends the commands running in it, and the gripper target follows the new episode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_bt.clock import FakeClock
from harness_bt.errors import BridgeError
from harness_bt.runtime.observation import Observation
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import ExecutorHost, HostConfig
from tests.runtime_bridge.executors import command, factory


class Episodic(KinematicBackend):
    """Ends its episode at step ``length`` (the answer is the next episode's first
    observation); after ``episodes`` episodes it has none left."""

    def __init__(self, length: int, episodes: int = 2) -> None:
        super().__init__()
        self.length = length
        self.left = episodes

    def step(self, action: Mapping[str, Any]) -> Observation:
        if self.left <= 0:
            raise BridgeError("EPISODES_DONE", "no episode left")
        obs = super().step(action)
        if self.timestep >= self.length:
            self.left -= 1
            if self.left <= 0:
                raise BridgeError("EPISODES_DONE", "no episode left")
            return self.reset()
        return obs


def test_a_rollover_ends_running_and_pending_commands_and_reopens_the_gripper() -> None:
    backend = Episodic(length=3)
    host = ExecutorHost(backend, factory, clock=FakeClock(), config=HostConfig(lease_s=None))
    host.reset()
    host.submit(command("grip", "grip", width=0.0, resources=("gripper",)))
    host.step()  # the gripper target is now closed
    host.submit(command("long", "wait", steps=100, resources=("arm",)))
    host.step()  # started
    events = list(host.step().events)  # the third step ends the episode
    assert host.observation is not None and host.observation.reset
    ended = {e.command_id: (str(e.kind), e.reason.split(":")[0]) for e in events
             if str(e.kind) != "progress"}
    assert ended["long"] == ("aborted", "EPISODE_ENDED")
    assert host.active() == {}
    result = host.step()
    assert result.action["action"][2] == [0.04, 0.04]  # the new episode's open fingers, held
    host.close()


def test_no_episode_left_ends_the_running_command_as_episode_ended() -> None:
    backend = Episodic(length=2, episodes=1)
    host = ExecutorHost(backend, factory, clock=FakeClock(), config=HostConfig(lease_s=None))
    host.reset()
    host.submit(command("long", "wait", steps=100))
    host.step()
    try:
        host.step()
    except BridgeError as exc:
        assert exc.code == "BACKEND_ERROR"
    status = host.query("long")
    assert status.state.value == "ABORTED" and status.reason.startswith("EPISODE_ENDED")
    host.close()
