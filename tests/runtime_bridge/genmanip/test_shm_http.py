"""The shared-memory fast path between our client and our server over real HTTP: negotiated on
the same host, and every way it falls back (opt-out, a server without it, a segment that
cannot be mapped or vanished, a restarted server, torn and hostile answers)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import numpy as np
import pytest

from harness_bt.errors import BridgeError
from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.actions import ValidatedAction
from runtime_bridge.genmanip.client import ClientOptions, GenManipClient, StepOutcomeUnknown
from runtime_bridge.genmanip.server import AppSettings, create_app
from runtime_bridge.genmanip.serving import ServerThread
from runtime_bridge.genmanip.shm import ShmConfig, ShmReader, ShmSessions
from tests.runtime_bridge.genmanip.conftest import SHM_DIR, segments

HOLD = {"control_type": "joint_position", "action": [0.0] * 7 + [0.04, 0.04]}


class Counter:
    """A worker whose observation carries its timestep in the pixels."""

    def __init__(self) -> None:
        self.t = 0

    def obs(self) -> dict[str, Any]:
        cam = {"rgb": np.full((12, 16, 3), self.t % 256, np.uint8),
               "depth": np.full((12, 16), float(self.t), np.float32),
               "intrinsics_matrix": np.eye(3, dtype=np.float32),
               "p": np.zeros(3), "q": np.array([1.0, 0.0, 0.0, 0.0])}
        return {"camera_data": {"front": cam}, "instruction": "count",
                "joint_position_state": np.zeros(9), "timestep": self.t,
                "reset": self.t == 0,
                "ee_pose_state": [np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])]}

    def reset(self) -> dict[str, Any]:
        self.t = 0
        return {"obs": self.obs(), "metric": None}

    def step(self, message: Mapping[str, Any] | ValidatedAction) -> dict[str, Any]:
        self.t += 1
        return {"obs": self.obs(), "metric": None}

    def close(self) -> None:
        pass


@pytest.fixture
def serve(shm_config: ShmConfig, closing: Callable[..., Any]) -> Callable[..., ServerThread]:
    """Servers stopped at teardown; then ``shm_config`` checks that each unlinked every
    segment it made."""

    def start(*, shm: ShmConfig | bool = shm_config, port: int = 0) -> ServerThread:
        app = create_app(lambda wid: Counter(), AppSettings(shm=shm))
        server = ServerThread(app, port=port).start()
        return closing(server, server.stop)

    return start


def run(client: GenManipClient, steps: int) -> list[int]:
    client.create_workers()
    seen = [client.reset()["0"].obs.timestep]
    for _ in range(steps):
        obs = client.step({"0": HOLD})["0"].obs
        assert int(obs.cameras["front"].rgb[0, 0, 0]) == obs.timestep  # the right pixels
        seen.append(obs.timestep)
    return seen


def test_a_client_on_the_same_host_is_answered_through_shared_memory(
        serve: Callable[..., ServerThread], shm_config: ShmConfig) -> None:
    server = serve()
    with GenManipClient(server.url) as client:
        assert run(client, 5) == [0, 1, 2, 3, 4, 5]  # the ring (3 slots) wrapped
        assert client.last_media_type == codec.SHM_MEDIA_TYPE
        assert client.shm_status.startswith(f"shared memory (segment {SHM_DIR}/"
                                            f"{shm_config.prefix}-{os.getpid()}-")
        assert len(segments(shm_config.prefix)) == 1
        info = client.info()
        assert info is not None and codec.SHM_MEDIA_TYPE in info["encodings"]
    assert segments(shm_config.prefix) == []  # the client released its session on close


def test_views_on_the_segment_are_read_only_observations(
        serve: Callable[..., ServerThread]) -> None:
    with GenManipClient(
        serve().url,
        options=ClientOptions(shm_copy=False),
    ) as client:
        client.create_workers()
        client.reset()
        obs = client.step({"0": HOLD})["0"].obs
        assert client.last_media_type == codec.SHM_MEDIA_TYPE
        rgb = obs.cameras["front"].rgb
        assert rgb[0, 0, 0] == 1 and not rgb.flags.writeable


@pytest.mark.parametrize(("options", "media"), [
    ({"shm": False}, codec.FRAMES_MEDIA_TYPE),
    ({"fast_path": False}, codec.COMPAT_MEDIA_TYPE),
])
def test_a_client_that_opts_out_opens_no_session(serve: Callable[..., ServerThread],
                                                 shm_config: ShmConfig,
                                                 options: dict[str, bool], media: str) -> None:
    with GenManipClient(serve().url, options=ClientOptions(**options)) as client:
        assert run(client, 2) == [0, 1, 2]
        assert client.last_media_type == media
        assert client.shm_status == "off: not asked for"
        assert segments(shm_config.prefix) == []


def test_a_server_without_shared_memory_answers_in_frames(
        serve: Callable[..., ServerThread]) -> None:
    with GenManipClient(serve(shm=False).url) as client:
        assert run(client, 2) == [0, 1, 2]
        assert client.last_media_type == codec.FRAMES_MEDIA_TYPE
        assert client.shm_status == ("off: the server has no /harness/shm/open (not harness-bt, "
                                     "or shm disabled)")


def test_a_client_that_cannot_map_the_segment_falls_back_to_frames(
        serve: Callable[..., ServerThread], tmp_path: Any) -> None:
    # another /dev/shm: as on another host or in another container
    with GenManipClient(
        serve().url,
        options=ClientOptions(shm_directory=str(tmp_path)),
    ) as client:
        assert run(client, 2) == [0, 1, 2]
        assert client.last_media_type == codec.FRAMES_MEDIA_TYPE
        assert "cannot be mapped here" in client.shm_status and "No such file" in client.shm_status


def test_a_segment_that_vanishes_before_it_is_mapped_falls_back_to_frames(
        serve: Callable[..., ServerThread], monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = ShmSessions.open

    def open_then_vanish(self: ShmSessions) -> dict[str, Any]:
        info = real_open(self)
        os.unlink(os.path.join(self.config.directory, info["segment"]))
        return info

    monkeypatch.setattr(ShmSessions, "open", open_then_vanish)
    with GenManipClient(serve().url) as client:
        assert run(client, 2) == [0, 1, 2]
        assert client.last_media_type == codec.FRAMES_MEDIA_TYPE
        assert client.shm_status.startswith("off: segment ")


def test_a_segment_unlinked_after_it_is_mapped_keeps_working(
        serve: Callable[..., ServerThread], shm_config: ShmConfig) -> None:
    with GenManipClient(serve().url) as client:
        run(client, 1)
        for name in segments(shm_config.prefix):
            os.unlink(os.path.join(SHM_DIR, name))
        assert client.step({"0": HOLD})["0"].obs.timestep == 2
        assert client.last_media_type == codec.SHM_MEDIA_TYPE


def test_a_restarted_server_is_renegotiated_without_losing_an_answer(
        serve: Callable[..., ServerThread], shm_config: ShmConfig) -> None:
    first = serve()
    with GenManipClient(first.url) as client:
        run(client, 2)
        old = segments(shm_config.prefix)
        first.stop()
        assert segments(shm_config.prefix) == []
        serve(port=first.port)  # a new server process on the same address, new sessions
        client.create_workers()
        assert client.reset()["0"].obs.timestep == 0  # answered in frames: session unknown
        assert client.last_media_type == codec.FRAMES_MEDIA_TYPE
        assert client.shm_status.startswith("renegotiating (the server no longer knows")
        assert client.step({"0": HOLD})["0"].obs.timestep == 1
        assert client.last_media_type == codec.SHM_MEDIA_TYPE
        assert segments(shm_config.prefix) != old


def test_a_torn_answer_is_an_unknown_step_settled_by_the_next_one(
        serve: Callable[..., ServerThread], monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve()
    sessions: ShmSessions = server.app.state.shm
    with GenManipClient(server.url) as client:
        run(client, 1)
        real_copy = ShmReader._copy

        def copy_while_the_server_writes(self: ShmReader, start: int, nbytes: int) -> bytes:
            data = real_copy(self, start, nbytes)
            for _ in range(3):  # the ring wraps onto the slot being copied
                sessions.encode(client._shm.claim, Counter().reset())  # type: ignore[union-attr]
            return data

        monkeypatch.setattr(ShmReader, "_copy", copy_while_the_server_writes)
        with pytest.raises(StepOutcomeUnknown, match=r"SHM_TORN: .* while it was copied"):
            client.step({"0": HOLD})
        monkeypatch.undo()
        assert client.step({"0": HOLD})["0"].obs.timestep == 3
        assert client.last_media_type == codec.SHM_MEDIA_TYPE  # renegotiated
        settled = [n for n in client.notices() if n.kind == "step_settled"]
    assert settled[0].data["applied"] == 1


def test_a_hostile_descriptor_is_an_unknown_step_and_turns_shared_memory_off(
        serve: Callable[..., ServerThread], monkeypatch: pytest.MonkeyPatch) -> None:
    real_encode = ShmSessions.encode

    def out_of_bounds(self: ShmSessions, claim: str | None, payload: Any) -> tuple[Any, str]:
        body, status = real_encode(self, claim, payload)
        desc = pickle.loads(body)  # trusted: our own server's
        desc["buffers"][0] = (0, 1 << 40)
        return pickle.dumps(desc, protocol=5), status

    with GenManipClient(serve().url) as client:
        run(client, 1)
        monkeypatch.setattr(ShmSessions, "encode", out_of_bounds)
        with pytest.raises(StepOutcomeUnknown, match=r"SHM_BAD_DESCRIPTOR: .*buffer 0 at offset "
                           r"0 of 1099511627776 bytes ends past") as info:
            client.step({"0": HOLD})
        assert isinstance(info.value, BridgeError)
        assert client.shm_status.startswith("off: ")
        assert client.step({"0": HOLD})["0"].obs.timestep == 3
        assert client.last_media_type == codec.FRAMES_MEDIA_TYPE


def test_a_server_that_is_down_does_not_turn_shared_memory_off(
        serve: Callable[..., ServerThread]) -> None:
    server = serve()
    port = server.port
    server.stop()
    with GenManipClient(server.url) as client:
        for _ in range(4):
            with pytest.raises(BridgeError, match="could not connect"):
                client.reset()
        assert client.shm_status.startswith("not negotiated yet (the server did not answer")
        serve(port=port)
        assert run(client, 1) == [0, 1]
        assert client.last_media_type == codec.SHM_MEDIA_TYPE


def test_segments_of_a_killed_server_are_removed_when_the_next_one_starts(
        serve: Callable[..., ServerThread], shm_config: ShmConfig) -> None:
    script = ("import sys, time\n"
              "from runtime_bridge.genmanip.shm import ShmConfig, ShmSessions\n"
              f"sessions = ShmSessions(ShmConfig(prefix={shm_config.prefix!r}))\n"
              "print(sessions.open()['segment'], flush=True)\n"
              "sys.stdin.read()\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        name = child.stdout.readline().strip()  # type: ignore[union-attr]
        assert segments(shm_config.prefix) == [name]
    finally:
        child.kill()  # no cleanup runs: as a crash
        child.wait()
        child.stdin.close()  # type: ignore[union-attr]
        child.stdout.close()  # type: ignore[union-attr]
    assert segments(shm_config.prefix) == [name]
    serve()
    assert segments(shm_config.prefix) == []


def test_a_server_that_keeps_forgetting_the_session_turns_shared_memory_off(
        shm_config: ShmConfig) -> None:
    sessions = ShmSessions(shm_config)

    def forgetful(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/harness/shm/open":
            return httpx.Response(200, json=sessions.open())
        payload = {"0": Counter().reset()}
        return httpx.Response(200, content=codec.dumps_frames(payload), headers={
            "content-type": codec.FRAMES_MEDIA_TYPE, "x-harness-shm-status": "unknown-session"})

    try:
        with GenManipClient("http://sim.test", transport=httpx.MockTransport(forgetful)) as client:
            for _ in range(3):
                assert client.reset()["0"].obs.timestep == 0
            assert client.shm_status.startswith("off: 3 failures in a row, the last: the server "
                                                "no longer knows the session")
            client.reset()
    finally:
        sessions.close()
    assert segments(shm_config.prefix) == []
