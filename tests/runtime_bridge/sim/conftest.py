"""Fixtures: small simulator configs, in-process envs, and a real uvicorn server per test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runtime_bridge.genmanip.serving import ServerThread
from runtime_bridge.sim.config import SimConfig, parse_camera_spec
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.server import create_sim_app

SMALL_CAMERAS = (parse_camera_spec("front:64x48"), parse_camera_spec("wrist:64x48"))


@pytest.fixture
def make_env(closing: Callable[..., Any]) -> Callable[..., SimEnv]:
    """``make_env(**SimConfig fields)``: an in-process simulator (no cameras unless given)."""

    def make(**kw: Any) -> SimEnv:
        kw.setdefault("cameras", ())
        return closing(SimEnv(SimConfig(**kw)))

    return make


@pytest.fixture
def sim_server(closing: Callable[..., Any]) -> Callable[..., str]:
    """``sim_server(token=None, **SimConfig fields) -> base URL``; stopped at teardown."""

    def start(token: str | None = None, max_request_bytes: int = 1 << 20, **kw: Any) -> str:
        kw.setdefault("cameras", SMALL_CAMERAS)
        app = create_sim_app(SimConfig(**kw), token=token, max_request_bytes=max_request_bytes)
        server = ServerThread(app).start()
        closing(server, server.stop)
        return server.url

    return start
