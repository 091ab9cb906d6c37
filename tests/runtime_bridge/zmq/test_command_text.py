"""The runtime journals a dispatched command from the request's own body: the text reads back
as the command that was accepted, every field explicit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness_bt.ledger import Command
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.host.record import RuntimeRecord
from runtime_bridge.zmq.command_text import command_text
from tests.runtime_bridge.executors import command


@pytest.mark.parametrize("body", [
    command("full", "wait", steps=3, resources=("arm",)).to_wire(),
    {"command_id": "lean", "skill": "wait", "start_within_ms": 5, "execution_timeout_ms": 9},
    {"command_id": "nested", "skill": "move", "start_within_ms": 5.5,
     "execution_timeout_ms": 9.0, "params": {"goal": [0.1, -2e-9, 1e300], "name": "é\u2028"},
     "resources": ["arm", "gripper"], "premises": {"cup": 3}, "epoch": 2},
])
def test_the_text_reads_back_as_the_validated_command_with_every_field_written(
        body: dict[str, Any]) -> None:
    text = command_text(body)
    assert text is not None
    assert Command.model_validate_json(text) == Command.model_validate(body)
    assert set(json.loads(text)) == set(Command.model_fields)  # no default left implicit


def test_a_command_orjson_cannot_write_is_left_to_the_record_to_encode() -> None:
    body = {"command_id": "big", "skill": "s", "start_within_ms": 5, "execution_timeout_ms": 9,
            "params": {"ticks": 2**70 + 1}}
    assert command_text(body) is None
    cmd = Command.model_validate(body)
    rec = RuntimeRecord("big", cmd, True, RuntimeState.PENDING, "ACCEPTED", 0.0,
                        _command_json=command_text(body))
    assert RuntimeRecord.from_row(rec.to_row()).command == cmd  # encoded by the record itself


def test_the_shared_defaults_are_never_handed_out() -> None:
    body = {"command_id": "a", "skill": "s", "start_within_ms": 5, "execution_timeout_ms": 9}
    first = json.loads(command_text(body) or "")
    first["params"]["x"] = 1
    assert json.loads(command_text(body) or "")["params"] == {}
