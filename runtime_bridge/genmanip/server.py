"""A GenManip-compatible HTTP server over any "worker environment".

Routes as upstream (``POST /create_workers``, ``/reset``, ``/step``, ``/kill``; ``GET /docs``
answers 200), with what upstream lacks: bodies are read with an unpickler that refuses every
global (400), bodies over the limit are refused (413), actions are checked per embodiment
before any worker moves (500 with a ``detail`` that names the field, as upstream's status for a
bad action), an optional bearer token (401), the negotiated fast paths (``Accept:
application/x-harness-bt-frames``; on the same host, shared memory: ``shm/open``, ``shm/release``
and :mod:`runtime_bridge.genmanip.shm`), and routes of ours under ``/harness/``: ``info`` and
``results`` (per-episode results and, for tests and benchmarks, each worker's ground truth).

Every request passes the shared request budget first (:mod:`harness_bt.request_budget`):
connections and body bytes in flight are capped (503), a body must arrive within the budget's
``body_timeout_s`` (408); bodies are decoded off the event loop, pickles with the stricter
reader, and measured (depth, values, text as if shared references were copies) before any
route reads them (400); worker ids are short strings; every diagnostic quotes a bounded
excerpt of what was sent.
"""

from __future__ import annotations

import asyncio
import hmac
import math
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from harness_bt._version import __version__
from harness_bt.errors import DefinitionError, HarnessError
from harness_bt.request_budget import (
    Admission,
    AdmissionMiddleware,
    RequestBudget,
    RequestRefused,
    bounded,
    check_id,
    loads_json,
    off_loop,
)
from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.actions import GenManipEmbodiment, ValidatedAction, validate_action
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.shm.link import OPEN_ROUTE, RELEASE_ROUTE
from runtime_bridge.genmanip.shm.writer import CLAIM_HEADER, STATUS_HEADER, ShmConfig, ShmSessions

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "AppSettings", "TransportFaultSource", "WorkerEnv",
           "WorkerFactory", "create_app"]

DEFAULT_MAX_REQUEST_BYTES = 8 * 1024 * 1024
#: the most worker ids one request may name
MAX_WORKER_IDS = 1024
DROPPED_DETAIL = "injected fault: the response to this /step was dropped (the step was applied)"


@runtime_checkable
class WorkerEnv(Protocol):
    """What the server drives per worker id. ``reset``/``step`` return one worker's entry of a
    GenManip response: ``{"obs": OBS or None, "metric": dict or None}``. Optional methods
    ``results()`` and ``ground_truth()`` feed ``GET /harness/results``."""

    def reset(self) -> dict[str, Any]: ...

    def step(self, message: Mapping[str, Any] | ValidatedAction) -> dict[str, Any]: ...

    def close(self) -> None: ...


WorkerFactory = Callable[[str], WorkerEnv]


class TransportFaultSource(Protocol):
    """Decides per ``/step`` whether to ``"drop"`` or ``"delay"`` the answer (or None)."""

    fired: list[dict[str, Any]]

    def draw(self, count: int) -> str | None: ...


def _error_response(exc: HarnessError, status: int) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": str(exc), "error": exc.to_dict()})


class _Workers:
    """Worker id -> environment, with one lock per worker (a step runs alone on its worker)."""

    def __init__(self, factory: WorkerFactory) -> None:
        self.factory = factory
        self.envs: dict[str, WorkerEnv] = {}
        self.locks: dict[str, threading.Lock] = {}
        self.guard = threading.Lock()

    def create(self, ids: list[str]) -> None:
        with self.guard:
            for wid in ids:
                if wid not in self.envs:
                    self.envs[wid] = self.factory(wid)
                    self.locks[wid] = threading.Lock()

    def kill(self, ids: list[str] | None) -> None:
        with self.guard:
            for wid in list(self.envs) if ids is None else ids:
                env = self.envs.pop(wid, None)
                self.locks.pop(wid, None)
                if env is not None:
                    env.close()

    def get(self, wid: Any, route: str) -> tuple[WorkerEnv, threading.Lock]:
        key = wid if isinstance(wid, str) else bounded(wid, 64)
        if key not in self.envs:
            known = bounded(sorted(self.envs), 200) if self.envs else "(none)"
            raise HttpError("UNKNOWN_WORKER", f"{route}: worker {bounded(wid, 64)} does not "
                            f"exist; known: {known}", http_status=500,
                            where=f"{route} worker {bounded(wid, 64)}",
                            fix="POST /create_workers with this worker id first")
        return self.envs[key], self.locks[key]


def _worker_ids(payload: Any, route: str, budget: RequestBudget) -> list[str]:
    data = payload.get("data") if isinstance(payload, Mapping) else None
    ids = data.get("worker_ids") if isinstance(data, Mapping) else None
    if not isinstance(ids, list) or not ids or len(ids) > MAX_WORKER_IDS:
        raise HttpError("BAD_REQUEST", f"{route}: expected JSON {{\"data\": {{\"worker_ids\": "
                        f"[\"0\", ...]}}}} (1 to {MAX_WORKER_IDS} ids), got "
                        f"{bounded(payload)}", http_status=400, where=route,
                        fix="send a non-empty list of worker id strings")
    return [_worker_id(w, route, budget) for w in ids]


def _worker_id(value: Any, route: str, budget: RequestBudget) -> str:
    try:
        return check_id(value, budget, where=route)
    except RequestRefused as exc:
        raise HttpError(exc.code, exc.message, http_status=400, where=route,
                        fix=exc.fix) from None


@dataclass(frozen=True)
class AppSettings:
    """How a GenManip app answers: ``token``: the bearer token every route wants (None:
    none); ``embodiment``: the robot whose actions ``/step`` accepts; ``budget``: the request
    budget (body size, connections, bytes in flight; default: :class:`RequestBudget` with
    ``max_body_bytes=DEFAULT_MAX_REQUEST_BYTES``); ``transport_faults``: dropped / delayed
    ``/step`` answers to inject, held ``drop_hold_s`` / delayed ``delay_s``; ``title``: the
    OpenAPI title; ``shm``: the shared-memory fast path for harness-bt clients on the same
    host (True: the default :class:`ShmConfig`; False: never)."""

    token: str | None = None
    embodiment: GenManipEmbodiment | str = GenManipEmbodiment.FRANKA_PANDA
    budget: RequestBudget | None = None
    transport_faults: TransportFaultSource | None = None
    delay_s: float = 0.5
    drop_hold_s: float = 30.0
    title: str = "harness-bt GenManip server"
    shm: ShmConfig | bool = True

    def __post_init__(self) -> None:
        if self.token is not None and not (isinstance(self.token, str) and self.token):
            raise DefinitionError("INVALID_OPTION", "the server's token is empty",
                                  fix="pass a non-empty token, or None for no token")
        for name in ("delay_s", "drop_hold_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise DefinitionError("INVALID_OPTION", f"{name}={value!r} is not a number "
                                      "of seconds >= 0", fix=f"use e.g. {name}="
                                      f"{getattr(AppSettings, name)}")
        object.__setattr__(self, "embodiment", GenManipEmbodiment(self.embodiment))


def create_app(factory: WorkerFactory, settings: AppSettings | None = None) -> FastAPI:
    """A FastAPI app serving the GenManip routes over the environments ``factory`` makes, as
    ``settings`` says (:class:`AppSettings`: token, embodiment, request budget, transport
    faults, shared memory). Shared-memory segments are unlinked when the app stops and stale
    ones of its prefix removed when it starts."""
    s = settings or AppSettings()
    token, shm, transport_faults = s.token, s.shm, s.transport_faults
    delay_s, drop_hold_s = s.delay_s, s.drop_hold_s
    budget = s.budget or RequestBudget(max_body_bytes=DEFAULT_MAX_REQUEST_BYTES)
    max_request_bytes = budget.max_body_bytes
    workers = _Workers(factory)
    embodiment = GenManipEmbodiment(s.embodiment)
    sessions: ShmSessions | None = None
    if shm is not False:
        sessions = ShmSessions(shm if isinstance(shm, ShmConfig) else None)
        if not sessions.available:
            sessions = None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if sessions is not None:
            await run_in_threadpool(sessions.start)
        try:
            yield
        finally:
            await run_in_threadpool(workers.kill, None)
            if sessions is not None:
                sessions.close()

    def check_token(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise HttpError("UNAUTHORIZED", f"{request.url.path}: missing or wrong bearer token",
                            http_status=401, where=request.url.path,
                            fix="send the header 'Authorization: Bearer <token>' with the token "
                            "the server was started with")

    # the dependency guards every route of ours; /docs and /openapi.json stay open (health)
    app = FastAPI(title=s.title, version=__version__, docs_url="/docs", lifespan=lifespan,
                  dependencies=[Depends(check_token)])
    app.state.workers = workers
    app.state.admission = admission = Admission(budget, server="the GenManip server")
    app.add_middleware(AdmissionMiddleware, admission=admission)
    app.state.shm = sessions
    step_count = {"n": 0}

    @app.exception_handler(HttpError)
    async def _wire_error(request: Request, exc: HttpError) -> JSONResponse:
        return _error_response(exc, exc.http_status)

    @app.exception_handler(RequestRefused)
    async def _refused(request: Request, exc: RequestRefused) -> JSONResponse:
        return _error_response(exc, exc.status)

    @app.exception_handler(HarnessError)
    async def _harness_error(request: Request, exc: HarnessError) -> JSONResponse:
        return _error_response(exc, 500)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(status_code=500, content={
            "detail": f"{request.url.path}: {type(exc).__name__}: {bounded(str(exc), 300)}"})

    async def read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_request_bytes:
            raise HttpError("BODY_TOO_LARGE", f"{request.url.path}: body of {declared} bytes is "
                            f"over the limit of {max_request_bytes} bytes", http_status=413,
                            where=request.url.path, fix="send a smaller request")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_request_bytes:
                raise HttpError("BODY_TOO_LARGE", f"{request.url.path}: body is over the limit "
                                f"of {max_request_bytes} bytes", http_status=413,
                                where=request.url.path, fix="send a smaller request")
            chunks.append(chunk)
        return b"".join(chunks)

    async def read_pickle(request: Request) -> Any:
        body = await read_body(request)
        return await off_loop(lambda: codec.decode(
            body, request.headers.get("content-type"), where=f"{request.url.path} body",
            max_bytes=max_request_bytes, budget=budget))

    async def read_json(request: Request) -> Any:
        body = await read_body(request)
        try:
            return await off_loop(lambda: loads_json(body, budget,
                                                     where=f"{request.url.path} body"))
        except RequestRefused as exc:
            raise HttpError(exc.code, exc.message, http_status=exc.status,
                            where=request.url.path,
                            fix='send {"data": {"worker_ids": ["0"]}}') from None

    def encode(request: Request, payload: Any) -> Response:
        accept = request.headers.get("accept")
        headers = {}
        if codec.accepts(accept, codec.SHM_MEDIA_TYPE):
            if sessions is None:
                headers[STATUS_HEADER] = "unavailable"
            else:
                body, status = sessions.encode(request.headers.get(CLAIM_HEADER), payload)
                if body is not None:
                    return Response(body, media_type=codec.SHM_MEDIA_TYPE)
                headers[STATUS_HEADER] = status
        if codec.wants_frames(accept):
            return Response(codec.dumps_frames(payload), media_type=codec.FRAMES_MEDIA_TYPE,
                            headers=headers)
        return Response(codec.dumps(payload), media_type=codec.COMPAT_MEDIA_TYPE,
                        headers=headers)

    @app.post("/create_workers")
    async def create_workers(request: Request) -> JSONResponse:
        ids = _worker_ids(await read_json(request), "/create_workers", budget)
        await run_in_threadpool(workers.create, ids)
        return JSONResponse({"data": {"success": True}})

    @app.post("/kill")
    async def kill(request: Request) -> JSONResponse:
        ids = _worker_ids(await read_json(request), "/kill", budget)
        await run_in_threadpool(workers.kill, ids)
        return JSONResponse({"data": {"success": True}})

    @app.post("/reset")
    async def reset(request: Request) -> Response:
        payload = await read_pickle(request)
        ids = payload.get("worker_ids") if isinstance(payload, Mapping) else None
        if not isinstance(ids, (list, tuple)) or not ids or len(ids) > MAX_WORKER_IDS:
            raise HttpError("BAD_REQUEST", f"/reset: expected a pickled {{'worker_ids': [...]}}, "
                            f"got {bounded(payload)}", http_status=400, where="/reset",
                            fix="send pickle.dumps({'worker_ids': ['0']}, protocol=5)")
        ids = [_worker_id(w, "/reset", budget) for w in ids]
        targets = [(w, *workers.get(w, "/reset")) for w in ids]

        def run() -> Response:
            out = {}
            for wid, env, lock in targets:
                with lock:
                    out[wid] = env.reset()
            return encode(request, out)

        return await run_in_threadpool(run)

    @app.post("/step")
    async def step(request: Request) -> Response:
        payload = await read_pickle(request)
        if not isinstance(payload, Mapping) or not payload:
            raise HttpError("BAD_REQUEST", "/step: expected a pickled {worker_id: {'action': "
                            f"..., 'control_type': ...}}, got {bounded(payload)}",
                            http_status=400, where="/step",
                            fix="send one action message per worker id")
        if len(payload) > MAX_WORKER_IDS:
            raise HttpError("BAD_REQUEST", f"/step: {len(payload)} worker ids, more than "
                            f"{MAX_WORKER_IDS}", http_status=400, where="/step",
                            fix=f"step at most {MAX_WORKER_IDS} workers per request")
        for w in payload:
            _worker_id(w, "/step", budget)
        # check every action before any worker moves
        plan = [(str(w), *workers.get(w, "/step"),
                 validate_action(msg, getattr(workers.envs[str(w)], "embodiment", embodiment),
                                 where=f"/step worker {bounded(w, 64)}"))
                for w, msg in payload.items()]
        step_count["n"] += 1
        fault = transport_faults.draw(step_count["n"]) if transport_faults else None

        def run() -> Response:
            out = {}
            for wid, env, lock, action in plan:
                with lock:
                    out[wid] = env.step(action)
            return encode(request, out)

        response = await run_in_threadpool(run)
        if fault == "delay":
            await asyncio.sleep(delay_s)
        elif fault == "drop":
            loop = asyncio.get_running_loop()
            until = loop.time() + drop_hold_s
            while loop.time() < until and not await request.is_disconnected():
                await asyncio.sleep(0.02)
            return JSONResponse(status_code=504, content={"detail": DROPPED_DETAIL})
        return response

    if sessions is not None:
        shm_sessions = sessions

        @app.post(OPEN_ROUTE)
        async def shm_open() -> dict[str, Any]:
            """A shared-memory session: map ``segment`` and send ``X-Harness-Shm:
            <session>.<token from its header>`` to be answered through it."""
            try:
                return await run_in_threadpool(shm_sessions.open)
            except OSError as exc:
                raise HttpError("SHM_UNAVAILABLE", f"{OPEN_ROUTE}: cannot create a segment in "
                                f"{shm_sessions.config.directory} ({exc})", http_status=503,
                                where=OPEN_ROUTE, fix="use the frames fast path") from None

        @app.post(RELEASE_ROUTE)
        async def shm_release(request: Request) -> dict[str, Any]:
            claim = request.headers.get(CLAIM_HEADER)
            return {"released": await run_in_threadpool(shm_sessions.release, claim)}

    @app.get("/harness/info")
    async def info() -> dict[str, Any]:
        encodings = [codec.COMPAT_MEDIA_TYPE, codec.FRAMES_MEDIA_TYPE]
        if sessions is not None:
            encodings.append(codec.SHM_MEDIA_TYPE)
        return {"server": "harness-bt", "version": __version__, "embodiment": str(embodiment),
                "encodings": encodings,
                "workers": sorted(workers.envs), "max_request_bytes": max_request_bytes}

    @app.get("/harness/results")
    async def results() -> dict[str, Any]:
        def collect() -> dict[str, Any]:
            out: dict[str, Any] = {}
            for wid, env in sorted(workers.envs.items()):
                with workers.locks[wid]:
                    entry: dict[str, Any] = {}
                    if hasattr(env, "results"):
                        entry["results"] = env.results()
                    if hasattr(env, "ground_truth"):
                        entry["ground_truth"] = env.ground_truth()
                    out[wid] = entry
            return {"workers": out,
                    "transport_faults": list(transport_faults.fired) if transport_faults else []}

        return await run_in_threadpool(collect)

    return app
