"""JSON bodies of the runtime service's messages, both directions, checked on the way in."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from harness_bt.errors import HarnessError
from harness_bt.ledger import Command, CommandEvent
from harness_bt.runtime.bridge import Ack, RuntimeState, RuntimeStatus
from runtime_bridge.host import EventBatch, HeartbeatResult
from runtime_bridge.zmq.wire import WireCode, WireError

__all__ = [
    "ack_from_wire",
    "ack_to_wire",
    "batch_from_wire",
    "batch_to_wire",
    "command_from_wire",
    "heartbeat_from_wire",
    "heartbeat_to_wire",
    "optional_int",
    "optional_number",
    "status_from_wire",
    "status_to_wire",
]

_STATES = {s.value: s for s in RuntimeState}


def _bad(what: str, value: Any, fix: str | None = None) -> WireError:
    return WireError(WireCode.INVALID_REQUEST, f"{what}: {value!r:.200}", fix=fix)


def _state(value: Any) -> RuntimeState:
    state = _STATES.get(value)
    if state is None:
        raise WireError(WireCode.MALFORMED, f"runtime state {value!r:.50} is not one of "
                        f"{sorted(_STATES)}")
    return state


def optional_number(body: Mapping[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _bad(f"{key} must be a finite number or null", value)
    return float(value)


def optional_int(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"{key} must be an integer or null", value)
    return value


def command_from_wire(body: Mapping[str, Any], header_command_id: str) -> Command:
    data = body.get("command")
    if not isinstance(data, dict):
        raise _bad("DISPATCH needs a 'command' object", data)
    try:
        command = Command.model_validate(data)  # a dict fresh from the request: no copy
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise WireError(WireCode.INVALID_REQUEST, f"the command is not valid: {problems}",
                        command_id=header_command_id or None,
                        fix="send Command.to_wire() of a harness_bt.ledger.Command") from None
    if command.command_id != header_command_id:
        raise WireError(WireCode.INVALID_REQUEST, f"the header names command "
                        f"{header_command_id!r}, the body {command.command_id!r}",
                        command_id=header_command_id or None)
    return command


def ack_to_wire(ack: Ack) -> dict[str, Any]:
    return {"command_id": ack.command_id, "accepted": ack.accepted, "state": str(ack.state),
            "reason": ack.reason, "duplicate": ack.duplicate}


def ack_from_wire(body: Mapping[str, Any]) -> Ack:
    try:
        return Ack(str(body["command_id"]), bool(body["accepted"]), _state(body["state"]),
                   str(body.get("reason", "")), bool(body.get("duplicate", False)))
    except KeyError as exc:
        raise WireError(WireCode.MALFORMED, f"an ack without {exc.args[0]!r}") from None


def status_to_wire(status: RuntimeStatus) -> dict[str, Any]:
    return {"command_id": status.command_id, "state": status.state.value,
            "reason": status.reason, "last_seq": status.last_seq,
            "events": [e.to_wire() for e in status.events]}


def _events(items: Any) -> tuple[CommandEvent, ...]:
    if not isinstance(items, list):
        raise WireError(WireCode.MALFORMED, f"events must be a list, got {items!r:.100}")
    try:
        return tuple(CommandEvent.from_wire(e) for e in items)
    except (HarnessError, TypeError, AttributeError) as exc:
        raise WireError(WireCode.MALFORMED, f"a malformed event: {exc}") from None


def status_from_wire(body: Mapping[str, Any]) -> RuntimeStatus:
    try:
        return RuntimeStatus(str(body["command_id"]), _state(body["state"]),
                             str(body.get("reason", "")), int(body.get("last_seq", -1)),
                             _events(body.get("events", [])))
    except KeyError as exc:
        raise WireError(WireCode.MALFORMED, f"a status without {exc.args[0]!r}") from None


def heartbeat_to_wire(result: HeartbeatResult) -> dict[str, Any]:
    return {"epoch": result.epoch, "accepted": result.accepted, "reason": result.reason,
            "renewed": list(result.renewed),
            "states": {k: v.value for k, v in result.states.items()}}


def heartbeat_from_wire(body: Mapping[str, Any]) -> HeartbeatResult:
    states = body.get("states", {})
    if not isinstance(states, dict):
        raise WireError(WireCode.MALFORMED, "heartbeat states must be an object")
    return HeartbeatResult(int(body.get("epoch", 0)), bool(body.get("accepted", False)),
                           str(body.get("reason", "")),
                           tuple(str(c) for c in body.get("renewed", [])),
                           {str(k): _state(v) for k, v in states.items()})


def batch_to_wire(batch: EventBatch) -> dict[str, Any]:
    return {"boot_id": batch.boot_id, "events": [e.to_wire() for e in batch.events],
            "next_cursor": batch.next_cursor, "gap": batch.gap}


def batch_from_wire(body: Mapping[str, Any]) -> EventBatch:
    try:
        return EventBatch(str(body["boot_id"]), _events(body["events"]),
                          int(body["next_cursor"]), bool(body.get("gap", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(WireCode.MALFORMED, f"a malformed event batch: {exc}") from None
