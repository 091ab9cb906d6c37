"""JSON text on the hot paths means exactly what the standard library's json means."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_bt.ledger import CommandEvent
from runtime_bridge.host.record import _events_text
from runtime_bridge.zmq import jsontext


def _std_loads(data: bytes) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"{name} is not a JSON number")
    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return ("ok", repr(fn(*args)))
    except (ValueError, UnicodeDecodeError, RecursionError, TypeError) as exc:
        return ("error", type(exc).__name__ if not isinstance(exc, ValueError) else "ValueError")


EDGES = [b'{"a": NaN}', b'{"a": -Infinity}', b'{"a": 1e400}', b'{"a": "\\ud800"}',
         b'{"a": 18446744073709551616}', b'{"a": -9223372036854775809}',
         b'{"a": 9223372036854775807}', b'{"a": 1.0e-400}', b'\xef\xbb\xbf{}', b'{"a": 1} x',
         b'{"a": "\x01"}', b'{"\xff": 1}', b'[' * 3000 + b']' * 3000, b'{"a": 1, "a": 2}',
         b'{"a": ' + b"9" * 5000 + b"}", b'{"a": -0.0}', b' {"a": [1, 2.5, null]} ']


@pytest.mark.parametrize("data", EDGES)
def test_loads_accepts_refuses_and_reads_what_json_does(data):
    assert _outcome(jsontext.loads, data) == _outcome(_std_loads, data)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@given(JSONISH)
def test_dumps_refuses_what_json_refuses_and_reads_back_as_json_would(value):
    expected = _outcome(lambda v: json.dumps(v, allow_nan=False), value)
    got = _outcome(jsontext.dumps, value)
    assert got[0] == expected[0]
    if got[0] == "ok":
        text = jsontext.dumps(value)
        assert repr(json.loads(text)) == repr(json.loads(json.dumps(value)))


@given(st.binary(max_size=64) | JSONISH.map(lambda v: json.dumps(v).encode()))
def test_loads_of_any_bytes_matches_json(data):
    assert _outcome(jsontext.loads, data) == _outcome(_std_loads, data)


def test_event_rows_keep_a_nan_in_data_as_json_does():
    plain = CommandEvent("c", 1, "stopped", "held", 0.5, 3, {"held": True, "latency_s": 0.01})
    odd = CommandEvent("c", 2, "stopped", "", None, None, {"x": math.nan, "nested": {"a": 1}})
    for events in ([plain], [plain, odd]):
        assert repr(json.loads(_events_text(events))) == repr(
            json.loads(json.dumps([e.to_wire() for e in events])))
    assert "NaN" in _events_text([odd])
    assert _events_text([]) == "[]"


@given(JSONISH, JSONISH)
def test_raw_json_text_is_written_as_the_value_it_holds(inner, outer):
    try:
        text = json.dumps(inner, allow_nan=False, separators=(",", ":"))
    except ValueError:  # NaN / infinity: not JSON text that could be embedded
        return
    raw = {"command": jsontext.RawJSON(text), "other": outer}
    plain = {"command": inner, "other": outer}
    assert _outcome(jsontext.dumps, raw)[0] == _outcome(jsontext.dumps, plain)[0]
    if _outcome(jsontext.dumps, plain)[0] == "ok":
        assert json.loads(jsontext.dumps(raw)) == json.loads(jsontext.dumps(plain))
