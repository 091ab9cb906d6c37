"""ROS 2 robots over Cyclone DDS or Zenoh, without rclpy (docs/ros2.md).

- :mod:`~runtime_bridge.ros2.names`: topic / service / action name mangling, DDS type names;
- :mod:`~runtime_bridge.ros2.types`: the rosbags type store with the action protocol's types;
- :mod:`~runtime_bridge.ros2.transport`: the transport seam (what the bridge needs of a
  middleware);
- :mod:`~runtime_bridge.ros2.dds`: topics and services on Cyclone DDS, ROS 2's QoS profiles;
- :mod:`~runtime_bridge.ros2.zenoh_transport`: the same on Zenoh, as rmw_zenoh maps them;
- :mod:`~runtime_bridge.ros2.actions`: the action client and server;
- :mod:`~runtime_bridge.ros2.mapping`: skills onto actions by a mapping file;
- :mod:`~runtime_bridge.ros2.bridge`: the ledger across the action protocol (a RuntimeBridge);
- :mod:`~runtime_bridge.ros2.observations`: TF buffer, joint states and cameras into
  observations, with their checks;
- :mod:`~runtime_bridge.ros2.runtime`: ``harness run --runtime ros2://`` (the ``ros2`` entry
  point of ``harness_bt.bridges``); :mod:`~runtime_bridge.ros2.zenoh_runtime`: ``zenoh://``
  (the ``zenoh`` entry point);
- :mod:`~runtime_bridge.ros2.record`: ``--record-ros2``, a rosbag2 bag in MCAP storage;
- :mod:`~runtime_bridge.ros2.robot`, :mod:`~runtime_bridge.ros2.goals`,
  :mod:`~runtime_bridge.ros2.server`, :mod:`~runtime_bridge.ros2.serve`: the robot's side,
  ``harness sim serve --ros2``.
"""
