"""The live console's server: Starlette on uvicorn, in a thread of the run's own process.

``GET /`` is the page (the replay page fed live: :mod:`harness_bt.console.page`), ``GET
/state.json`` the latest state, ``WS /ws`` the feed and the controls. The server sends text
messages (``hello``; ``state``: a :func:`~harness_bt.console.feed.delta`; ``ack`` / ``error``
answering a request; ``alert`` and ``stage`` for breakpoints, controls and the stages of a
stop) and binary ones (camera images: :func:`~harness_bt.console.feed.image_message`).

Each client has its own bounded queue: the state and the images merge to the latest (a slow
browser gets fewer, newer updates), answers and alerts are kept in order; a client that lets
more than ``MAX_KEPT`` of those pile up is disconnected. The run never waits for a client:
it only appends to the feed's queue, and the controls reach it through
:class:`~harness_bt.console.control.RunControl`.

A control message is JSON ``{"op": ..., "token": ..., "id": ...}`` (``node`` and ``when`` for
``break`` / ``clear``), at most ``MAX_MESSAGE`` bytes; one without the run's token, malformed
JSON, an unknown control, a breakpoint on an unknown node or an oversized message is refused
with an ``error`` naming what was wrong, and the run never sees it. A control sent after the
run is over is answered ``RUN_OVER`` at once; at most ``MAX_QUEUED`` controls wait for the run
(more are answered ``BUSY``).

The doors (:mod:`harness_bt.console.guard`, :mod:`harness_bt.request_budget`): only requests
naming the console's own host and, when they carry one, its own origin pass; bound beyond
loopback the token is needed to read too; at most ``CONSOLE_BUDGET.max_connections``
connections at once (503 / close 1013 past it), WebSocket messages over ``WS_MAX_BYTES`` are
refused by the WebSocket layer (close 1009), and a control must be shallow JSON.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import difflib
import hmac
import json
import secrets
import threading
from collections.abc import Mapping
from typing import Any

from harness_bt import listen
from harness_bt.console.control import Breakpoint, Request, RunControl
from harness_bt.console.feed import Feed, delta
from harness_bt.console.guard import ConsoleDoor, Doorman
from harness_bt.console.page import console_page
from harness_bt.console.settings import CONSOLE_BUDGET, MAX_MESSAGE, ConsoleSettings
from harness_bt.request_budget import (
    Admission,
    AdmissionMiddleware,
    RequestRefused,
    bounded,
    measure,
)
from harness_bt.run.runner import TaskRunner
from harness_bt.viz.graph import drawing
from harness_bt.world import Perception

__all__ = ["CONSOLE_BUDGET", "CONTROLS", "MAX_KEPT", "MAX_MESSAGE", "WS_MAX_BYTES", "Console"]

CONTROLS = ("pause", "resume", "step", "break", "clear", "stop")
MAX_KEPT = 512
#: the largest WebSocket message read at all (larger: closed with 1009 by the WebSocket layer)
WS_MAX_BYTES = 16 * 1024


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class _Client:
    def __init__(self, ws: Any, number: int) -> None:
        self.ws = ws
        client = getattr(ws, "client", None)
        self.who = {"client": f"c{number}",
                    "peer": f"{client.host}:{client.port}" if client else "?",
                    "agent": str(ws.headers.get("user-agent", ""))[:80]}
        self.sent: dict[str, Any] | None = None
        self.kept: collections.deque[str] = collections.deque()
        self.images: dict[str, bytes] = {}
        self.wake = asyncio.Event()
        self.dropped = False


class Console:
    """The console of one run (see the module docstring): ``structure`` is the task's;
    ``settings`` where to listen (loopback, any free port by default), the token, rates and
    limits (:class:`~harness_bt.console.settings.ConsoleSettings`). It is the
    run's :class:`~harness_bt.run.episodes.RunWatch` (``run_episodes(..., watch=console)``);
    :meth:`start` before the run, :meth:`close` after."""

    def __init__(self, structure: Mapping[str, Any],
                 settings: ConsoleSettings | None = None) -> None:
        from starlette.applications import Starlette
        from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
        from starlette.routing import Route, WebSocketRoute

        s = self.settings = settings or ConsoleSettings()
        self.token = s.token or secrets.token_urlsafe(16)
        self.feed = Feed(structure, image_hz=s.image_hz, fold=s.fold)
        self.control = RunControl(start_paused=s.start_paused, on_change=self._control_changed,
                                  perceive=self.feed.perception)
        self.period = 1.0 / s.rate_hz
        self.clients: list[_Client] = []
        self.last_images: dict[str, bytes] = {}
        self.failed: str | None = None
        self.updates = 0
        self._number = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._control_status: dict[str, Any] = dict(self.control.status)
        self._nodes = self._node_names(structure)
        html = console_page(structure, fold=s.fold)

        async def index(request: Any) -> HTMLResponse | PlainTextResponse:
            return HTMLResponse(html)

        async def state(_: Any) -> JSONResponse:
            return JSONResponse(self.feed.state or {})

        @contextlib.asynccontextmanager
        async def lifespan(_: Any) -> Any:
            self._loop = asyncio.get_running_loop()
            pump = asyncio.ensure_future(self._pump())
            try:
                yield
            finally:
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pump

        self.app = Starlette(routes=[Route("/", index), Route("/state.json", state),
                                     WebSocketRoute("/ws", self._serve_client)],
                             lifespan=lifespan)
        self.socket = listen.bind(s.host, s.port, option="--console")
        self.host, self.port = self.socket.getsockname()[:2]
        self.over = False
        self.doorman = Doorman(s.host, self.port, self.token, allowed_hosts=s.allowed_hosts)
        self.admission = Admission(s.budget, server="the console")
        self.door = ConsoleDoor(self.app, self.doorman)
        self.asgi = AdmissionMiddleware(self.door, self.admission)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address, with the run's token (the controls need it)."""
        host = f"[{self.host}]" if ":" in str(self.host) else self.host
        return f"http://{host}:{self.port}/?token={self.token}"

    @staticmethod
    def _node_names(structure: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
        """Every name a breakpoint may use -> (phase, path): ``phase:path``, and a path or a
        node name when only one node has it."""
        keys: dict[str, tuple[str, str]] = {}
        counts: collections.Counter[str] = collections.Counter()
        for phase, nodes in structure.get("trees", {}).items():
            for n in nodes:
                keys[f"{phase}:{n['path']}"] = (phase, n["path"])
                for alias in {n["path"], n.get("name", "")}:
                    counts[alias] += 1
        for phase, nodes in structure.get("trees", {}).items():
            for n in nodes:
                for alias in (n["path"], n.get("name", "")):
                    if alias and counts[alias] == 1:
                        keys.setdefault(alias, (phase, n["path"]))
        return keys

    # ------------------------------------------------------------ RunWatch (the run's thread)

    def perception(self, perceive: Perception) -> Perception:
        return self.control.perception(perceive)

    def attach(self, runner: TaskRunner, index: int) -> None:
        """Watch ``runner``: its trace feeds the page; the controls reach it."""
        runner.trace.listeners.append(self.feed.on_event)
        self.control.attach(runner, index)

    def ticked(self, runner: TaskRunner) -> None:
        self.feed.encode()
        self.control.ticked(runner)

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Serve from a thread (returns once the server is up)."""
        import sys

        import uvicorn

        # The console's thread shares the interpreter with the run: hand the run the GIL back
        # within half a millisecond of asking (the default is 5 ms), so serving a browser
        # does not add to the run's decision latency.
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch, 0.0005))
        config = uvicorn.Config(self.asgi, log_level="warning", lifespan="on",
                                access_log=False, ws="wsproto", ws_max_size=WS_MAX_BYTES,
                                # uvicorn waits a float of seconds; its hint says int
                                timeout_graceful_shutdown=listen.GRACE_S)  # type: ignore[arg-type]
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [self.socket]},
                                        name="console-server", daemon=True)
        self._thread.start()

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop serving (a held run is let go first) and close the socket."""
        import sys

        self.control.close()
        if self._server is not None:
            self._server.should_exit = True
            sys.setswitchinterval(self._switch)
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        self.socket.close()

    def wait_sent(self, timeout_s: float = 5.0) -> bool:
        """Wait (from another thread) until every client has the latest state and nothing
        kept; False when that did not happen in time."""
        import time

        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.feed._queue or self.feed.dirty:
                time.sleep(0.02)
                continue
            if all(c.dropped or (c.sent is self.feed.state and not c.kept and not c.images)
                   for c in list(self.clients)):
                return True
            time.sleep(0.02)
        return False

    # ------------------------------------------------------------ the pump

    def _control_changed(self, status: dict[str, Any]) -> None:
        self._control_status = dict(status)  # read by the pump (a reference swap)

    async def _pump(self) -> None:
        """Fold the run's events and hand each client what changed, ``rate_hz`` at most. A
        failure here is reported once and never reaches the run."""
        while True:
            try:
                self._pump_once()
            except Exception as exc:  # the console may fail; the run goes on
                if not self.failed:
                    import traceback

                    traceback.print_exc()
                    self.failed = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(self.period)

    def run_over(self) -> None:
        """The run has ended: every control from now on (and any still waiting) is answered
        ``RUN_OVER``."""
        self.over = True
        self.control.answer_waiting("the run is over")

    def _pump_once(self) -> None:
        alerts = self.feed.drain()
        control = self._control_status
        if control.get("phase") == "finished" and self.control.waiting():
            self.control.answer_waiting("the run is over")
        if control != self.feed.control:
            self.feed.control = control
            self.feed.dirty = True
        if self.clients:
            for alert in alerts:
                self._keep_all(alert)
            if self.feed.dirty or self.feed.state is None:
                self.feed.build()
                self.updates += 1
                for c in self.clients:
                    c.wake.set()
            images = self.feed.images(held=bool(control.get("paused") or control.get(
                "held") or control.get("phase") == "finished"))
            self.last_images.update(images)
            for c in self.clients:
                for camera, message in images:
                    c.images[camera] = message  # the latest per camera
                if images:
                    c.wake.set()
        elif self.feed.dirty:
            self.feed.build()

    def _keep(self, c: _Client, message: Mapping[str, Any]) -> None:
        if len(c.kept) >= MAX_KEPT:
            c.dropped = True
        else:
            c.kept.append(_dumps(message))
        c.wake.set()

    def _keep_all(self, message: Mapping[str, Any]) -> None:
        for c in self.clients:
            self._keep(c, message)

    async def _send_loop(self, c: _Client) -> None:
        while not c.dropped:
            await c.wake.wait()
            c.wake.clear()
            while c.kept:
                await c.ws.send_text(c.kept.popleft())
            latest = self.feed.state
            if latest is not None and latest is not c.sent:
                await c.ws.send_text(_dumps({"type": "state", "d": delta(c.sent, latest)}))
                c.sent = latest
            while c.images:
                camera = next(iter(c.images))
                await c.ws.send_bytes(c.images.pop(camera))
        with contextlib.suppress(Exception):
            await c.ws.close(code=1008, reason="too slow: more than "
                             f"{MAX_KEPT} answers and alerts waiting")

    # ------------------------------------------------------------ one client

    async def _serve_client(self, ws: Any) -> None:
        await ws.accept()
        self._number += 1
        c = _Client(ws, self._number)
        ids = {nid: f"{n.phase}:{n.path}"
               for nid, n in drawing(self.feed.structure, fold=self.feed.fold).nodes.items()}
        await ws.send_text(_dumps({"type": "hello", "client": c.who["client"],
                                   "nodes": ids, "controls": list(CONTROLS),
                                   "max_message": MAX_MESSAGE}))
        c.images = dict(self.last_images)  # what the cameras showed last
        self.clients.append(c)
        self.feed.watching = True
        c.wake.set()
        sender = asyncio.ensure_future(self._send_loop(c))
        try:
            while not sender.done():
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:
                    data = message.get("bytes") or b""
                    self._keep(c, self._error(None, "BAD_MESSAGE", f"a binary message "
                                              f"({len(data)} bytes): controls are JSON text"))
                    continue
                self._receive(c, text)
        finally:
            self.clients.remove(c)
            self.feed.watching = bool(self.clients)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender

    @staticmethod
    def _error(rid: Any, code: str, message: str) -> dict[str, Any]:
        return {"type": "error", "id": rid, "code": code, "message": message}

    def _receive(self, c: _Client, text: str) -> None:
        size = len(text.encode("utf-8"))
        if size > MAX_MESSAGE:
            self._keep(c, self._error(None, "TOO_LARGE", f"message of {size} bytes refused: "
                                      f"a control is at most {MAX_MESSAGE} bytes"))
            return
        try:
            msg = json.loads(text)
            measure(msg, self.admission.budget, where="a control")
        except json.JSONDecodeError as exc:
            self._keep(c, self._error(None, "BAD_JSON", f"not JSON ({exc.msg} at "
                                      f"character {exc.pos}): send e.g. "
                                      '{"op": "pause", "token": "..."}'))
            return
        except RecursionError:
            self._keep(c, self._error(None, "TOO_DEEP", "a control nested too deeply: send "
                                      'e.g. {"op": "pause", "token": "..."}'))
            return
        except RequestRefused as exc:
            self._keep(c, self._error(None, exc.code, f"{exc.message}: send e.g. "
                                      '{"op": "pause", "token": "..."}'))
            return
        if not isinstance(msg, dict):
            self._keep(c, self._error(None, "BAD_MESSAGE", "a control is a JSON object, "
                                      f"not {type(msg).__name__}"))
            return
        rid = msg.get("id")
        token = msg.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(),
                                                                 self.token.encode()):
            self._keep(c, self._error(rid, "BAD_TOKEN", ("no token" if token is None else
                                      "wrong token") + ": controls need the run's token "
                                      "(open the address harness run printed, with ?token=)"))
            return
        op = msg.get("op")
        if op not in CONTROLS:
            near = difflib.get_close_matches(str(op), CONTROLS, n=1)
            self._keep(c, self._error(rid, "UNKNOWN_CONTROL", f"unknown control "
                                      f"{bounded(op, 40)}; "
                                      f"known: {', '.join(CONTROLS)}"
                                      + (f"; did you mean {near[0]!r}?" if near else "")))
            return
        bp = None
        if op in ("break", "clear"):
            bp = self._breakpoint(c, rid, msg)
            if bp is None:
                return
        if self.over or self._control_status.get("phase") == "finished":
            self._keep(c, {"type": "ack", "id": rid, "op": op, "ok": False, "error": "RUN_OVER",
                           "message": f"cannot {op}: the run is over"})
            return
        loop = asyncio.get_running_loop()

        def reply(answer: dict[str, Any]) -> None:  # from the run's thread
            loop.call_soon_threadsafe(self._keep, c, answer)

        if not self.control.submit(Request(op, who=dict(c.who), breakpoint=bp, id=rid,
                                           reply=reply)):
            self._keep(c, self._error(rid, "BUSY", f"{self.control.max_queued} controls are "
                                      "already waiting for the run: wait for their answers"))
            return
        self._keep(c, {"type": "ack", "id": rid, "op": op, "stage": "received"})

    def _breakpoint(self, c: _Client, rid: Any, msg: Mapping[str, Any]) -> Breakpoint | None:
        node, when = msg.get("node"), msg.get("when", "before")
        if when not in ("before", "change", "both"):
            self._keep(c, self._error(rid, "BAD_BREAKPOINT", f"when={bounded(when, 40)}: a "
                                      "breakpoint "
                                      "holds 'before' a node ticks, on a status 'change', "
                                      "or 'both'"))
            return None
        where = self._nodes.get(str(node)) if isinstance(node, str) else None
        if where is None:
            near = difflib.get_close_matches(str(node), list(self._nodes), n=3)
            self._keep(c, self._error(rid, "UNKNOWN_NODE", f"no node {bounded(node, 80)} in task "
                                      f"{self.feed.structure.get('task')!r}"
                                      + (f"; did you mean {', '.join(map(repr, near))}?"
                                         if near else "; name it PHASE:PATH")))
            return None
        return Breakpoint(where[0], where[1], before=when in ("before", "both"),
                          change=when in ("change", "both"))
