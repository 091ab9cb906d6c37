"""The abuse suite of the simulator's HTTP server (the app ``harness sim serve`` runs, on a
loopback port): each hostile request is answered with a 4xx naming what was wrong, within the
budget below, the resident memory grows by less than ``MEMORY_BUDGET`` per request, and
``/harness/info`` answers meanwhile and afterwards.

Budgets (generous client timeouts, not speed assertions; tests/benchmarks/bench_abuse.py
prints the times): every hostile request answered within ``ANSWER_BUDGET_S``; a body that
stops arriving is answered 408 after the server's ``body_timeout_s``.
"""

from __future__ import annotations

import concurrent.futures
import pickle
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_bt.request_budget import RequestBudget
from runtime_bridge.genmanip import ServerThread
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.safepickle import safe_loads
from runtime_bridge.sim.config import SimConfig
from runtime_bridge.sim.server import create_sim_app
from tests import hostile

ANSWER_BUDGET_S = 5.0
MEMORY_BUDGET = 20 << 20
BUDGET = RequestBudget(max_body_bytes=1 << 20, body_timeout_s=0.5, max_connections=8)


@pytest.fixture
def served() -> Iterator[ServerThread]:
    app = create_sim_app(SimConfig(cameras=()), budget=BUDGET, shm=False)
    with ServerThread(app) as server:
        yield server


def post(url: str, route: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(url + route, content=body, timeout=ANSWER_BUDGET_S,
                      headers={"content-type": "application/octet-stream", **headers})


HOSTILE = [
    ("shared-reference tuple, depth 26", "/reset", hostile.reset_with_shared_tuple(26), 400,
     "TOO_MANY_VALUES"),
    ("shared-reference tuple, depth 40", "/reset", hostile.reset_with_shared_tuple(40), 400,
     "TOO_DEEP"),
    ("shared-reference tuple as a worker id", "/step", hostile.reset_with_shared_tuple(20), 400,
     "TOO_MANY_VALUES"),
    ("dict keyed by a shared-reference tuple", "/step", hostile.dict_keyed_by_shared_tuple(40),
     400, "PICKLE_KEY_REFUSED"),
    ("one 2 KB string referenced 100k times", "/reset",
     hostile.one_string_many_times(100_000, 2048), 400, "TOO_MUCH_TEXT"),
    ("one short string referenced 100k times", "/reset",
     hostile.one_string_many_times(100_000, 8), 400, "BAD_REQUEST"),
    ("lists nested 100k deep", "/step", hostile.nested_lists(100_000), 400, "TOO_DEEP"),
    ("a list holding itself", "/step", hostile.self_containing_list(), 400, "CYCLE"),
    ("a string announcing 2 GB", "/step", hostile.huge_declared_string(), 400,
     "PICKLE_UNREADABLE"),
    ("a global call", "/reset", hostile.global_call(), 400, "PICKLE_GLOBAL_REFUSED"),
    ("a body over the limit", "/step", b"\x80\x04" + b"x" * (2 << 20), 413, "BODY_TOO_LARGE"),
    ("a worker id of 10k characters", "/reset",
     pickle.dumps({"worker_ids": ["w" * 10_000]}), 400, "BAD_ID"),
    ("a frames body announcing 2**32 buffers", "/step",
     b"HBTF\x01\x00\x00\x00" + b"\x00\x00\x00\x00\xff\xff\xff\xff", 400, "FRAMES_UNREADABLE"),
]


@pytest.mark.parametrize("name, route, body, status, code", HOSTILE,
                         ids=[h[0] for h in HOSTILE])
def test_each_hostile_body_is_refused_with_its_reason_and_the_server_serves_on(
        served: ServerThread, name: str, route: str, body: bytes, status: int,
        code: str) -> None:
    frames = body.startswith(b"HBTF")
    headers = {"content-type": "application/x-harness-bt-frames"} if frames else {}
    post(served.url, route, pickle.dumps({"worker_ids": ["0"]}))  # warm the routes up
    before = hostile.rss_bytes()
    r = post(served.url, route, body, **headers)
    grown = hostile.rss_bytes() - before
    assert r.status_code == status, r.text[:300]
    assert r.json()["error"]["code"] == code, r.text[:300]
    assert len(r.content) < 4096  # the diagnostic is bounded
    assert grown < MEMORY_BUDGET, f"{name}: resident memory grew {grown >> 20} MB"
    assert httpx.get(served.url + "/harness/info", timeout=ANSWER_BUDGET_S).status_code == 200


@pytest.mark.parametrize("depth", [26, 40])
def test_the_200_byte_shared_reference_body_never_holds_up_the_info_route(
        served: ServerThread, depth: int) -> None:
    body = hostile.reset_with_shared_tuple(depth)
    assert len(body) < 300
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        attacks = [pool.submit(post, served.url, "/reset", body) for _ in range(4)]
        infos = [httpx.get(served.url + "/harness/info", timeout=ANSWER_BUDGET_S)
                 for _ in range(4)]
        answers = [a.result() for a in attacks]
    assert [i.status_code for i in infos] == [200] * 4
    assert {a.status_code for a in answers} == {400}


def test_a_body_that_stops_arriving_is_answered_408_and_others_are_served_meanwhile(
        served: ServerThread) -> None:
    with hostile.raw(served.host, served.port) as sock:
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123")
        assert httpx.get(served.url + "/harness/info", timeout=ANSWER_BUDGET_S).is_success
        assert hostile.read_status(sock) == 408


def test_headers_that_never_end_do_not_keep_others_waiting(served: ServerThread) -> None:
    with hostile.raw(served.host, served.port) as sock:
        sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert httpx.get(served.url + "/harness/info", timeout=ANSWER_BUDGET_S).is_success


def test_a_flood_of_connections_past_the_limit_is_refused_503_and_the_server_recovers(
        served: ServerThread) -> None:
    held: list[socket.socket] = []
    try:
        for _ in range(BUDGET.max_connections):  # each holds a request open (body pending)
            sock = socket.create_connection((served.host, served.port), timeout=10)
            sock.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
            held.append(sock)
        refused = None
        for _ in range(200):  # until the server has taken in all of them
            refused = httpx.get(served.url + "/harness/info", timeout=ANSWER_BUDGET_S)
            if refused.status_code == 503:
                break
        assert refused is not None and refused.status_code == 503
        assert refused.json()["error"]["code"] == "SERVER_BUSY"
        assert "max_connections=8" in refused.json()["detail"]
        assert [hostile.read_status(s) for s in held] == [408] * len(held)
    finally:
        for sock in held:
            sock.close()
    assert httpx.get(served.url + "/harness/info", timeout=ANSWER_BUDGET_S).is_success


def test_a_declared_length_over_the_limit_is_refused_before_any_byte_is_read(
        served: ServerThread) -> None:
    with hostile.raw(served.host, served.port) as sock:
        sock.sendall(b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n")
        assert hostile.read_status(sock) == 413


# ---------------------------------------------------------------- structured, by hypothesis

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=20), st.binary(max_size=20))
trees = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=5), st.tuples(kids, kids),
    st.dictionaries(st.text(max_size=8), kids, max_size=5)), max_leaves=40)


@settings(max_examples=200, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees, levels=st.integers(0, 60))
def test_any_builtin_tree_wrapped_in_shared_references_is_read_or_refused_with_a_reason(
        tree: Any, levels: int) -> None:
    for _ in range(levels):  # each level doubles the tree by sharing, not by copying
        tree = [tree, tree]
    data = pickle.dumps(tree, protocol=5)
    try:
        value = safe_loads(data, budget=BUDGET)
    except HttpError as exc:
        assert exc.http_status == 400 and exc.code in ("TOO_DEEP", "TOO_MANY_VALUES",
                                                       "TOO_MUCH_TEXT")
        assert len(str(exc)) < 1000
    else:
        assert value == tree


@settings(max_examples=300, derandomize=True, deadline=None)
@given(cut=st.integers(0, 400), flip=st.integers(0, 400), byte=st.integers(0, 255))
def test_any_damaged_request_pickle_is_refused_with_a_reason_never_run(
        cut: int, flip: int, byte: int) -> None:
    data = bytearray(pickle.dumps({"0": {"control_type": "joint_position",
                                         "action": [0.1] * 9, "id": ("a", ("b", 2))}},
                                  protocol=5))
    data[flip % len(data)] = byte
    data = data[:max(cut, 1)]
    try:
        safe_loads(bytes(data), budget=BUDGET)
    except HttpError as exc:
        assert exc.http_status == 400 and exc.fix
        assert len(str(exc)) < 1000


def test_the_request_budget_numbers_are_stated_in_info(served: ServerThread) -> None:
    info = httpx.get(served.url + "/harness/info", timeout=ANSWER_BUDGET_S).json()
    assert info["max_request_bytes"] == BUDGET.max_body_bytes
