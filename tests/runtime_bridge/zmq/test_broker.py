"""The broker: routing by service name, worker liveness, and hostile peers."""

from __future__ import annotations

import time

import pytest
import zmq

from harness_bt.errors import BridgeError
from runtime_bridge.zmq import (
    Broker,
    BrokerConfig,
    FunctionService,
    LazyPirateClient,
    Limits,
    Message,
    MessageType,
    RuntimeServer,
    ServiceWorker,
    WireCode,
    WireError,
    WorkerConfig,
    decode,
    encode,
)
from runtime_bridge.zmq.wire import raise_for_error
from tests.runtime_bridge.executors import STARTS, STEPPED_ON, command
from tests.runtime_bridge.zmq.conftest import LOOPBACK

BEAT = 0.05


@pytest.fixture
def broker(zctx, closing):
    b = Broker(BrokerConfig(bind=f"{LOOPBACK}:*", heartbeat_interval_s=BEAT, liveness=3,
                            limits=Limits(max_body_bytes=4096, max_array_bytes=65536)),
               context=zctx)
    closing(b, b.stop)
    b.start()
    return b


@pytest.fixture
def workers(zctx, broker, closing):
    def start(name: str) -> ServiceWorker:
        w = ServiceWorker(FunctionService(name, lambda req: {"who": name, **req.body}),
                          WorkerConfig(broker=broker.endpoint, heartbeat_interval_s=BEAT),
                          context=zctx)
        closing(w, w.stop)
        w.start()
        return w

    return start


@pytest.fixture
def client(zctx, broker, closing):
    return closing(LazyPirateClient(broker.endpoint, context=zctx, timeout_s=1.0, retries=1))


def call(client: LazyPirateClient, service: str, mtype: MessageType = MessageType.REQUEST,
         **body: object):
    return raise_for_error(client.request(Message(mtype, 0, service, body=body)))


def wait_for(predicate, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_requests_go_to_the_named_service_and_pools_never_mix(broker, workers, client):
    workers("perception")
    workers("perception")
    workers("planner")
    wait_for(lambda: broker.services().get("planner", {}).get("workers") == 1
             and broker.services().get("perception", {}).get("workers") == 2)
    for i in range(10):
        assert dict(call(client, "perception", n=i).body) == {"who": "perception", "n": i}
        assert dict(call(client, "planner", n=i).body) == {"who": "planner", "n": i}
    services = dict(call(client, "", MessageType.SERVICES).body)["services"]
    assert services["perception"]["workers"] == 2 and services["planner"]["workers"] == 1


def test_unknown_service_gets_a_clear_no_such_service_answer(broker, workers, client):
    workers("perception")
    wait_for(lambda: "perception" in broker.services())
    with pytest.raises(WireError) as info:
        call(client, "perceptoin")
    assert info.value.code == WireCode.NO_SUCH_SERVICE
    assert info.value.message == ("no such service 'perceptoin'; known: perception; did you mean "
                                  "'perception'?")


def test_a_silent_worker_is_dropped_and_its_request_reported_lost(broker, raw_socket, client):
    worker = raw_socket(zmq.DEALER, broker.endpoint)
    worker.send_multipart(encode(Message(MessageType.W_READY, service="slow")))
    wait_for(lambda: "slow" in broker.services())
    with pytest.raises(WireError) as info:
        call(client, "slow")  # the worker gets it, says nothing more, and is declared dead
    assert info.value.code == WireCode.WORKER_LOST
    assert "it may or may not have been carried out" in info.value.message
    assert decode(worker.recv_multipart()[2:]).type is MessageType.REQUEST
    with pytest.raises(WireError) as again:
        call(client, "slow")
    assert (again.value.code, again.value.message) == (
        WireCode.SERVICE_UNAVAILABLE, "service 'slow' has no live worker")


def test_a_stopped_worker_says_goodbye_and_a_new_one_takes_over(broker, workers, client):
    first = workers("perception")
    wait_for(lambda: broker.services().get("perception", {}).get("workers") == 1)
    first.stop()
    wait_for(lambda: broker.services()["perception"]["workers"] == 0)
    workers("perception")
    wait_for(lambda: broker.services()["perception"]["workers"] == 1)
    assert call(client, "perception").body["who"] == "perception"


HOSTILE = [
    ([b"hello"], WireCode.MALFORMED, "frame 0 is not a harness-bt header"),
    ([b"HBT\x01\x04"], WireCode.TRUNCATED, "header is 5 bytes"),
    ([b"HBT\x07\x04\x00" + bytes(8) + b"\x00\x00\x00", b"{}"], WireCode.UNSUPPORTED_VERSION,
     "protocol version 7 is not supported"),
    ([b"HBT\x01\x04\x00" + bytes(8) + b"\x05manip\x00\x00"], WireCode.TRUNCATED,
     "the header promises 2 frames"),
    ([b"HBT\x01\x04\x00" + bytes(8) + b"\x05manip\x00\x00", b"{" + b" " * 5000 + b"}"],
     WireCode.OVERSIZED, "body of 5002 bytes; the limit is 4096"),
]


@pytest.mark.parametrize(("frames", "code", "text"), HOSTILE)
def test_hostile_frames_get_an_error_reply_and_the_broker_keeps_serving(
        broker, workers, raw_socket, frames, code, text):
    workers("perception")
    for kind in (zmq.REQ, zmq.DEALER):
        sock = raw_socket(kind, broker.endpoint)
        sock.send_multipart(frames)
        assert sock.poll(2000), "no reply to a bad message"
        reply = sock.recv_multipart()
        error = decode(reply)  # REQ strips the delimiter; the DEALER sent none
        assert error.type is MessageType.ERROR
        assert (error.body["code"], text in error.body["message"]) == (code, True)
    wait_for(lambda: "perception" in broker.services())
    good = raw_socket(zmq.REQ, broker.endpoint)
    good.send_multipart(encode(Message(MessageType.REQUEST, 5, "perception")))
    assert good.poll(2000) and decode(good.recv_multipart()).body["who"] == "perception"


def test_a_frame_past_the_hard_cap_drops_only_that_peer(broker, raw_socket, client):
    huge = raw_socket(zmq.DEALER, broker.endpoint)
    huge.send_multipart([b"x" * (Limits(4096, 65536).hard_cap_bytes + 1)])
    assert not huge.poll(300)
    assert dict(call(client, "", MessageType.SERVICES).body) == {"services": {}}


def test_the_runtime_can_serve_as_a_worker_of_an_external_broker(zctx, broker, tmp_path,
                                                                   make_bridge):
    from runtime_bridge.backends.kinematic import KinematicBackend
    from runtime_bridge.host import HostConfig
    from runtime_bridge.zmq import RuntimeServerConfig
    from tests.runtime_bridge.executors import factory

    server = RuntimeServer(KinematicBackend(dt=0.01), factory, RuntimeServerConfig(
        connect=broker.endpoint, telemetry=None, journal=str(tmp_path / "rt.db"),
        host=HostConfig(lease_s=None), heartbeat_interval_s=BEAT), context=zctx)
    server.start()
    try:
        wait_for(lambda: "manip" in broker.services())
        bridge = make_bridge(broker.endpoint, telemetry="")
        assert bridge.dispatch(command("via-worker", "wait", steps=1)).accepted
        wait_for(lambda: bridge.query("via-worker").state.finished)
        assert STARTS["via-worker"] == 1
        # a worker's socket talks to the external broker only: its control thread steps
        assert STEPPED_ON["via-worker"] == "harness-control"
    finally:
        server.stop()


def test_with_its_own_broker_the_runtime_steps_its_commands_on_the_broker_thread(
        start_server, make_bridge):
    server = start_server(lease_s=None)
    bridge = make_bridge(server.endpoints["bind"], telemetry="")
    assert bridge.dispatch(command("inline", "wait", steps=2)).accepted
    wait_for(lambda: bridge.query("inline").state.finished)
    assert STARTS["inline"] == 1
    assert STEPPED_ON["inline"] == "harness-broker"  # answers and steps share one thread


def test_a_burst_larger_than_one_drain_loses_nothing(zctx, raw_socket):
    b = Broker(BrokerConfig(bind=f"{LOOPBACK}:*"), context=zctx,
               services=[FunctionService("echo", lambda req: dict(req.body))])
    b.start()
    try:
        dealer = raw_socket(zmq.DEALER, b.endpoint)
        n = 2500  # the broker drains at most 1000 messages between ticks
        for i in range(n):
            dealer.send_multipart(encode(Message(MessageType.REQUEST, i + 1, "echo",
                                                 body={"i": i})))
        got = set()
        while len(got) < n and dealer.poll(2000):
            got.add(decode(dealer.recv_multipart()).body["i"])
        assert got == set(range(n))
    finally:
        b.stop()


class _Guard:
    """Counts entries, and whether a handler ran inside it."""

    def __init__(self) -> None:
        self.inside = 0
        self.entered = 0

    def __call__(self) -> _Guard:
        return self

    def __enter__(self) -> None:
        self.inside += 1
        self.entered += 1

    def __exit__(self, *exc: object) -> None:
        self.inside -= 1


def test_a_guard_wraps_each_request_the_broker_or_a_worker_answers(zctx, client, broker):
    local_guard, worker_guard = _Guard(), _Guard()
    seen: list[tuple[str, int]] = []
    b = Broker(BrokerConfig(bind=f"{LOOPBACK}:*"), context=zctx, guard=local_guard,
               services=[FunctionService("here", lambda req: seen.append(
                   ("here", local_guard.inside)) or {})])
    b.start()
    w = ServiceWorker(FunctionService("there", lambda req: seen.append(
        ("there", worker_guard.inside)) or {}),
        WorkerConfig(broker=broker.endpoint, heartbeat_interval_s=BEAT), context=zctx,
        guard=worker_guard)
    w.start()
    local = LazyPirateClient(b.endpoint, context=zctx, timeout_s=1.0, retries=1)
    try:
        call(local, "here")
        wait_for(lambda: "there" in broker.services())
        call(client, "there")
        assert seen == [("here", 1), ("there", 1)]  # each handler ran inside its guard
        # and every guard was left (the reply goes out inside the guard, so the caller can
        # read it a moment before the answering thread leaves)
        wait_for(lambda: (local_guard.inside, worker_guard.inside) == (0, 0))
        assert local_guard.entered >= 1 and worker_guard.entered == 1
    finally:
        local.close()
        w.stop()
        b.stop()


def test_inline_work_runs_on_the_broker_thread_and_answers_requests_inside_it(zctx):
    import threading

    b = Broker(BrokerConfig(bind=f"{LOOPBACK}:*"), context=zctx,
               services=[FunctionService("echo", lambda req: dict(req.body))])
    b.start()
    caller = b.inline()
    client = LazyPirateClient(b.endpoint, context=zctx, timeout_s=5.0, retries=1)
    replies: list[dict] = []

    def ask() -> None:  # a client of its own: a client belongs to one thread
        other = LazyPirateClient(b.endpoint, context=zctx, timeout_s=5.0, retries=1)
        try:
            replies.append(dict(call(other, "echo", n=7).body))
        finally:
            other.close()

    asker = threading.Thread(target=ask)

    def work(give_way):  # type: ignore[no-untyped-def]
        asker.start()  # the request arrives while this work runs on the broker's thread
        deadline = time.monotonic() + 5.0
        while not give_way.pending():
            assert time.monotonic() < deadline, "the request never arrived"
            time.sleep(0.001)
        give_way.answer()
        return threading.current_thread().name

    try:
        assert caller.call(work) == "harness-broker"
        asker.join(5.0)
        assert replies == [{"n": 7}]  # answered from inside the work
        with pytest.raises(ValueError, match="raised on the broker's thread"):
            caller.call(lambda gw: (_ for _ in ()).throw(ValueError(
                "raised on the broker's thread")))
        assert caller.call(lambda gw: gw.pending()) is False  # the broker still serves
        assert call(client, "echo", n=8).body == {"n": 8}
    finally:
        client.close()
        caller.close()
        b.stop()


def test_inline_needs_a_running_broker_and_a_network_peer_cannot_pose_as_a_caller(
        zctx, raw_socket):
    b = Broker(BrokerConfig(bind=f"{LOOPBACK}:*"), context=zctx,
               services=[FunctionService("echo", lambda req: dict(req.body))])
    with pytest.raises(BridgeError, match="inline\\(\\) needs a started broker"):
        b.inline()
    b.start()
    ran: list[bool] = []
    caller = b.inline()
    try:
        # a peer whose routing id looks like a caller's (without the broker's secret) is an
        # ordinary client: its message is answered as a request, no inline work runs
        poser = zctx.socket(zmq.DEALER)
        poser.setsockopt(zmq.LINGER, 0)
        poser.setsockopt(zmq.ROUTING_ID, b"hbt-inline-" + b"\x01" * 16 + b"-0")
        poser.connect(b.endpoint)
        try:
            poser.send_multipart(encode(Message(MessageType.REQUEST, 1, "echo", body={"i": 1})))
            assert poser.poll(2000)
            assert decode(poser.recv_multipart()).body == {"i": 1}
        finally:
            poser.close(0)
        assert ran == []
        assert caller.call(lambda gw: ran.append(True) or 5) == 5
    finally:
        b.stop()
    with pytest.raises(BridgeError, match="the broker stopped before it ran the work"):
        caller.call(lambda gw: ran.append(False))
    caller.close()
    assert ran == [True]
