"""The console's doors: it answers only its own page (Host and Origin checked on the page,
``/state.json`` and the WebSocket; a real Chromium page from another origin, and the console
reached under a foreign name as DNS rebinding would, are refused), the token is needed to read
when it listens beyond loopback, controls after the run are answered, the control queue and the
connections are bounded, and hostile control messages are answered with their reason while the
console serves on."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_bt.console import Console, ConsoleSettings
from harness_bt.console.control import MAX_QUEUED, Request, RunControl
from harness_bt.errors import DefinitionError
from harness_bt.request_budget import RequestBudget
from harness_bt.testing import example
from tests.harness_bt.console.conftest import LiveRun, until
from tests.harness_bt.helpers import chromium

TIMEOUT_S = 30.0


@pytest.fixture
def console(closing: Callable[..., Any]) -> Console:
    """A console of the running example, serving, with no run attached (nothing drains its
    control queue)."""
    made = closing(Console(example.fetch_cup_task().structure()))
    made.start()
    return made


def ws_to(console: Console, path: str = "/ws", **kw: Any) -> Any:
    import websocket

    return websocket.create_connection(f"ws://127.0.0.1:{console.port}{path}",
                                       timeout=TIMEOUT_S, **kw)


@pytest.fixture
def other_site() -> Iterator[Callable[[str], str]]:
    """``other_site(html) -> url``: a page served from another origin (another port)."""
    pages: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, b"")
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="other-site")
    thread.start()

    def page(html: str) -> str:
        pages["/evil.html"] = html.encode()
        return f"http://127.0.0.1:{server.server_address[1]}/evil.html"

    try:
        yield page
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


EVIL = """<!doctype html><title>elsewhere</title><script>
window.result = {};
const ws = new WebSocket('ws://127.0.0.1:PORT/ws?token=TOKEN');
ws.onopen = () => { window.result.ws = 'open'; };
ws.onmessage = () => { window.result.ws = 'message'; };
ws.onclose = (e) => { window.result.ws = window.result.ws || ('closed ' + e.code); };
fetch('http://127.0.0.1:PORT/state.json?token=TOKEN')
  .then(r => r.text()).then(t => { window.result.state = 'read ' + t.slice(0, 40); })
  .catch(e => { window.result.state = 'failed'; });
</script>"""


def test_a_page_from_another_origin_can_neither_watch_nor_read_the_console(
        live: LiveRun, other_site: Callable[[str], str], tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    console = live.console
    page = EVIL.replace("PORT", str(console.port)).replace("TOKEN", console.token)
    with chromium(tmp_path) as driver:
        driver.get(other_site(page))
        result = WebDriverWait(driver, 60).until(lambda d: d.execute_script(
            "return window.result.ws && window.result.state ? window.result : null"))
        assert result == {"ws": "closed 1006", "state": "failed"}
        assert console.door.refused >= 2  # the server refused both, not only the browser
        # the same browser on the console's own page is served (the refusal is the origin's)
        driver.get(console.url)
        WebDriverWait(driver, 60).until(lambda d: d.execute_script(
            "return document.body.dataset.link === 'on'"))


def test_the_console_reached_under_a_foreign_name_answers_nothing(
        live: LiveRun, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    console = live.console
    # the browser resolves rebind.test to this machine, as a rebinding DNS server would
    with chromium(tmp_path, "1000,700", "--host-resolver-rules=MAP rebind.test 127.0.0.1"
                  ) as driver:
        driver.get(f"http://rebind.test:{console.port}/?token={console.token}")
        text = driver.find_element(By.TAG_NAME, "body").text
        assert "FOREIGN_HOST" in text and "is not this console" in text
        driver.get(f"http://rebind.test:{console.port}/state.json")
        assert "FOREIGN_HOST" in driver.find_element(By.TAG_NAME, "body").text


@pytest.mark.parametrize("headers, status, code", [
    ({}, 200, None),
    ({"host": "localhost:{port}"}, 200, None),
    ({"host": "evil.example:{port}"}, 403, "FOREIGN_HOST"),
    ({"host": "127.0.0.1:1"}, 403, "FOREIGN_HOST"),
    ({"origin": "http://evil.example"}, 403, "FOREIGN_ORIGIN"),
    ({"origin": "http://127.0.0.1:1"}, 403, "FOREIGN_ORIGIN"),
    ({"origin": "null"}, 403, "FOREIGN_ORIGIN"),
    ({"origin": "http://127.0.0.1:{port}"}, 200, None),
])
@pytest.mark.parametrize("path", ["/", "/state.json"])
def test_only_the_consoles_own_host_and_origin_are_served(
        console: Console, path: str, headers: dict[str, str], status: int,
        code: str | None) -> None:
    sent = {k: v.format(port=console.port) for k, v in headers.items()}
    r = httpx.get(f"http://127.0.0.1:{console.port}{path}", headers=sent, timeout=TIMEOUT_S)
    assert r.status_code == status, r.text[:200]
    if code:
        assert r.json()["error"] == code


def test_a_websocket_from_a_foreign_origin_is_refused_at_the_handshake(
        console: Console) -> None:
    import websocket

    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        ws_to(console, origin="http://evil.example")
    assert refused.value.status_code == 403
    ws = ws_to(console, origin=f"http://127.0.0.1:{console.port}")
    try:
        assert json.loads(ws.recv())["type"] == "hello"
    finally:
        ws.close()


def test_bound_beyond_loopback_reading_needs_the_token(closing: Callable[..., Any]) -> None:
    import websocket

    console = closing(Console(example.fetch_cup_task().structure(),
                              ConsoleSettings(host="0.0.0.0")))
    console.start()
    base = f"http://127.0.0.1:{console.port}"
    assert httpx.get(base + "/", timeout=TIMEOUT_S).status_code == 401
    assert httpx.get(base + "/state.json", timeout=TIMEOUT_S).json()["error"] == "BAD_TOKEN"
    assert httpx.get(base + "/state.json?token=nope", timeout=TIMEOUT_S).status_code == 401
    assert httpx.get(f"{base}/?token={console.token}", timeout=TIMEOUT_S).status_code == 200
    assert httpx.get(base + "/state.json", timeout=TIMEOUT_S, headers={
        "authorization": f"Bearer {console.token}"}).status_code == 200
    with pytest.raises(websocket.WebSocketBadStatusException):
        ws_to(console)
    ws = ws_to(console, f"/ws?token={console.token}")
    try:
        assert json.loads(ws.recv())["type"] == "hello"
    finally:
        ws.close()


def test_controls_sent_after_the_run_ended_are_answered_the_run_is_over(live: LiveRun) -> None:
    ws = live.ws()
    try:
        live.control(ws, "stop", id=1)
        until(ws, lambda m: m.get("type") == "ack" and m.get("id") == 1 and "ok" in m)
        live.thread.join(TIMEOUT_S)
        assert live.runner.phase == "finished"
        for n, op in enumerate(["pause", "resume", "stop"], start=2):
            live.control(ws, op, id=n)
            answer = until(ws, lambda m, n=n: m.get("id") == n)
            assert answer == {"type": "ack", "id": n, "op": op, "ok": False,
                              "error": "RUN_OVER", "message": f"cannot {op}: the run is over"}
        assert live.console.control.waiting() == 0
    finally:
        ws.close()


def test_the_control_queue_is_bounded_and_the_next_control_is_answered_busy(
        console: Console) -> None:
    ws = ws_to(console)
    try:
        for n in range(MAX_QUEUED + 1):
            ws.send(json.dumps({"op": "pause", "token": console.token, "id": n}))
        answers = [until(ws, lambda m: m.get("type") in ("ack", "error"))
                   for _ in range(MAX_QUEUED + 1)]
        assert [a["type"] for a in answers] == ["ack"] * MAX_QUEUED + ["error"]
        assert answers[-1]["code"] == "BUSY" and "already waiting" in answers[-1]["message"]
        assert console.control.waiting() == MAX_QUEUED
        console.run_over()  # what harness run does when the run ends
        assert console.control.waiting() == 0
    finally:
        ws.close()


def test_the_run_control_queue_holds_at_most_max_queued_and_answers_them_when_over(
        ) -> None:
    control = RunControl()
    answers: list[dict[str, Any]] = []
    assert all(control.submit(Request("pause", id=n, reply=answers.append))
               for n in range(MAX_QUEUED))
    assert control.submit(Request("pause", id="extra", reply=answers.append)) is False
    control.answer_waiting("the run is over")
    assert [a["id"] for a in answers] == list(range(MAX_QUEUED))
    assert answers[0] == {"type": "ack", "id": 0, "op": "pause", "ok": False,
                          "error": "RUN_OVER", "message": "cannot pause: the run is over"}
    assert control.waiting() == 0


def test_connections_past_the_cap_are_refused_503_and_served_again_after(
        closing: Callable[..., Any]) -> None:
    import websocket

    budget = RequestBudget(max_connections=2, max_body_bytes=4096)
    console = closing(Console(example.fetch_cup_task().structure(), ConsoleSettings(budget=budget)))
    console.start()
    held = [ws_to(console), ws_to(console)]
    try:
        r = httpx.get(f"http://127.0.0.1:{console.port}/state.json", timeout=TIMEOUT_S)
        assert r.status_code == 503 and r.json()["error"]["code"] == "SERVER_BUSY"
        assert "max_connections=2" in r.json()["detail"]
        with pytest.raises(websocket.WebSocketBadStatusException):
            ws_to(console)
    finally:
        for ws in held:
            ws.close()
    for _ in range(100):  # the server notices the closes
        r = httpx.get(f"http://127.0.0.1:{console.port}/state.json", timeout=TIMEOUT_S)
        if r.status_code == 200:
            break
    assert r.status_code == 200


def test_the_consoles_port_in_use_names_the_console_option() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(DefinitionError) as err:
            Console(example.fetch_cup_task().structure(), ConsoleSettings(port=port))
    assert err.value.code == "PORT_IN_USE"
    assert f"--console {port}: port {port} on 127.0.0.1 is in use" in str(err.value)
    assert "--serve" not in str(err.value)


def test_a_message_over_the_websocket_limit_closes_only_that_client(console: Console) -> None:
    import websocket

    other = ws_to(console)
    ws = ws_to(console)
    try:
        ws.send("x" * (64 * 1024))
        with pytest.raises((websocket.WebSocketConnectionClosedException, ConnectionError)):
            while True:
                ws.recv()
        assert json.loads(other.recv())["type"] == "hello"
        other.send(json.dumps({"op": "pause", "token": console.token, "id": 1}))
        assert until(other, lambda m: m.get("id") == 1)["type"] == "ack"
    finally:
        ws.close()
        other.close()


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda kids: st.one_of(st.lists(kids, max_size=4),
                           st.dictionaries(st.text(max_size=5), kids, max_size=4)),
    max_leaves=30)


@settings(max_examples=40, derandomize=True, deadline=None)
@given(value=json_values, depth=st.integers(0, 3000))
def test_any_json_control_however_nested_is_answered_and_the_console_serves_on(
        value: Any, depth: int) -> None:
    text = "[" * depth + json.dumps(value) + "]" * depth
    console = Console(example.fetch_cup_task().structure())
    console.start()
    try:
        ws = ws_to(console)
        try:
            ws.send(text)
            answer = until(ws, lambda m: m.get("type") in ("error", "ack"))
            assert answer["type"] == "error" and answer["code"] in (
                "TOO_LARGE", "TOO_DEEP", "TOO_MANY_VALUES", "TOO_MUCH_TEXT", "BAD_MESSAGE",
                "BAD_TOKEN"), answer
            ws.send(json.dumps({"op": "pause", "token": console.token, "id": "after"}))
            assert until(ws, lambda m: m.get("id") == "after")["type"] == "ack"
        finally:
            ws.close()
    finally:
        console.close()
