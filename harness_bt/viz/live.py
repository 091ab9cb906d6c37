"""``harness run --foxglove [HOST:]PORT``: the run served live over Foxglove's WebSocket
protocol (``foxglove-sdk``), so the Foxglove app watches it as it happens.

:class:`FoxgloveLive` is the run's :class:`~harness_bt.run.episodes.RunWatch`. It serves the
channels of the MCAP export (:mod:`harness_bt.viz.channels`: the same topics, schemas and
messages) on a server of its own context, loopback unless told otherwise:

- ``/harness/log`` as each event is written (a trace listener), ``/harness/tree`` after each
  tick (the trace folded as the replay folds it);
- ``/camera/<name>`` (with its calibration and boxes) and ``/tf`` from what the perception is
  given, at most ``image_hz`` times per second of the run's clock per camera. Images are
  compressed only while a client subscribes to that camera; the transforms always go.

Every message carries the run's clock in wall-clock nanoseconds, as in the export (the run's
wall-clock start plus its own time). With ``wait_for_client`` the run is held at its first
camera observation, once every channel is advertised, until a client subscribes to one (so
nothing of the run is missed). The run never waits otherwise: ``Channel.log`` queues to each
client (a slow one loses the oldest data, as the SDK does).

The SDK speaks the subprotocol ``foxglove.sdk.v1``: the messages of ``foxglove.websocket.v1``
under a new name (a client that offers only the old name is refused with HTTP 400).
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import foxglove
from foxglove.websocket import ServerListener
from mcap_protobuf.schema import build_file_descriptor_set

from harness_bt.clock import Clock
from harness_bt.errors import BridgeError
from harness_bt.events import TaskEvent, parse_event
from harness_bt.recording import camera_image, encode_jpeg, frame_data
from harness_bt.runtime.observation import Observation
from harness_bt.viz.channels import (
    LOGGED,
    TREE_SCHEMA,
    camera_topics,
    frame_messages,
    log_message,
    run_ns,
    schema_json,
    tree_state,
)
from harness_bt.viz.frames import FrameFolder
from harness_bt.world import ObjectUpdate, Perception

if TYPE_CHECKING:
    from harness_bt.run.episodes import RunWatch
    from harness_bt.run.runner import TaskRunner

__all__ = ["FoxgloveLive"]


class _Subscriptions(ServerListener):
    """The server's listener: which client subscribes to which channel (from the SDK's
    threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.topics: dict[str, set[tuple[int, int]]] = {}
        self.any = threading.Event()

    def on_subscribe(self, client: Any, channel: Any) -> None:
        with self.lock:
            self.topics.setdefault(str(channel.topic), set()).add((client.id, channel.id))
        self.any.set()

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        with self.lock:
            self.topics.get(str(channel.topic), set()).discard((client.id, channel.id))

    def watched(self, topic: str) -> bool:
        with self.lock:
            return bool(self.topics.get(topic))


class FoxgloveLive:
    """A run served over Foxglove's WebSocket protocol (see the module docstring).
    ``inner``: another watch (the live console) it passes everything on to."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 8765, name: str = "harness-bt",
                 inner: RunWatch | None = None, wait_for_client: bool = False,
                 image_hz: float = 5.0, quality: int = 80) -> None:
        self.host, self.requested_port, self.name = host, port, name
        self.inner = inner
        self.wait_for_client = wait_for_client
        self.period = 0.0 if image_hz <= 0 else 1.0 / image_hz
        self.quality = quality
        self.subscriptions = _Subscriptions()
        self.counts: dict[str, int] = {}
        self.port: int | None = None
        self._context: Any = None
        self._server: Any = None
        self._channels: dict[str, Any] = {}
        self._folder: FrameFolder | None = None
        self._wall_start: float | None = None
        self._last_ns = 0
        self._last_image: dict[str, float] = {}
        self._runner: TaskRunner | None = None
        self._waited = False

    @property
    def url(self) -> str:
        """``ws://host:port`` once started (the address to open in the Foxglove app)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"

    def start(self) -> None:
        self._context = foxglove.Context()
        try:
            self._server = foxglove.start_server(
                name=self.name, host=self.host, port=self.requested_port,
                context=self._context, server_listener=self.subscriptions)
        except Exception as exc:  # the SDK raises its own error types
            raise BridgeError("FOXGLOVE_SERVER_FAILED", f"the Foxglove server could not "
                              f"listen on {self.host}:{self.requested_port}: {exc}",
                              fix="choose another port (0 picks a free one), or stop what "
                                  "listens there") from exc
        self.port = int(self._server.port)
        for topic in ("/harness/log", "/tf"):
            self._proto_channel(topic, _message_type(topic))
        self._json_channel("/harness/tree", TREE_SCHEMA)

    def close(self) -> None:
        """Stop the server (every client disconnected) and close the channels."""
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> FoxgloveLive:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ channels (the Sink)

    def _proto_channel(self, topic: str, kind: Any) -> Any:
        channel = self._channels.get(topic)
        if channel is None:
            schema = foxglove.Schema(name=kind.DESCRIPTOR.full_name, encoding="protobuf",
                                     data=build_file_descriptor_set(kind).SerializeToString())
            channel = self._channels[topic] = foxglove.Channel(
                topic, schema=schema, message_encoding="protobuf", context=self._context)
        return channel

    def _json_channel(self, topic: str, schema: Mapping[str, Any]) -> Any:
        channel = self._channels.get(topic)
        if channel is None:
            channel = self._channels[topic] = foxglove.Channel(
                topic, schema=foxglove.Schema(name=str(schema["title"]), encoding="jsonschema",
                                              data=schema_json(schema)),
                message_encoding="json", context=self._context)
        return channel

    def proto(self, topic: str, message: Any, ns: int) -> None:
        self._proto_channel(topic, type(message)).log(message.SerializeToString(), log_time=ns)
        self.counts[topic] = self.counts.get(topic, 0) + 1

    def json(self, topic: str, schema: Mapping[str, Any], value: Any, ns: int) -> None:
        data = json.dumps(value, separators=(",", ":")).encode()
        self._json_channel(topic, schema).log(data, log_time=ns)
        self.counts[topic] = self.counts.get(topic, 0) + 1

    # ------------------------------------------------------------ RunWatch (the run's thread)

    def perception(self, perceive: Perception) -> Perception:
        inner = perceive if self.inner is None else self.inner.perception(perceive)

        def watched(obs: Observation) -> Sequence[ObjectUpdate]:
            updates = inner(obs)
            if obs.cameras and self._runner is not None:
                self._images(obs, updates, self._runner.clock)
            return updates

        return watched

    def attach(self, runner: TaskRunner, index: int) -> None:
        self._runner = runner
        self._wall_start = None
        self._last_image.clear()
        runner.trace.listeners.append(self._on_event)
        if self.inner is not None:
            self.inner.attach(runner, index)

    def ticked(self, runner: TaskRunner) -> None:
        if self._folder is not None and self._wall_start is not None:
            frame = self._folder.frame
            self.json("/harness/tree", TREE_SCHEMA, tree_state(frame),
                      run_ns(self._wall_start, {"mono": frame.mono}))
            frame.events = []  # the tree state does not carry them; keep the fold small
        if self.inner is not None:
            self.inner.ticked(runner)

    def _on_event(self, event: dict[str, Any]) -> None:
        e = parse_event(event)
        if self._wall_start is None:
            self._wall_start = e.wall - e.mono
        if isinstance(e, TaskEvent):
            self._folder = FrameFolder(e.structure)
        if self._folder is not None:
            self._folder.apply(e)
        if e.kind in LOGGED:
            ns = run_ns(self._wall_start, e)
            self.proto("/harness/log", log_message(e, ns), ns)

    def _images(self, obs: Observation, updates: Sequence[ObjectUpdate], clock: Clock) -> None:
        now = obs.received_at if obs.received_at is not None else clock.monotonic()
        for name in obs.cameras:
            for topic, kind in zip(camera_topics(name), ("CompressedImage", "CameraCalibration",
                                                         "ImageAnnotations"), strict=True):
                self._proto_channel(topic, _message_type(kind))
        if self.wait_for_client and not self._waited:
            self._waited = True
            while not self.subscriptions.any.wait(0.2):  # Ctrl-C still ends the wait
                pass
        images: dict[str, Any] = {}
        jpegs: dict[str, bytes] = {}
        for name, cam in obs.cameras.items():
            last = self._last_image.get(name)
            if cam.rgb is None or (last is not None and now - last < self.period - 1e-9):
                continue
            self._last_image[name] = now
            member = f"{name}/{obs.timestep:06d}.jpg"
            images[name] = camera_image(name, cam, member, updates)
            if self.subscriptions.watched(camera_topics(name)[0]):
                jpegs[member] = encode_jpeg(cam.rgb, self.quality)
        if images:
            wall_start = self._wall_start if self._wall_start is not None else \
                clock.wall() - clock.monotonic()
            frame_messages(self, frame_data(obs, updates, images), jpegs.get,
                           round((wall_start + now) * 1e9))


def _message_type(kind: str) -> Any:
    """A Foxglove protobuf message class by topic (``/tf``, ``/harness/log``) or name."""
    name = {"/tf": "FrameTransforms", "/harness/log": "Log"}.get(kind, kind)
    return getattr(importlib.import_module(f"foxglove_schemas_protobuf.{name}_pb2"), name)

