"""The policy wire format: openpi's msgpack arrays both ways, and strict refusals of anything
that is not plain msgpack + bool / int / float arrays."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from harness_bt.errors import BridgeError
from harness_bt.policy.wire import pack, unpack, unpack_map
from tests.harness_bt.policy import peer


def test_arrays_scalars_and_plain_values_round_trip_in_the_reference_encoding() -> None:
    value = {"observation/image": np.arange(24, dtype=np.uint8).reshape(2, 4, 3),
             "observation/state": np.array([0.1, -2.5, np.inf], dtype=np.float32),
             "prompt": "pick up the red cube", "n": np.int64(7), "ok": np.bool_(True),
             "nested": [{"a": None, "b": 1.5}], "empty": np.zeros((0, 7))}
    for data in (pack(value), peer.packb(value)):  # ours, and as the reference writes it
        out = unpack_map(data, "observation")
        assert out.keys() == value.keys()
        assert out["observation/image"].dtype == np.uint8
        np.testing.assert_array_equal(out["observation/image"], value["observation/image"])
        np.testing.assert_array_equal(out["observation/state"], value["observation/state"])
        assert out["n"] == 7 and out["n"].dtype == np.int64 and out["ok"] == np.True_
        assert out["nested"] == [{"a": None, "b": 1.5}] and out["empty"].shape == (0, 7)
    back = peer.unpackb(pack(value))  # and the reference reads ours
    np.testing.assert_array_equal(back[b"observation/image" if b"observation/image" in back
                                       else "observation/image"], value["observation/image"])


def test_a_decoded_array_is_writable_and_owns_its_memory() -> None:
    out = unpack(pack(np.ones((2, 2))))
    out[0, 0] = 5.0
    assert out.flags.owndata and out[0, 0] == 5.0


def _array_map(**fields: object) -> bytes:
    base: dict[object, object] = {b"__ndarray__": True, b"data": b"\0" * 8, b"dtype": "<f4",
                                  b"shape": [2]}
    base.update({k.encode(): v for k, v in fields.items()})
    return msgpack.packb({"actions": base})


@pytest.mark.parametrize(("data", "words"), [
    (_array_map(dtype="|O"), "only bool, integer and float"),
    (_array_map(dtype="<c16", data=b"\0" * 16, shape=[1]), "only bool, integer and float"),
    (_array_map(dtype=[["a", "<f4"]]), "not a NumPy dtype string"),
    (_array_map(dtype="nonsense"), "not a NumPy dtype"),
    (_array_map(shape=[3]), "needs 12 bytes of data, and 8 came"),
    (_array_map(shape=[-1]), "non-negative integers"),
    (_array_map(shape=[1] * 9, data=b"\0" * 4), "at most 8"),
    (_array_map(shape=[True, True]), "non-negative integers"),
    (_array_map(data="text"), "not bytes"),
    (msgpack.packb({"x": msgpack.ExtType(5, b"pickle")}), "extension value (type 5"),
    (b"\xc1", "not valid msgpack"),
    (msgpack.packb({"a": 1})[:-1], "not valid msgpack"),
    (msgpack.packb(1) + msgpack.packb(2), "not valid msgpack"),
    (msgpack.packb({1: "int key"}), "not valid msgpack"),
    (msgpack.packb({b"__npgeneric__": True, b"dtype": "<f8", b"data": "x"}), "not a number"),
])
def test_anything_but_plain_msgpack_and_arrays_is_refused(data: bytes, words: str) -> None:
    with pytest.raises(BridgeError) as caught:
        unpack(data)
    assert caught.value.code == "POLICY_PROTOCOL" and words in caught.value.message


def test_deep_nesting_and_oversized_messages_are_refused_before_decoding() -> None:
    with pytest.raises(BridgeError) as caught:
        unpack(b"\x91" * 100_000 + b"\xc0")  # a list in a list ... 100 000 deep
    assert caught.value.code == "POLICY_PROTOCOL"
    with pytest.raises(BridgeError) as caught:
        unpack(pack(np.zeros(1000)), max_bytes=1000)
    assert caught.value.code == "POLICY_TOO_LARGE" and "over the limit of 1000" in str(
        caught.value)


def test_a_message_that_must_be_a_map_says_what_it_was() -> None:
    with pytest.raises(BridgeError, match="the action chunk is a msgpack list, not a map"):
        unpack_map(pack([1, 2]), "action chunk")


def test_what_cannot_travel_is_refused_when_packing() -> None:
    with pytest.raises(BridgeError, match="dtype object cannot be sent"):
        pack({"x": np.array([object()])})
    with pytest.raises(BridgeError, match="a set cannot be sent"):
        pack({"x": {1, 2}})
