"""The ZeroMQ runtime: wire format, broker with service routing, runtime server, telemetry,
and :class:`ZmqBridge`, the harness's :class:`~harness_bt.RuntimeBridge` to it."""

from runtime_bridge.zmq.bridge import ZmqBridge, ZmqBridgeConfig
from runtime_bridge.zmq.broker import Broker, BrokerConfig, BrokerPlugin
from runtime_bridge.zmq.client import LazyPirateClient
from runtime_bridge.zmq.server import RuntimeServer, RuntimeServerConfig
from runtime_bridge.zmq.service import FunctionService, RuntimeService, Service
from runtime_bridge.zmq.telemetry import TelemetryPublisher, TelemetrySubscriber, TopicValue
from runtime_bridge.zmq.wire import (
    PROTOCOL_VERSION,
    Limits,
    Message,
    MessageType,
    WireCode,
    WireError,
    decode,
    encode,
)
from runtime_bridge.zmq.worker import ServiceWorker, WorkerConfig

__all__ = [
    "PROTOCOL_VERSION",
    "Broker",
    "BrokerConfig",
    "BrokerPlugin",
    "FunctionService",
    "LazyPirateClient",
    "Limits",
    "Message",
    "MessageType",
    "RuntimeServer",
    "RuntimeServerConfig",
    "RuntimeService",
    "Service",
    "ServiceWorker",
    "TelemetryPublisher",
    "TelemetrySubscriber",
    "TopicValue",
    "WireCode",
    "WireError",
    "WorkerConfig",
    "ZmqBridge",
    "ZmqBridgeConfig",
    "decode",
    "encode",
]
