"""The built-in simulator: PyBullet (DIRECT, CPU) Franka Panda on a table with seeded objects,
serving the GenManip protocol (``create_sim_app``) or stepped in-process (``SimEnv``).

Names are imported on first use, so that loading the CLI (which registers ``harness sim``) or
the package's configuration does not load PyBullet (which prints to stdout when imported).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime_bridge.sim.backend import SimBackend, make_backend
    from runtime_bridge.sim.config import CameraSpec, FaultRates, SimConfig, parse_camera_spec
    from runtime_bridge.sim.env import SimEnv
    from runtime_bridge.sim.episodes import EpisodeBook
    from runtime_bridge.sim.scenes import SimScene, load_sim_scenes
    from runtime_bridge.sim.scripted import ScriptedPicker
    from runtime_bridge.sim.server import create_sim_app

_WHERE = {
    "SimBackend": "backend", "make_backend": "backend",
    "CameraSpec": "config", "FaultRates": "config", "SimConfig": "config",
    "parse_camera_spec": "config",
    "SimEnv": "env",
    "EpisodeBook": "episodes",
    "ScriptedPicker": "scripted",
    "create_sim_app": "server",
    "SimScene": "scenes", "load_sim_scenes": "scenes",
}

__all__ = [
    "CameraSpec",
    "EpisodeBook",
    "FaultRates",
    "ScriptedPicker",
    "SimBackend",
    "SimConfig",
    "SimEnv",
    "SimScene",
    "create_sim_app",
    "load_sim_scenes",
    "make_backend",
    "parse_camera_spec",
]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime_bridge.sim' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"runtime_bridge.sim.{module}"), name)
    globals()[name] = value
    return value
