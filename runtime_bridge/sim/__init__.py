"""The built-in simulator: PyBullet (DIRECT, CPU) Franka Panda on a table with seeded objects,
serving the GenManip protocol (``create_sim_app``) or stepped in-process (``SimEnv``)."""

from runtime_bridge.sim.backend import SimBackend, make_backend
from runtime_bridge.sim.config import CameraSpec, FaultRates, SimConfig, parse_camera_spec
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.episodes import EpisodeBook
from runtime_bridge.sim.scripted import ScriptedPicker
from runtime_bridge.sim.server import create_sim_app
from runtime_bridge.sim.tasks import PickAndPlace, PickCube, SimTask, default_tasks

__all__ = [
    "CameraSpec",
    "EpisodeBook",
    "FaultRates",
    "PickAndPlace",
    "PickCube",
    "ScriptedPicker",
    "SimBackend",
    "SimConfig",
    "SimEnv",
    "SimTask",
    "create_sim_app",
    "default_tasks",
    "make_backend",
    "parse_camera_spec",
]
