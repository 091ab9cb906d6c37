"""The ``run_policy`` executor, run by the real executor host against the kinematic backend
(to see exactly what was commanded) and a policy server written from openpi's documented
protocol: chunks become steps, the policy's end signal and the step budget end it, and every
way the server can misbehave ends the command ABORTED with the arm held and a clear reason."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import skills.executors.policy as policy
from harness_bt.clock import FakeClock
from harness_bt.policy.client import PolicyClient
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import ExecutorHost, HostConfig
from skills.executors import executor_registry
from tests.harness_bt.policy.peer import Answer, Fail, OpenpiPeer, Raw, Silent
from tests.skills.test_executors import command, drive, final


def down(rows: int, *, done: bool = False, dz: float = -0.005, gripper: float = 0.0
         ) -> dict[str, Any]:
    actions = np.tile(np.array([0.0, 0.0, dz, 0.0, 0.0, 0.0, gripper], dtype=np.float32),
                      (rows, 1))
    return {"actions": actions, "done": done}


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[OpenpiPeer] = []

    def start(respond: Any) -> OpenpiPeer:
        started.append(OpenpiPeer(respond).start())
        return started[-1]

    yield start
    for p in started:
        p.stop()


def run_policy(url: str, cid: str = "p#1", **params: Any) -> Any:
    params = {"instruction": "pick up the red cube", "policy_url": url, **params}
    return command(cid, "run_policy", **params)


def test_chunks_run_row_by_row_and_the_policy_ends_it_by_signalling_done(serve: Any) -> None:
    peer = serve(lambda obs, n: down(4, done=n == 3))
    kin = KinematicBackend(home=(0.4, 0.0, 0.4))
    events, _ = drive(kin, run_policy(peer.url, execute_steps=3))
    assert final(events) == ("control_done", "CONTROL_DONE")
    assert len(peer.observations) == 3  # 3 rows of each of the first two, then the done one
    assert kin.position[2] == pytest.approx(0.4 - 9 * 0.005)
    first = peer.observations[0]
    assert first[b"prompt" if b"prompt" in first else "prompt"] == "pick up the red cube"
    assert first["session"] == "p#1" and first["observation/state"].shape == (8,)
    assert first["observation/state"][2] == pytest.approx(0.4)
    assert peer.observations[1]["observation/state"][2] == pytest.approx(0.385)  # fresh obs
    progress = [e.progress for e in events if str(e.kind) == "progress"]
    assert progress[-1] == 450 - 9  # rows left in the step budget


def test_the_step_budget_ends_a_policy_that_never_says_done(serve: Any) -> None:
    peer = serve(lambda obs, n: down(10, dz=0.002, gripper=1.0))
    kin = KinematicBackend()
    events, _ = drive(kin, run_policy(peer.url, max_steps=12))
    assert final(events)[0] == "control_done"
    assert "step budget of 12 steps" in " ".join(e.reason for e in events[-2:]) or \
        kin.position[2] == pytest.approx(0.4 + 12 * 0.002)
    assert kin.position[2] == pytest.approx(0.4 + 12 * 0.002)
    assert kin.actions[-1]["action"][2] == [0.0, 0.0]  # gripper 1 = closed


def nan_chunk() -> dict[str, Any]:
    out = down(3)
    out["actions"][1, 0] = np.nan
    return out


@pytest.mark.parametrize(("answer", "code", "words"), [
    (Raw(b"\x00garbage\xc1"), "POLICY_PROTOCOL", "not valid msgpack"),
    ({"actions": np.zeros((4, 4), np.float32)}, "POLICY_ACTION", "shape [4, 4]"),
    (nan_chunk(), "POLICY_ACTION", "row 1 holds nan"),
    (down(2, dz=-0.05), "POLICY_ACTION", "moves 0.0500 m in one step"),
    ({"actions": np.zeros((0, 7), np.float32)}, "POLICY_ACTION", "empty and not 'done'"),
    ({"actions": np.tile([0, 0, 0, 0, 0, 0.5, 0], (2, 1))}, "POLICY_ACTION",
     "turns 0.5000 rad in one step"),
    ({"action": down(2)["actions"]}, "POLICY_ACTION", "no 'actions'"),
    (Fail("Traceback: RuntimeError: CUDA out of memory"), "POLICY_SERVER_ERROR",
     "CUDA out of memory"),
])
def test_a_bad_reply_moves_nothing_and_aborts_with_the_arm_held(
        serve: Any, answer: Answer, code: str, words: str) -> None:
    peer = serve(lambda obs, n: down(2) if n == 1 else answer)
    kin = KinematicBackend()
    events, host = drive(kin, run_policy(peer.url, execute_steps=2))
    kind, reason = final(events)
    assert kind == "aborted" and reason.startswith(f"{code}: ") and words in reason, reason
    assert kin.position[2] == pytest.approx(0.4 - 2 * 0.005)  # the good chunk only
    before = kin.position.copy()
    for _ in range(5):
        host.step()  # nothing drives the arm any more: it holds
    assert np.allclose(kin.position, before)


def test_a_server_silent_mid_run_or_too_big_or_absent_aborts_with_its_own_reason(
        serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    silent = serve(lambda obs, n: down(2) if n == 1 else Silent())
    kin = KinematicBackend()
    events, _ = drive(kin, run_policy(silent.url, reply_timeout_s=0.3, execute_steps=2))
    assert final(events)[1].startswith("POLICY_SILENT: ")
    assert kin.position[2] == pytest.approx(0.4 - 2 * 0.005)  # silent mid-run: held there

    big = serve(lambda obs, n: {"actions": np.zeros((200_000, 7), np.float32)})
    monkeypatch.setattr(policy, "PolicyClient", lambda url, **kw: PolicyClient(
        url, max_message_bytes=100_000, **kw))
    events, _ = drive(KinematicBackend(), run_policy(big.url))
    assert final(events)[1].startswith("POLICY_TOO_LARGE: "), final(events)
    events, _ = drive(KinematicBackend(), run_policy("ws://127.0.0.1:9", connect_timeout_s=1))
    assert final(events)[1].startswith("POLICY_UNREACHABLE: ")


def test_off_lockstep_the_arm_holds_while_the_policy_thinks_and_a_stop_cuts_the_wait(
        serve: Any) -> None:
    gate = threading.Event()

    def respond(obs: Any, n: int) -> Answer:
        if n == 1:
            gate.wait(10)  # the policy thinks until the test lets it answer
            return down(2, done=True)
        return Silent()

    peer = serve(respond)
    kin = KinematicBackend()
    cmd = run_policy(peer.url, lockstep=False)
    executor = policy.RunPolicyExecutor(cmd)
    obs = kin.reset()
    for _ in range(3):  # waiting: nothing moves the arm
        out = executor.step(obs)
        assert (str(out.status), out.action) == ("running", None)
    gate.set()
    assert executor._thread is not None
    executor._thread.join(5)
    out = executor.step(obs)
    assert out.action is not None and out.action.arm[2] == pytest.approx(-0.005)
    assert executor.waited_steps == 3

    second = policy.RunPolicyExecutor(run_policy(peer.url, "p#2", lockstep=False))
    assert second.step(obs).action is None  # asking; the server never answers
    thread = second._thread
    second.request_stop()  # closes the connection: the waiting thread ends at once
    assert thread is not None and not thread.is_alive()
    statuses = [str(second.step(obs).status) for _ in range(3)]
    assert statuses[-1] == "stopped"


def test_a_policy_that_dithers_in_place_is_a_stall(serve: Any) -> None:
    peer = serve(lambda obs, n: {"actions": np.tile(
        np.array([0.001 * (-1) ** n, 0, 0, 0, 0, 0, 0], np.float32), (4, 1))})
    events, _ = drive(KinematicBackend(), run_policy(peer.url, stall_steps=30, execute_steps=4))
    kind, reason = final(events)
    assert kind == "aborted" and reason.startswith("POLICY_STALLED: the hand moved less than 5 "
                                                   "mm, its gripper unchanged, over the "
                                                   "policy's last 30 steps"), reason
    assert len(peer.observations) == 8  # 31 rows of 4 a request: stalled within the 8th


def test_frames_are_read_only_by_the_steps_that_ask_the_policy(serve: Any) -> None:
    """``reads_frames`` is true exactly before the steps that send the policy an observation,
    ``reads_next_frame`` exactly one step earlier (a simulator rendering on demand renders for
    those steps only); after the done chunk, neither."""
    peer = serve(lambda obs, n: down(3, done=n == 3))
    host = ExecutorHost(KinematicBackend(home=(0.4, 0.0, 0.4)), executor_registry(),
                        clock=FakeClock(), config=HostConfig(lease_s=None))
    assert host.submit(run_policy(peer.url, execute_steps=3)).accepted
    now, ahead, asked = [], [], []
    for _ in range(20):
        active = list(host.active_executors())
        if not active:
            break
        now.append(active[0].reads_frames)
        ahead.append(active[0].reads_next_frame)
        before = len(peer.observations)
        host.step()
        asked.append(len(peer.observations) > before)
    assert asked == [True, False, False] * 3 + [False]  # the last step ends it (done)
    assert now == asked
    assert ahead == [False, False, True, False, False, True, False, False, False, False]
