"""The console's WebSocket as a client sees it: the state as deltas, the controls applied on
the run's thread and traced with who and when, bad input refused clearly without touching
the run, a stop reported stage by stage, a stalled client that changes nothing."""

from __future__ import annotations

import json
from typing import Any

from harness_bt.console import delta, image_message
from harness_bt.console.server import MAX_MESSAGE
from tests.harness_bt.console.conftest import LiveRun, recv, until


def hello_and_first_state(live: LiveRun, ws: Any) -> dict[str, Any]:
    hello = recv(ws)
    assert hello["type"] == "hello" and hello["nodes"]["n0"] == "navigate:go"
    state: dict[str, Any] = {}
    while not (state.get("tick") == 1 and state.get("control", {}).get("tick") == 1):
        m = until(ws, lambda m: m["type"] == "state")
        state = dict(m["d"]) if m["d"].get("full") else {**state, **m["d"]}
    assert state["control"]["paused"]  # held after its first tick
    return state


def test_bad_input_is_refused_clearly_and_the_run_never_sees_it(live: LiveRun) -> None:
    ws = live.ws()
    try:
        first = hello_and_first_state(live, ws)
        assert first["config"] == ["navigate"]
        token = live.console.token
        cases = [
            (json.dumps({"op": "pause"}), "BAD_TOKEN", "no token: controls need the run's token"),
            (json.dumps({"op": "pause", "token": "nope"}), "BAD_TOKEN", "wrong token"),
            ("{pause", "BAD_JSON", "not JSON (Expecting property name enclosed in double "
                                   "quotes at character 1)"),
            ("[1, 2]", "BAD_MESSAGE", "a control is a JSON object, not list"),
            (json.dumps({"op": "jump", "token": token}), "UNKNOWN_CONTROL",
             "unknown control 'jump'; known: pause, resume, step, break, clear, stop"),
            (json.dumps({"op": "stpo", "token": token}), "UNKNOWN_CONTROL",
             "did you mean 'stop'?"),
            (json.dumps({"op": "break", "node": "grsp", "token": token}), "UNKNOWN_NODE",
             "no node 'grsp' in task 'fetch_cup'; did you mean"),
            (json.dumps({"op": "break", "node": "close", "when": "later", "token": token}),
             "BAD_BREAKPOINT", "when='later'"),
            (json.dumps({"op": "pause", "token": token, "pad": "x" * MAX_MESSAGE}),
             "TOO_LARGE", f"a control is at most {MAX_MESSAGE} bytes"),
        ]
        for text, code, words in cases:
            ws.send(text)
            error = until(ws, lambda m: m["type"] == "error")
            assert error["code"] == code and words in error["message"], (text[:40], error)
        ws.send_binary(b"\x00\x01")
        error = until(ws, lambda m: m["type"] == "error")
        assert error["code"] == "BAD_MESSAGE" and "controls are JSON text" in error["message"]
        # the run saw none of it: still paused after its first tick, nothing traced
        assert live.runner.ticks == 1 and live.console.control.status["paused"]
        assert live.runner.trace.of_kind("control") == []
        live.control(ws, "step", id=7)
        ack = until(ws, lambda m: m["type"] == "ack" and m.get("ok"))
        assert ack == {"type": "ack", "id": 7, "op": "step", "ok": True, "tick": 1}
    finally:
        ws.close()


def test_pause_step_breakpoint_and_staged_stop_are_applied_and_traced(live: LiveRun) -> None:
    ws = live.ws(header=["User-Agent: protocol-test"])
    try:
        hello_and_first_state(live, ws)
        live.control(ws, "step", id=1)
        state = until(ws, lambda m: m["type"] == "state" and m["d"].get("tick") == 2)
        assert state["d"]["control"]["paused"]  # one tick, then paused again
        live.control(ws, "step", id=2)
        until(ws, lambda m: m["type"] == "state" and m["d"].get("tick") == 3)
        assert live.runner.ticks == 3
        live.control(ws, "break", node="close", when="before", id=3)
        until(ws, lambda m: m["type"] == "ack" and m["id"] == 3 and "ok" in m)
        live.control(ws, "pause", id=4)
        refused = until(ws, lambda m: m["type"] == "ack" and m["id"] == 4 and "ok" in m)
        assert refused["ok"] is False and refused["error"] == "ALREADY_PAUSED"
        live.control(ws, "resume", id=5)
        held = until(ws, lambda m: m["type"] == "alert" and m.get("op") == "breakpoint")
        assert held["node"] == "grasp:pick/steps/close" and held["when"] == "before"
        tick = held["tick"]
        assert live.console.control.held_at["node"] == "grasp:pick/steps/close"
        assert live.runner.ticks == tick  # held inside that tick
        live.control(ws, "stop", id=6)
        stages = []
        while "run_end" not in stages:
            m = recv(ws)
            if m["type"] == "stage":
                stages.append(m["stage"])
        assert stages[:2] == ["requested", "halted"] and stages[-1] == "run_end"
        assert "confirmed" in stages and "unknown" not in stages
        assert stages.index("cancel_accepted") < stages.index("confirmed")
        live.thread.join(30)
        assert (live.runner.result.outcome, live.runner.result.reason) == (
            "aborted", "aborted_stopped")
        controls = [(e["data"]["op"], e["data"]["who"]["client"], e["data"]["ticks"])
                    for e in live.runner.trace.of_kind("control")]
        assert controls == [("step", "c1", 1), ("paused", "run", 2), ("step", "c1", 2),
                            ("paused", "run", 3), ("break", "c1", 3), ("resume", "c1", 3),
                            ("breakpoint", "run", tick), ("stop", "c1", tick),
                            ("stopped", "c1", tick)]
        first = live.runner.trace.of_kind("control")[0]["data"]
        assert first["who"]["agent"] == "protocol-test" and first["who"]["peer"].startswith(
            "127.0.0.1:") and first["received_wall"] > 0
    finally:
        ws.close()


def test_a_stalled_client_does_not_hold_the_run_or_the_other_client(live: LiveRun) -> None:
    import socket

    stalled = live.ws(sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),))  # never reads
    reader = live.ws()
    try:
        hello_and_first_state(live, reader)
        live.control(reader, "break", node="close")
        live.control(reader, "resume")
        until(reader, lambda m: m["type"] == "alert" and m.get("op") == "breakpoint")
        assert live.runner.ticks > 10  # it ran on while one client read nothing
        live.control(reader, "stop")
        end = until(reader, lambda m: m["type"] == "alert" and m.get("kind") == "run_end")
        assert end["reason"] == "aborted_stopped"
        live.thread.join(30)
        assert live.runner.phase == "finished"
        final = until(reader, lambda m: m["type"] == "state" and m["d"].get("result"))
        assert final["d"]["result"] == {"outcome": "aborted", "reason": "aborted_stopped"}
    finally:
        stalled.close()
        reader.close()


def test_a_delta_carries_what_changed_not_the_whole_tree() -> None:
    nodes = {f"n{i}": ["NOT_TICKED", ""] for i in range(1000)}
    before = {"tick": 1, "nodes": nodes, "config": ["a"], "ledger": {}}
    after = {"tick": 2, "nodes": {**nodes, "n7": ["RUNNING", "#1 RUNNING"]}, "config": ["a"],
             "ledger": {"c1": ["grasp", "RUNNING", "", 0.0, 0.1, 0.1]}}
    d = delta(before, after)
    assert d == {"tick": 2, "nodes": {"n7": ["RUNNING", "#1 RUNNING"]},
                 "ledger": {"c1": ["grasp", "RUNNING", "", 0.0, 0.1, 0.1]}}
    assert delta(None, after)["full"] is True
    gone = delta(after, {**after, "nodes": {k: v for k, v in after["nodes"].items()
                                            if k != "n3"}})
    assert gone == {"-nodes": ["n3"]}
    message = image_message({"camera": "front"}, b"\xff\xd8jpeg")
    size = int.from_bytes(message[:4], "big")
    assert json.loads(message[4:4 + size]) == {"camera": "front"}
    assert message[4 + size:] == b"\xff\xd8jpeg"
