"""Services a broker routes to by name, and the runtime service (``manip``) over a host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from harness_bt.errors import HarnessError
from harness_bt.runtime.executor import executable_skills
from runtime_bridge.host import ExecutorHost
from runtime_bridge.zmq.codec import (
    ack_to_wire,
    batch_to_wire,
    command_from_wire,
    heartbeat_to_wire,
    optional_int,
    optional_number,
    status_to_wire,
)
from runtime_bridge.zmq.command_text import command_text
from runtime_bridge.zmq.wire import (
    PROTOCOL_VERSION,
    Message,
    MessageType,
    WireCode,
    WireError,
    error_reply,
)

__all__ = ["FunctionService", "RuntimeService", "Service", "serve_one"]



@runtime_checkable
class Service(Protocol):
    """Answers the requests routed to ``name``. ``handle`` never blocks for long: it runs on
    the thread that owns the broker's or worker's socket."""

    name: str

    def handle(self, request: Message) -> Message: ...


def serve_one(service: Service, request: Message) -> Message:
    """``service.handle(request)``, with every failure turned into an ERROR reply."""
    try:
        return service.handle(request)
    except HarnessError as exc:
        return error_reply(request.request_id, exc, service=service.name,
                           command_id=request.command_id)
    except Exception as exc:  # a bug in a handler must not take the server down
        return error_reply(request.request_id, WireError(
            WireCode.INTERNAL, f"service {service.name!r} failed on a {request.type.name}: "
            f"{exc!r}", where=service.name), service=service.name, command_id=request.command_id)


class FunctionService:
    """A service from a function of the request body (for REQUEST messages)."""

    def __init__(self, name: str, fn: Callable[[Message], dict[str, Any]]) -> None:
        self.name = name
        self._fn = fn

    def handle(self, request: Message) -> Message:
        if request.type is not MessageType.REQUEST:
            raise WireError(WireCode.INVALID_REQUEST, f"service {self.name!r} takes REQUEST "
                            f"messages, not {request.type.name}")
        return request.reply(self._fn(request))


class RuntimeService:
    """The runtime's requests over an :class:`ExecutorHost`: HELLO, DISPATCH, CANCEL, QUERY,
    HEARTBEAT, EVENTS. ``info`` is added to HELLO replies (the telemetry endpoint); a callable
    value is called for each reply."""

    def __init__(self, host: ExecutorHost, *, name: str = "manip",
                 info: dict[str, Any] | None = None) -> None:
        self.name = name
        self.host = host
        self.info = dict(info or {})
        self._handlers: dict[MessageType, Callable[[Message], dict[str, Any]]] = {
            MessageType.HELLO: self._hello, MessageType.DISPATCH: self._dispatch,
            MessageType.CANCEL: self._cancel, MessageType.QUERY: self._query,
            MessageType.HEARTBEAT: self._heartbeat, MessageType.EVENTS: self._events,
        }

    def handle(self, request: Message) -> Message:
        handler = self._handlers.get(request.type)
        if handler is None:
            raise WireError(WireCode.INVALID_REQUEST, f"the {self.name!r} runtime takes "
                            f"{', '.join(t.name for t in self._handlers)}; got "
                            f"{request.type.name}")
        return request.reply(handler(request))

    def _hello(self, request: Message) -> dict[str, Any]:
        host = self.host
        skills = executable_skills(host.executors)
        return {"protocol": PROTOCOL_VERSION, "service": self.name, "epoch": host.epoch,
                "boot_id": host.boot_id, "cursor": host.cursor, "lease_s": host.config.lease_s,
                "control_period_s": host.backend.control_period_s,
                "skills": None if skills is None else sorted(skills),
                **{k: v() if callable(v) else v for k, v in self.info.items()}}

    def _dispatch(self, request: Message) -> dict[str, Any]:
        command = command_from_wire(request.body, request.command_id)
        budget = optional_number(request.body, "start_budget_ms")
        return ack_to_wire(self.host.submit(command, start_budget_ms=budget,
                                            command_json=command_text(request.body["command"])))

    def _need_id(self, request: Message) -> str:
        if not request.command_id:
            raise WireError(WireCode.INVALID_REQUEST, f"{request.type.name} needs a command id "
                            "in the header")
        return request.command_id

    def _cancel(self, request: Message) -> dict[str, Any]:
        return ack_to_wire(self.host.cancel(self._need_id(request),
                                            epoch=optional_int(request.body, "epoch")))

    def _query(self, request: Message) -> dict[str, Any]:
        return status_to_wire(self.host.query(self._need_id(request)))

    def _heartbeat(self, request: Message) -> dict[str, Any]:
        ids = request.body.get("command_ids")
        if ids is not None and not (isinstance(ids, list) and all(isinstance(c, str)
                                                                  for c in ids)):
            raise WireError(WireCode.INVALID_REQUEST, f"command_ids must be a list of strings "
                            f"or null, got {ids!r:.100}")
        return heartbeat_to_wire(self.host.heartbeat(ids,
                                                     epoch=optional_int(request.body, "epoch")))

    def _events(self, request: Message) -> dict[str, Any]:
        cursor = optional_int(request.body, "cursor") or 0
        limit = optional_int(request.body, "limit") or 1000
        return batch_to_wire(self.host.events_since(cursor, limit=max(1, min(limit, 10_000))))
