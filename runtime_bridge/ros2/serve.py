"""``harness sim serve --ros2``: the built-in simulator's arm as a ROS 2 robot on this machine.

One scene, one layout (``seed``), an episode that does not end on its own (the robot's cell);
the skills' executors run in the server (:class:`~runtime_bridge.ros2.server.Ros2RobotServer`)
behind the actions of the mapping. ``truth`` publishes, for tests and benchmarks only, the
simulator's ground truth on ``/harness/sim/truth`` (``std_msgs/String``, JSON): what the hand
holds and where the objects are; a task never reads it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Mapping
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.runtime.executor import load_executors
from runtime_bridge.ros2.dds import LOOPBACK_CONFIG
from runtime_bridge.ros2.mapping import DEFAULT_MAPPING, load_mapping
from runtime_bridge.ros2.types import RosTypes

__all__ = ["build_server", "refuse_http_options", "serve_ros2"]


def refuse_http_options(*, scenes: list[str], episodes: int, num_steps: int,
                        camera: list[str] | None, token: str | None, workers: int,
                        faults: tuple[float, ...]) -> None:
    """``harness sim serve --ros2`` serves one scene as a robot: the HTTP server's options are
    refused, not ignored."""
    given = [name for name, bad in (
        ("a second --scene", len(scenes) > 1), ("--episodes", episodes != 10),
        ("--num-steps", num_steps != 600), ("--camera", bool(camera)), ("--token", bool(token)),
        ("--workers", workers != 0), ("--fault-*", any(f != 0.0 for f in faults))) if bad]
    if given:
        raise DefinitionError("UNSUPPORTED_OPTION", f"{', '.join(given)}: options of the HTTP "
                              "simulator; --ros2 serves one scene as a robot (one layout from "
                              "--seed, an episode that does not end, the front and left cameras)",
                              where="harness sim serve --ros2",
                              fix="drop them (docs/ros2.md)")


def build_server(*, scene: str, params: Mapping[str, Any] | None, seed: int, domain: int,
                 mapping: str | None = None, journal: str | None = None,
                 zenoh: str | None = None, control_hz: float = 30.0) -> Any:
    """The server (not started) and the simulator behind it: over Cyclone DDS, or with
    ``zenoh`` (an endpoint such as ``tcp/127.0.0.1:7447``) over a Zenoh session listening
    there. With ``journal`` the goals are kept in ``JOURNAL.goals``."""
    from runtime_bridge.ros2.server import RobotServerSettings, Ros2RobotServer
    from runtime_bridge.sim.backend import make_backend
    from runtime_bridge.sim.config import DEFAULT_CAMERAS

    connect = None
    if zenoh is None:
        os.environ.setdefault("CYCLONEDDS_URI", LOOPBACK_CONFIG)
    else:
        from runtime_bridge.ros2.zenoh_transport import ZenohEndpoints, ZenohSession

        endpoints = ZenohEndpoints(listen=(zenoh,), node="harness_robot")
        connect = lambda types: ZenohSession(domain, types, endpoints)  # noqa: E731
    types = RosTypes()
    skill_map = load_mapping(mapping or DEFAULT_MAPPING, types)
    backend = make_backend(1.0 / control_hz, scene=scene, seed=seed, params=params,
                           cameras=DEFAULT_CAMERAS, render="round_robin")
    try:
        server = Ros2RobotServer(backend, load_executors(None), skill_map, types,
                                 RobotServerSettings(
                                     domain=domain, connect=connect, journal=journal,
                                     goals_file=None if journal is None else journal + ".goals"))
    except BaseException:
        backend.close()
        raise
    return server


def serve_ros2(**kwargs: Any) -> None:
    """Serve until SIGINT / SIGTERM; prints one JSON line once ready."""
    truth = bool(kwargs.pop("truth", False))
    server = build_server(**kwargs)
    zenoh = kwargs.get("zenoh")
    over = {"transport": "dds"} if zenoh is None else {"transport": "zenoh", "zenoh": zenoh}
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        info = server.start()
        publish = server.participant.writer("/harness/sim/truth", "std_msgs/msg/String") \
            if truth else None
        print(json.dumps({"ready": True, "pid": os.getpid(), **info, **over}),
              flush=True)
        while not stop.is_set() and not server.wait(0.1):
            if publish is not None:
                gt = server.backend.env.ground_truth()
                publish(server.types.new("std_msgs/msg/String", data=json.dumps(
                    {"held": gt.get("held"), "objects": gt.get("objects"),
                     "target": gt.get("target")}, default=float)))
    finally:
        server.stop()
    if server.failure is not None:
        raise server.failure
