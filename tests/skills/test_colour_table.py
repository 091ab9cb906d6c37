"""The colour lookup table gives the masks the HSV conversion gives, pixel for pixel; the square
filters of occlusion checking match a brute-force neighbourhood scan."""

from __future__ import annotations

import numpy as np
import pytest

from skills.perception.catalogue import BUILTIN_OBJECTS, NAMED_RANGES
from skills.perception.vision import ColourRange, ColourTable, dilate, erode_min, hsv


def _reference(rgb: np.ndarray, ranges: tuple[ColourRange, ...]) -> list[np.ndarray]:
    h, s, v = hsv(rgb)
    return [c.mask(h, s, v) for c in ranges]


def _images(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8)
    # the colours where the ranges' edges lie: greys, pure hues, each channel's extremes
    levels = np.array([0, 1, 2, 63, 64, 127, 128, 148, 149, 150, 254, 255], dtype=np.uint8)
    grid = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(
        -1, 3)[None]
    shaded = np.clip(np.array([217, 25, 25]) * rng.random((30, 40, 1)), 0, 255).astype(np.uint8)
    return [noise, np.ascontiguousarray(grid), shaded]


@pytest.mark.parametrize("ranges", [
    tuple(dict.fromkeys(o.colour for o in BUILTIN_OBJECTS)),  # 5 ranges: one byte a colour
    tuple(NAMED_RANGES.values()),  # 10: two bytes
    (*(ColourRange(float(h), float(h + 20), 0.3, 1.0, 0.2, 1.0) for h in range(0, 340, 20)),
     ColourRange(350.0, 10.0)),  # 18 (one wrapping through red): four bytes
])
def test_the_table_gives_the_hsv_masks_pixel_for_pixel(ranges: tuple[ColourRange, ...]) -> None:
    table = ColourTable(ranges)
    for seed in (0, 1):
        for rgb in _images(seed):
            bits = table.classify(rgb)
            assert bits.shape == rgb.shape[:2]
            for colour, expected in zip(ranges, _reference(rgb, ranges), strict=True):
                assert np.array_equal(table.mask(bits, colour), expected)
    again = table.classify(_images(0)[0])  # every colour known now: looked up, same answer
    for colour, expected in zip(ranges, _reference(_images(0)[0], ranges), strict=True):
        assert np.array_equal(table.mask(again, colour), expected)


def test_a_colour_learnt_once_is_not_converted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = (NAMED_RANGES["red"], NAMED_RANGES["grey"])
    table = ColourTable(ranges)
    rgb = _images(3)[2]
    first = table.classify(rgb)
    import skills.perception.vision as vision

    def no_conversion(_: np.ndarray) -> None:
        raise AssertionError("a known colour was converted again")

    monkeypatch.setattr(vision, "hsv", no_conversion)
    assert np.array_equal(table.classify(rgb), first)
    with pytest.raises(AssertionError, match="converted again"):  # a new colour still is
        table.classify(np.full((2, 2, 3), 7, dtype=np.uint8))


def test_more_ranges_than_bits_are_converted_image_by_image() -> None:
    ranges = tuple(ColourRange(float(h), float(h + 5)) for h in range(0, 320, 10))  # 32
    table = ColourTable(ranges)
    rgb = _images(2)[0]
    bits = table.classify(rgb)
    for colour, expected in zip(ranges, _reference(rgb, ranges), strict=True):
        assert np.array_equal(table.mask(bits, colour), expected)


@pytest.mark.parametrize("bad", [np.zeros((4, 4, 3), dtype=np.float32),
                                 np.zeros((4, 4), dtype=np.uint8),
                                 np.zeros((4, 4, 4), dtype=np.uint8)])
def test_an_image_that_is_not_hxwx3_uint8_is_refused(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        ColourTable((NAMED_RANGES["red"],)).classify(bad)


def _brute(values: np.ndarray, radius: int, pick: str) -> np.ndarray:
    h, w = values.shape
    out = np.empty_like(values)
    for r in range(h):
        for c in range(w):
            patch = values[max(r - radius, 0):r + radius + 1, max(c - radius, 0):c + radius + 1]
            out[r, c] = patch.any() if pick == "any" else patch.min()
    return out


@pytest.mark.parametrize(("shape", "radius"), [((9, 13), 2), ((7, 5), 1), ((3, 2), 2)])
def test_dilate_and_erode_min_match_a_neighbourhood_scan(shape: tuple[int, int],
                                                         radius: int) -> None:
    rng = np.random.default_rng(7)
    mask = rng.random(shape) < 0.2
    values = np.where(rng.random(shape) < 0.5, np.inf, rng.random(shape))
    assert np.array_equal(dilate(mask, radius), _brute(mask, radius, "any"))
    assert np.array_equal(erode_min(values, radius), _brute(values, radius, "min"))
