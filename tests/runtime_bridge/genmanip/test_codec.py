"""The wire encodings round-trip, and hostile or malformed bodies are refused with a reason."""

from __future__ import annotations

import base64
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.safepickle import safe_loads

DTYPES = ["bool", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]

arrays = st.sampled_from(DTYPES).flatmap(
    lambda d: hnp.arrays(np.dtype(d), hnp.array_shapes(min_dims=0, max_dims=3, max_side=5)))
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(
    max_size=10) | st.binary(max_size=10)
trees = st.recursive(
    scalars | arrays,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def assert_same(a: object, b: object) -> None:
    assert type(a) is type(b) or (isinstance(a, np.ndarray) and isinstance(b, np.ndarray))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b


@settings(max_examples=60, deadline=None)
@given(trees)
def test_compatible_encoding_round_trips(tree: object) -> None:
    assert_same(tree, codec.loads(codec.dumps(tree)))


@settings(max_examples=60, deadline=None)
@given(trees)
def test_frames_encoding_round_trips(tree: object) -> None:
    assert_same(tree, codec.loads_frames(codec.dumps_frames(tree)))


def test_compatible_encoding_is_the_upstream_numpy_dict() -> None:
    rgb = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    raw = pickle.loads(codec.dumps({"rgb": rgb, "pose": (np.zeros(3), [1.0])}))
    assert raw["rgb"] == {"type": "numpy_array", "dtype": "uint8", "shape": (2, 4, 3),
                          "data": base64.b64encode(rgb.tobytes()).decode()}
    assert isinstance(raw["pose"], tuple)


def test_frames_arrays_are_views_on_the_body_without_copy() -> None:
    depth = np.random.default_rng(0).random((48, 64), dtype=np.float32)
    body = codec.dumps_frames({"depth": depth})
    out = codec.loads_frames(body)["depth"]
    np.testing.assert_array_equal(out, depth)
    assert not out.flags.owndata and not out.flags.writeable
    assert len(body) < depth.nbytes + 512  # no base64 inflation


class Hostile:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("this must never run",))


@pytest.mark.parametrize("payload, code, status", [
    (pickle.dumps(Hostile(), protocol=5), "PICKLE_GLOBAL_REFUSED", 400),
    (pickle.dumps({"x": np.float64(1.0)}), "PICKLE_GLOBAL_REFUSED", 400),  # numpy scalar global
    (pickle.dumps({"a": 1}, protocol=5)[:-3], "PICKLE_UNREADABLE", 400),
    (b"GET / HTTP/1.1", "PICKLE_UNREADABLE", 400),
    (b"", "EMPTY_BODY", 400),
])
def test_unsafe_or_unreadable_pickles_are_refused(payload: bytes, code: str, status: int,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(HttpError) as info:
        codec.loads(payload)
    assert info.value.code == code and info.value.http_status == status
    assert "this must never run" not in capsys.readouterr().out
    assert info.value.fix


def test_global_refusal_names_the_global() -> None:
    with pytest.raises(HttpError, match=r"builtins\.print"):
        safe_loads(pickle.dumps(Hostile(), protocol=5))


def test_oversized_bodies_are_refused_before_reading() -> None:
    body = codec.dumps({"a": "x" * 1000})
    with pytest.raises(HttpError, match="over the limit of 100 bytes") as info:
        codec.loads(body, max_bytes=100)
    assert info.value.http_status == 413 and info.value.code == "BODY_TOO_LARGE"
    with pytest.raises(HttpError, match="over the limit"):
        codec.loads_frames(codec.dumps_frames({"a": np.zeros(100)}), max_bytes=100)


def bad_array(**overrides: object) -> bytes:
    good = {"type": "numpy_array", "dtype": "float32", "shape": (2,),
            "data": base64.b64encode(np.zeros(2, np.float32).tobytes()).decode()}
    good.update(overrides)
    return pickle.dumps({"obs": good}, protocol=5)


@pytest.mark.parametrize("overrides, match", [
    ({"dtype": "object"}, "dtype 'object' is not allowed"),
    ({"dtype": "complex128"}, "not allowed"),
    ({"shape": (3,)}, r"8 bytes do not fill shape \(3,\)"),
    ({"shape": (-1,)}, "non-negative ints"),
    ({"shape": "2"}, "is not a tuple"),
    ({"data": "!!notbase64!!"}, "not valid base64"),
    ({"data": 12}, "expected base64 text"),
])
def test_malformed_array_dicts_name_the_field(overrides: dict[str, object], match: str) -> None:
    with pytest.raises(HttpError, match=match) as info:
        codec.loads(bad_array(**overrides))
    assert "['obs']" in str(info.value)


def test_shared_reference_bombs_are_refused() -> None:
    layer: list[object] = ["x"]
    for _ in range(30):  # 2**30 leaves if expanded
        layer = [layer, layer]
    with pytest.raises(HttpError, match="more than"):
        codec.loads(pickle.dumps(layer, protocol=5))


def test_frames_with_a_bad_header_or_index_are_refused() -> None:
    body = codec.dumps_frames({"a": np.zeros(4)})
    with pytest.raises(HttpError, match="frames header"):
        codec.loads_frames(b"XXXX" + body[4:])
    with pytest.raises(HttpError, match="truncated"):
        codec.loads_frames(body[:-5])
    forged = pickle.dumps({"a": {"type": "numpy_buffer", "dtype": "uint8", "shape": (1,),
                                 "index": 3}}, protocol=5)
    with pytest.raises(HttpError, match="buffer index 3"):
        codec.loads(forged)


@pytest.mark.parametrize("accept, expected", [
    (None, False),
    ("application/octet-stream", False),
    (codec.FRAMES_MEDIA_TYPE, True),
    (f"{codec.FRAMES_MEDIA_TYPE};q=0, application/octet-stream", False),
    (f"application/octet-stream;q=0.5, {codec.FRAMES_MEDIA_TYPE}", True),
])
def test_fast_path_is_negotiated_with_accept(accept: str | None, expected: bool) -> None:
    assert codec.wants_frames(accept) is expected


def test_decode_picks_the_encoding_from_the_media_type() -> None:
    tree = {"a": np.arange(3)}
    assert_same(tree, codec.decode(codec.dumps_frames(tree), codec.FRAMES_MEDIA_TYPE))
    assert_same(tree, codec.decode(codec.dumps(tree), "application/octet-stream"))
    assert_same(tree, codec.decode(codec.dumps(tree), None))
