"""Fixtures: small simulator configs, in-process envs, and a real uvicorn server per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from runtime_bridge.genmanip.serving import ServerThread
from runtime_bridge.sim.config import SimConfig, parse_camera_spec
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.server import create_sim_app

SMALL_CAMERAS = (parse_camera_spec("front:64x48"), parse_camera_spec("wrist:64x48"))


@pytest.fixture
def make_env() -> Iterator[Callable[..., SimEnv]]:
    envs: list[SimEnv] = []

    def make(**kw: object) -> SimEnv:
        kw.setdefault("cameras", ())
        env = SimEnv(SimConfig(**kw))  # type: ignore[arg-type]
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


@pytest.fixture
def sim_server() -> Iterator[Callable[..., str]]:
    """``sim_server(token=None, **SimConfig fields) -> base URL``; stopped at teardown."""
    servers: list[ServerThread] = []

    def start(token: str | None = None, max_request_bytes: int = 1 << 20, **kw: object) -> str:
        kw.setdefault("cameras", SMALL_CAMERAS)
        app = create_sim_app(SimConfig(**kw), token=token,  # type: ignore[arg-type]
                             max_request_bytes=max_request_bytes)
        servers.append(ServerThread(app).start())
        return servers[-1].url

    yield start
    for server in servers:
        server.stop()
