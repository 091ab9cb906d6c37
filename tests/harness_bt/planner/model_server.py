"""A scripted OpenAI-compatible endpoint for the model planner's tests: a Starlette app
served by uvicorn in a thread on a free loopback port. ``POST /v1/chat/completions`` answers
what the test put in ``answers`` (one per call, in order): a message content (the model's
JSON), a raw body, an HTTP error, or a stall until the server stops (past the client's
timeout). Every request body is kept in ``requests``."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route


@dataclass(frozen=True)
class Content:
    """The model's message: ``choices[0].message.content``."""

    text: str


@dataclass(frozen=True)
class Raw:
    """A body as it is (not a chat completion)."""

    text: str
    status: int = 200


@dataclass(frozen=True)
class Stall:
    """No answer until the server stops."""


Answer = Content | Raw | Stall


@dataclass
class ModelServer:
    url: str
    answers: list[Answer] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)


def _app(state: ModelServer) -> Starlette:
    async def completions(request: Request) -> Response:
        state.requests.append(json.loads(await request.body()))
        state.headers.append(dict(request.headers))
        answer = state.answers.pop(0) if state.answers else Raw("no answer scripted", 500)
        if isinstance(answer, Stall):
            while not state.stopping.is_set():
                await asyncio.sleep(0.01)
            return PlainTextResponse("stopped", status_code=503)
        if isinstance(answer, Raw):
            return PlainTextResponse(answer.text, status_code=answer.status)
        return JSONResponse({"id": "chatcmpl-1", "object": "chat.completion",
                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant", "content": answer.text}}]})

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


@contextmanager
def model_server() -> Iterator[ModelServer]:
    """The server, up on a free loopback port; stopped, its thread joined and its socket
    closed on the way out."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    state = ModelServer(f"http://127.0.0.1:{port}/v1")
    server = uvicorn.Server(uvicorn.Config(_app(state), log_level="warning", lifespan="off",
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="model-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10.0
    while not server.started:  # up in milliseconds; the deadline only guards a broken start
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the scripted model server did not start")
        time.sleep(0.005)
    try:
        yield state
    finally:
        state.stopping.set()
        server.should_exit = True
        thread.join(timeout=10.0)
        sock.close()
        assert not thread.is_alive(), "the scripted model server did not stop"
