"""``open_runtime``: the ``harness_bt.bridges`` entry point ``ros2`` (``harness run --runtime
ros2://[DOMAIN]``): a :class:`Ros2Runtime`, the episode protocol of
:mod:`harness_bt.runtime.episodes` over a :class:`~runtime_bridge.ros2.bridge.Ros2Bridge`.

A ROS 2 robot owns its control loop, so the harness runs on wall-clock time (one tick per
``tick_s``) and the episode is the one run against the robot's current scene; the simulator's
verdict is never inferred (``not_judged``). The domain id is the URL's (``ros2://7``), else
``ROS_DOMAIN_ID``, else 0. Without ``CYCLONEDDS_URI`` the loopback-only configuration is used
(nothing leaves 127.0.0.1); to reach a robot on a network set ``CYCLONEDDS_URI`` to its
interface (docs/ros2.md).

The URL may carry settings: ``ros2://7?mapping=robot.yaml&cameras=front,wrist&max_age_s=0.5``
(:data:`URL_SETTINGS`); ``RunOptions.runtime_settings`` may hold the same, and wins.

``RunOptions.runtime_settings`` may hold ``mapping`` (a mapping file; default: the built-in
simulator's),
``connect_timeout_s``, ``tick_s``, ``max_age_s`` (observations older than this are refused),
``cameras`` (camera names to subscribe to; default ``front``, ``left``) and ``record_ros2``
(a new rosbag2 bag to record the robot's topics in: ``harness run --record-ros2``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness_bt.errors import BridgeError, DefinitionError, HarnessError
from harness_bt.ledger import Command
from harness_bt.runtime.bridge import Ack, BridgeNotice, PollResult, RuntimeStatus
from harness_bt.runtime.episodes import EpisodeEnd, EpisodeStart, RunOptions
from harness_bt.runtime.observation import Observation
from runtime_bridge.paced import PacedClock, PacedRuntime
from runtime_bridge.ros2.bridge import Ros2Bridge
from runtime_bridge.ros2.dds import LOOPBACK_CONFIG, Participant
from runtime_bridge.ros2.mapping import DEFAULT_MAPPING, load_mapping
from runtime_bridge.ros2.observations import ObservationAssembler
from runtime_bridge.ros2.record import BagRecorder, robot_topics
from runtime_bridge.ros2.transport import Transport
from runtime_bridge.ros2.types import RosTypes

__all__ = ["URL_SETTINGS", "Ros2Runtime", "Ros2RuntimeSettings", "open_runtime", "parse_ros2_url",
           "runtime_settings"]


#: Settings a ``ros2://`` URL may carry after ``?`` (``&``-separated ``NAME=VALUE``).
URL_SETTINGS = ("mapping", "cameras", "connect_timeout_s", "max_age_s", "tick_s")


def parse_ros2_url(url: str) -> tuple[int, dict[str, str]]:
    """The domain id and the settings of ``ros2://[DOMAIN][?mapping=FILE&cameras=a,b...]``."""
    if not url.startswith("ros2://"):
        raise DefinitionError("INVALID_RUNTIME_URL", f"--runtime {url!r} is not ros2://[DOMAIN]",
                              where=url, fix="write ros2:// or ros2://7")
    rest, _, query = url[len("ros2://"):].partition("?")
    rest = rest.strip("/")
    if not rest:
        rest = os.environ.get("ROS_DOMAIN_ID", "0") or "0"
    if not rest.isdigit() or not 0 <= int(rest) <= 232:
        raise DefinitionError("INVALID_DOMAIN", f"--runtime {url!r}: domain {rest!r} is not a "
                              "ROS_DOMAIN_ID (0..232)", where=url, fix="write ros2://0 .. ros2://232")
    settings: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        name, sep, value = item.partition("=")
        if not sep or name not in URL_SETTINGS:
            raise DefinitionError("INVALID_RUNTIME_URL", f"--runtime {url!r}: {item!r} is not "
                                  f"NAME=VALUE with NAME one of {', '.join(URL_SETTINGS)}",
                                  where=url, fix="write e.g. ros2://7?mapping=robot.yaml")
        settings[name] = value
    return int(rest), settings


@dataclass(frozen=True)
class Ros2RuntimeSettings:
    """What a ROS 2 runtime is told besides its transport (the URL's and ``RunOptions``')."""

    url: str
    mapping: str | None = None
    connect_timeout_s: float = 10.0
    tick_s: float = 0.05
    max_age_s: float = 1.0
    cameras: tuple[str, ...] = ("front", "left")
    record: str | None = None
    #: what to tell a user whose robot did not answer
    unreachable_fix: str = ("start one (harness sim serve --ros2), check ROS_DOMAIN_ID and "
                            "CYCLONEDDS_URI, or fix the mapping's names")


class Ros2Runtime(PacedRuntime):
    """See the module docstring. ``connect(types)`` opens the transport (a DDS participant, a
    Zenoh session); the runtime owns it from then on."""

    def __init__(self, connect: Callable[[RosTypes], Transport],
                 settings: Ros2RuntimeSettings) -> None:
        self.url = settings.url
        self.settings = settings
        self._clock = PacedClock()
        self.types = RosTypes()
        self.mapping = load_mapping(settings.mapping or DEFAULT_MAPPING, self.types)
        cameras = settings.cameras
        self.participant = connect(self.types)
        try:
            self.bridge = Ros2Bridge(self.participant, self.mapping, clock=self._clock)
            self._joints = self.participant.reader("/joint_states", "sensor_msgs/msg/JointState")
            self._tf = self.participant.reader("/tf", "tf2_msgs/msg/TFMessage")
            self._tf_static = self.participant.reader("/tf_static", "tf2_msgs/msg/TFMessage",
                                                      "tf_static")
            self._cams = {name: {kind: self.participant.reader(topic, rtype, "sensor_data")
                                 for kind, topic, rtype in (
                                     ("image", f"/{name}/image_raw", "sensor_msgs/msg/Image"),
                                     ("depth", f"/{name}/depth/image_raw", "sensor_msgs/msg/Image"),
                                     ("info", f"/{name}/camera_info",
                                      "sensor_msgs/msg/CameraInfo"))} for name in cameras}
            self.recorder = None if settings.record is None else BagRecorder(
                settings.record, self.participant, robot_topics(cameras, {
                    b.action: b.action_type for b in self.mapping.bindings.values()}))
        except BaseException:
            self.participant.close()
            raise
        self.assembler = ObservationAssembler(max_age_s=settings.max_age_s)
        self._connect_timeout_s = settings.connect_timeout_s
        self._tick_s = settings.tick_s
        self._notices: list[BridgeNotice] = []
        self._started = False
        self._over = False

    def executable_skills(self) -> frozenset[str] | None:
        """The skills the mapping binds to an action."""
        return frozenset(self.mapping.bindings)

    def start_episode(self) -> EpisodeStart | None:
        if self._started:
            return None
        self._started = True
        missing = self.bridge.wait_for_servers(self._connect_timeout_s)
        if missing:
            raise BridgeError("RUNTIME_UNREACHABLE", f"no ROS 2 action server answered at "
                              f"{missing} on {self.url} within {self._connect_timeout_s:g} s",
                              where=self.url, fix=self.settings.unreachable_fix)
        return EpisodeStart(0, "", "0", {"runtime": self.url,
                                         "actions": sorted(self.bridge.clients)})

    def finish_episode(self, *, max_hold_steps: int | None = None) -> EpisodeEnd:
        self._over = True
        return EpisodeEnd(0, "not_judged", None, 0, 0, None,
                          {"runtime": self.url, "goals_sent": self.bridge.goals_sent,
                           "duplicate_results": self.bridge.duplicates})

    def final_metric(self) -> Mapping[str, float] | None:
        return None

    def dispatch(self, command: Command, *, start_budget_ms: float | None = None) -> Ack:
        return self.bridge.dispatch(command, start_budget_ms=start_budget_ms)

    def cancel(self, command_id: str) -> Ack:
        return self.bridge.cancel(command_id)

    def query(self, command_id: str) -> RuntimeStatus:
        return self.bridge.query(command_id)

    def poll(self) -> PollResult:
        events = self.bridge.poll().events
        if self.recorder is not None:
            self.recorder.spin()
        observations: list[Observation] = []
        try:
            self._take_topics()
            now = self._clock.wall()
            obs = self.assembler.build(now, self._clock.monotonic())
            if obs is not None:
                observations.append(obs)
        except HarnessError as exc:
            self._notices.append(BridgeNotice("observation_refused", data=exc.to_dict()))
        notices, self._notices = self._notices, []
        return PollResult(events, tuple(observations), tuple(notices))

    def _take_topics(self) -> None:
        for msg in self._tf_static.take(16):
            for t in msg.transforms:
                self.assembler.tf.add(t, static=True)
        for msg in self._tf.take(64):
            for t in msg.transforms:
                self.assembler.tf.add(t)
        for name, readers in self._cams.items():
            for kind, reader in readers.items():
                got = reader.take(8)
                if got:
                    self.assembler.camera(name, kind, got[-1])
        joints = self._joints.take(64)
        if joints:
            self.assembler.joint_state(joints[-1])

    def close(self) -> None:
        try:
            if self.recorder is not None:
                self.recorder.close()
        finally:
            self.bridge.close()


def runtime_settings(url: str, given: dict[str, str], options: RunOptions,
                     unreachable_fix: str | None = None) -> Ros2RuntimeSettings:
    """The settings of a ROS 2 runtime from its URL's (``given``) and ``options`` (which win);
    options of the built-in simulator are refused."""
    refused = [name for name, bad in (
        ("--sim", bool(options.sim_url)), ("--inject", bool(options.faults)),
        ("--camera", options.cameras is not None), ("--episodes", options.episodes != 1))
        if bad]
    if refused:
        raise DefinitionError("UNSUPPORTED_OPTION", f"{', '.join(refused)} configure the built-in "
                              f"simulator; a ROS 2 robot at {url} runs its own scene", where=url,
                              fix="drop them, or start the robot with the settings you want")
    extra: dict[str, Any] = {**given, **options.runtime_settings.given()}
    if isinstance(extra.get("cameras"), str):
        extra["cameras"] = tuple(c for c in extra["cameras"].split(",") if c)
    try:
        numbers: dict[str, float] = {
            k: float(extra[k]) for k in ("connect_timeout_s", "max_age_s", "tick_s")
            if k in extra}
    except ValueError as exc:
        raise DefinitionError("INVALID_RUNTIME_URL", f"--runtime {url!r}: {exc}", where=url,
                              fix="give the timeouts in seconds, e.g. max_age_s=0.5") from exc
    extra.update(numbers)
    settings = Ros2RuntimeSettings(
        url=url, mapping=extra.get("mapping"),
        connect_timeout_s=float(extra.get("connect_timeout_s", 10.0)),
        tick_s=float(extra.get("tick_s", 0.05)), max_age_s=float(extra.get("max_age_s", 1.0)),
        cameras=tuple(extra.get("cameras", ("front", "left"))),
        record=None if extra.get("record_ros2") is None else str(extra["record_ros2"]))
    if unreachable_fix is not None:
        settings = replace(settings, unreachable_fix=unreachable_fix)
    return settings


def open_runtime(options: RunOptions) -> Ros2Runtime:
    """The ROS 2 robot on the domain of ``options.runtime_url`` (see the module docstring)."""
    url = options.runtime_url or "ros2://"
    domain, given = parse_ros2_url(url)
    settings = runtime_settings(f"ros2://{domain}", given, options)
    os.environ.setdefault("CYCLONEDDS_URI", LOOPBACK_CONFIG)
    return Ros2Runtime(lambda types: Participant(domain, types), settings)
