"""``harness run --runtime ros2:// --record-ros2 BAG``: the robot's side of a run as a rosbag2.

A :class:`BagRecorder` subscribes, beside the bridge, to the robot's topics
(``/joint_states``, ``/tf``, ``/tf_static``, each camera's image, depth and camera info) and
to each mapped action's ``_action/status``, and writes every message
it takes to a rosbag2 bag in the MCAP storage (``rosbags.rosbag2.Writer``: the directory
``BAG`` with ``metadata.yaml`` and ``BAG.mcap``; each channel carries its ``ros2msg`` schema and
``cdr`` messages), so ROS 2 tools (``ros2 bag``, ``rosbags``, Foxglove, the ``mcap`` CLI) open
it. Timestamps are the receive time (wall clock, nanoseconds), as ``ros2 bag record`` writes.

Action feedback is not recorded: its types are generated per action (``Name_FeedbackMessage``)
and rosbags 0.11 cannot write their message definitions (it expects ``pkg/msg/Name``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosbags.rosbag2 import StoragePlugin, Writer

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import DefinitionError
from runtime_bridge.ros2.names import action_topic
from runtime_bridge.ros2.transport import Transport

__all__ = ["BagRecorder", "robot_topics"]


def robot_topics(cameras: tuple[str, ...], actions: dict[str, str]) -> list[tuple[str, str, str]]:
    """(topic, type, QoS profile) of everything a run records; ``actions``: name -> type."""
    out = [("/joint_states", "sensor_msgs/msg/JointState", "default"),
           ("/tf", "tf2_msgs/msg/TFMessage", "default"),
           ("/tf_static", "tf2_msgs/msg/TFMessage", "tf_static")]
    for cam in cameras:
        out += [(f"/{cam}/image_raw", "sensor_msgs/msg/Image", "sensor_data"),
                (f"/{cam}/depth/image_raw", "sensor_msgs/msg/Image", "sensor_data"),
                (f"/{cam}/camera_info", "sensor_msgs/msg/CameraInfo", "sensor_data")]
    for name in sorted(actions):
        out.append((action_topic(name, "status"), "action_msgs/msg/GoalStatusArray",
                    "action_status"))
    return out


class BagRecorder:
    """See the module docstring. ``spin()`` takes and writes what arrived; ``close()`` ends the
    bag (it is readable only after)."""

    def __init__(self, path: str | Path, participant: Transport,
                 topics: list[tuple[str, str, str]], *, clock: Clock | None = None) -> None:
        self.path = Path(path)
        if self.path.exists():
            raise DefinitionError("BAG_EXISTS", f"--record-ros2 {self.path}: it exists; rosbag2 "
                                  "never writes into an existing bag", where=str(self.path),
                                  fix="name a new directory, or remove the old bag")
        self.clock = clock or SystemClock()
        self.types = participant.types
        self.counts: dict[str, int] = {}
        self._writer: Any = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self._writer.open()
        self._channels: list[tuple[Any, Any, str, str]] = []
        try:
            for topic, rtype, qos in topics:
                conn = self._writer.add_connection(topic, rtype, typestore=self.types.store)
                self._channels.append((participant.reader(topic, rtype, qos), conn, topic, rtype))
        except BaseException:
            self._writer.close()
            raise

    def spin(self) -> int:
        """Write every message that arrived; how many."""
        written = 0
        stamp = int(self.clock.wall() * 1e9)
        for reader, conn, topic, rtype in self._channels:
            for msg in reader.take(64):
                if getattr(msg, "__msgtype__", None) != rtype:
                    continue  # not a message (a DDS status sample)
                self._writer.write(conn, stamp, self.types.serialize(msg, rtype))
                self.counts[topic] = self.counts.get(topic, 0) + 1
                written += 1
        return written

    def close(self) -> None:
        if self._writer is not None:
            self.spin()
            self._writer.close()
            self._writer = None
