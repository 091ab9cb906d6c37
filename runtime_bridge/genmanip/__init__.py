"""The GenManip HTTP protocol: wire codec (safe), action checks, a client, and a server over any
worker environment. See ``GENMANIP_PROTOCOL.md`` for the protocol itself."""

from runtime_bridge.genmanip.actions import (
    ControlType,
    GenManipEmbodiment,
    ValidatedAction,
    validate_action,
)
from runtime_bridge.genmanip.backend import GenManipBackend, make_backend
from runtime_bridge.genmanip.client import (
    GenManipClient,
    StepOutcomeUnknown,
    Timeouts,
    WorkerResult,
)
from runtime_bridge.genmanip.errors import ActionError, HttpError
from runtime_bridge.genmanip.observations import observation_from_wire, observation_to_wire
from runtime_bridge.genmanip.server import AppSettings, WorkerEnv, create_app
from runtime_bridge.genmanip.serving import ServerThread
from runtime_bridge.genmanip.shm import ShmConfig

__all__ = [
    "ActionError",
    "AppSettings",
    "ControlType",
    "GenManipBackend",
    "GenManipClient",
    "GenManipEmbodiment",
    "HttpError",
    "ServerThread",
    "ShmConfig",
    "StepOutcomeUnknown",
    "Timeouts",
    "ValidatedAction",
    "WorkerEnv",
    "WorkerResult",
    "create_app",
    "make_backend",
    "observation_from_wire",
    "observation_to_wire",
    "validate_action",
]
