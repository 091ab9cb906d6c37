"""GenManipClient against a scripted server behind httpx.MockTransport (no network)."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable

import httpx
import numpy as np
import pytest

from harness_bt.clock import FakeClock
from harness_bt.errors import BridgeError
from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.client import ClientOptions, GenManipClient, StepOutcomeUnknown
from runtime_bridge.genmanip.errors import ActionError, HttpError

JOINT = {"control_type": "joint_position", "action": [0.0] * 9}


def obs(timestep: int, reset: bool = False) -> dict[str, object]:
    return {"camera_data": {}, "instruction": "pick up the red cube",
            "joint_position_state": np.zeros(9), "timestep": timestep, "reset": reset,
            "ee_pose_state": [np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])]}


class FakeServer:
    """A scripted GenManip server: episodes of ``length`` steps, ``episodes`` of them.
    ``faults`` maps a /step call number to an exception or status to produce instead."""

    def __init__(self, length: int = 3, episodes: int = 2, frames: bool = True) -> None:
        self.length, self.left, self.frames = length, episodes, frames
        self.t = 0
        self.calls: list[str] = []
        self.steps_applied = 0
        self.faults: dict[int, Callable[[httpx.Request], httpx.Response]] = {}
        self.last_headers: httpx.Headers | None = None

    def answer(self, request: httpx.Request, payload: object) -> httpx.Response:
        if self.frames and codec.FRAMES_MEDIA_TYPE in request.headers.get("accept", ""):
            return httpx.Response(200, content=codec.dumps_frames(payload),
                                  headers={"content-type": codec.FRAMES_MEDIA_TYPE})
        return httpx.Response(200, content=codec.dumps(payload),
                              headers={"content-type": "application/octet-stream"})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        route = request.url.path
        self.calls.append(route)
        self.last_headers = request.headers
        if route in ("/create_workers", "/kill"):
            assert json.loads(request.content) == {"data": {"worker_ids": ["0"]}}
            return httpx.Response(200, json={"data": {"success": True}})
        if route.startswith("/harness/"):  # as upstream: no routes of ours
            return httpx.Response(404, json={"detail": "Not Found"})
        body = pickle.loads(request.content)  # trusted: our own test client's request
        self.last_body = body
        if route == "/reset":
            assert body == {"worker_ids": ["0"]}
            self.left -= 1
            self.t = 0
            return self.answer(request, {"0": {"obs": obs(0, True), "metric": None}})
        assert route == "/step" and set(body) == {"0"}
        self.steps_applied += 1
        self.t += 1
        if self.t >= self.length:
            if self.left == 0:
                entry = {"obs": None, "metric": {"pick_cube": 0.5}}
            else:
                self.left -= 1
                self.t = 0
                entry = {"obs": obs(0, True), "metric": None}
        else:
            entry = {"obs": obs(self.t), "metric": None}
        fault = self.faults.get(self.calls.count("/step"))
        if fault is not None:
            return fault(request)
        return self.answer(request, {"0": entry})


def client_for(server: FakeServer, worker_ids: list[str] | None = None,
               **options: object) -> GenManipClient:
    """A client of ``server``; ``options``: fields of :class:`ClientOptions`."""
    return GenManipClient("http://sim.test", worker_ids or ["0"],
                          transport=httpx.MockTransport(server), clock=FakeClock(5.0),
                          options=ClientOptions(**options))  # type: ignore[arg-type]


def test_a_full_run_reports_rollover_and_final_metric_as_notices() -> None:
    server = FakeServer(length=3, episodes=2)
    with client_for(server) as client:
        client.create_workers()
        first = client.reset()["0"]
        assert first.obs is not None and first.obs.reset and first.obs.received_at == 5.0
        timesteps = []
        while not client.done:
            result = client.step({"0": JOINT})["0"]
            timesteps.append(None if result.obs is None else result.obs.timestep)
        client.kill()
        assert timesteps == [1, 2, 0, 1, 2, None]
        assert result.metric == {"pick_cube": 0.5} and result.done
        kinds = [(n.kind, n.worker_id) for n in client.notices()]
        assert kinds == [("episode_rollover", "0"), ("final_metric", "0")]
        assert client.last_media_type == codec.FRAMES_MEDIA_TYPE
        assert client.shm_status.startswith("off: the server has no /harness/shm/open")
    # shared memory is asked for once, before the first /reset, and never again after a 404
    assert server.calls == (["/create_workers", "/harness/shm/open", "/reset"] + ["/step"] * 6
                            + ["/kill"])


def test_without_fast_path_the_compatible_encoding_is_asked_for_and_read() -> None:
    server = FakeServer()
    with client_for(server, fast_path=False) as client:
        client.reset()
        assert "accept" not in server.last_headers or codec.FRAMES_MEDIA_TYPE not in \
            server.last_headers["accept"]
        assert client.last_media_type == "application/octet-stream"


def test_an_upstream_server_that_ignores_accept_is_read_in_the_compatible_encoding() -> None:
    server = FakeServer(frames=False)
    with client_for(server) as client:
        assert client.reset()["0"].obs.timestep == 0
        assert client.last_media_type == "application/octet-stream"


def test_a_timed_out_step_is_unknown_never_resent_and_settled_as_applied() -> None:
    server = FakeServer(length=10, episodes=1)

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    server.faults[2] = timeout  # the server applies step 2 but the answer never arrives
    with client_for(server) as client:
        client.reset()
        client.step({"0": JOINT})
        with pytest.raises(StepOutcomeUnknown, match="may or may not have been applied") as info:
            client.step({"0": JOINT})
        assert info.value.code == "STEP_OUTCOME_UNKNOWN" and "/step" in str(info.value)
        assert server.calls.count("/step") == 2  # not retried
        assert client.step({"0": JOINT})["0"].obs.timestep == 3
        notices = client.notices()
    assert [n.kind for n in notices] == ["step_unknown", "step_settled"]
    assert notices[1].data["applied"] == 1 and notices[1].data["last_known_timestep"] == 1


def test_a_step_the_server_never_applied_settles_as_not_applied() -> None:
    server = FakeServer(length=10, episodes=1)

    def lost_before_apply(request: httpx.Request) -> httpx.Response:
        server.steps_applied -= 1
        server.t -= 1
        raise httpx.ReadError("connection reset", request=request)

    server.faults[1] = lost_before_apply
    with client_for(server) as client:
        client.reset()
        with pytest.raises(StepOutcomeUnknown):
            client.step({"0": JOINT})
        assert client.step({"0": JOINT})["0"].obs.timestep == 1
        settled = [n for n in client.notices() if n.kind == "step_settled"]
    assert settled[0].data["applied"] == 0


def test_a_504_answer_is_an_unknown_outcome() -> None:
    server = FakeServer()
    server.faults[1] = lambda request: httpx.Response(504, json={"detail": "gateway timeout"})
    with client_for(server) as client:
        client.reset()
        with pytest.raises(StepOutcomeUnknown, match="HTTP 504"):
            client.step({"0": JOINT})


def test_a_refused_connection_is_not_sent_and_safe_to_resend() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with GenManipClient("http://sim.test", transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(BridgeError, match="never left") as info:
            client.step({"0": JOINT})
        assert info.value.code == "STEP_NOT_SENT"
        assert info.value.details["worker_ids"] == ["0"]
        with pytest.raises(BridgeError, match=r"/create_workers for workers \['0'\]"):
            client.create_workers()
        assert not client.health()


def test_server_errors_carry_the_route_worker_and_detail() -> None:
    server = FakeServer()
    server.faults[1] = lambda request: httpx.Response(
        500, json={"detail": "the action has no 'control_type'"})
    with client_for(server) as client:
        client.reset()
        with pytest.raises(BridgeError, match=r"/step for workers \['0'\]: HTTP 500: the action "
                           "has no 'control_type'") as info:
            client.step({"0": JOINT})
        assert info.value.code == "SERVER_REFUSED" and info.value.details["status"] == 500


def test_bad_actions_fail_before_anything_is_sent() -> None:
    server = FakeServer()
    with client_for(server) as client:
        with pytest.raises(ActionError, match=r"shape \(9,\), got shape \(7,\)"):
            client.step({"0": {"control_type": "joint_position", "action": [0.0] * 7}})
        with pytest.raises(BridgeError, match="not this client's"):
            client.step({"7": JOINT})
    assert server.calls == []


def test_hostile_and_oversized_responses_are_refused() -> None:
    class Hostile:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (print, ("pwned",))

    evil = httpx.MockTransport(lambda r: httpx.Response(200, content=pickle.dumps(Hostile())))
    with GenManipClient("http://sim.test", transport=evil) as client, \
            pytest.raises(HttpError, match=r"builtins\.print"):
        client.reset()
    with client_for(FakeServer(), max_response_bytes=64) as client:
        with pytest.raises(BridgeError, match="over the limit of 64") as info:
            client.reset()
        assert info.value.code == "RESPONSE_TOO_LARGE"


def test_the_token_is_sent_as_a_bearer_header_and_numpy_actions_as_lists() -> None:
    server = FakeServer()
    with client_for(server, token="s3cret") as client:
        client.reset()
        client.step({"0": {"control_type": "ee_pose",
                           "action": (np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(2))}})
    assert server.last_headers["authorization"] == "Bearer s3cret"
    assert server.last_body["0"]["action"] == ([0.0] * 3, [1.0, 0.0, 0.0, 0.0], [0.0, 0.0])


def test_a_missing_worker_in_the_answer_is_reported() -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(200, content=codec.dumps({"1": {}})))
    with GenManipClient("http://sim.test", transport=transport) as client, \
            pytest.raises(BridgeError, match=r"worker '0' is missing from the answer"):
        client.reset()
