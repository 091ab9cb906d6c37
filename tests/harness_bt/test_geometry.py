"""The one quaternion module: products, angles, turns, matrices and yaw agree with each other
and with the conventions (w, x, y, z; PyBullet's x, y, z, w only through the converters)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_bt.geometry import (
    matrix_to_quat,
    qangle,
    qconj,
    qmul,
    qnormalize,
    qrelative,
    qrotate_towards,
    rotation_matrix,
    wxyz_to_xyzw,
    xyzw_to_wxyz,
    yaw_of,
    yaw_quat,
)

unit = st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(
    lambda q: float(np.linalg.norm(q)) > 0.1).map(qnormalize)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(unit, unit)
def test_the_turn_from_one_quaternion_to_another_gets_there(q: np.ndarray, goal: np.ndarray
                                                            ) -> None:
    axis, angle = qrelative(q, goal)
    half = angle / 2.0
    turned = qmul(np.array([math.cos(half), *(axis * math.sin(half))]), q)
    assert qangle(turned, goal) == pytest.approx(0.0, abs=1e-6)
    assert angle == pytest.approx(qangle(q, goal), abs=1e-6)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(unit)
def test_a_matrix_and_its_quaternion_are_one_rotation(q: np.ndarray) -> None:
    assert qangle(matrix_to_quat(rotation_matrix(q)), q) == pytest.approx(0.0, abs=1e-6)
    assert np.allclose(qmul(q, qconj(q)), [1.0, 0.0, 0.0, 0.0], atol=1e-12)
    assert np.allclose(xyzw_to_wxyz(wxyz_to_xyzw(q)), q)


def test_yaw_turns_about_world_z_and_a_limited_turn_stops_short() -> None:
    assert yaw_of(yaw_quat(0.7)) == pytest.approx(0.7)
    step = qrotate_towards(yaw_quat(0.0), yaw_quat(1.0), 0.25)
    assert yaw_of(step) == pytest.approx(0.25)
    assert qrotate_towards(yaw_quat(0.0), yaw_quat(0.1), 0.25) == pytest.approx(yaw_quat(0.1))


def test_a_zero_quaternion_has_no_direction() -> None:
    with pytest.raises(ValueError, match=r"has no direction"):
        qnormalize([0.0, 0.0, 0.0, 0.0])
