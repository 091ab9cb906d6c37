"""The injector fires at the rate asked for: over N independent opportunities at probability
p (each seeded as the simulator seeds its episodes), the number of faults fired is binomially
plausible (exact two-sided p-value above 1e-3), for several p and each kind of fault; and the
check has the power to catch an injector that fires at twice p."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from runtime_bridge.sim.config import FaultRates, parse_camera_spec
from runtime_bridge.sim.faults import FaultInjector

#: the significance below which a count is implausible
ALPHA = 1e-3


def binomial_p_value(k: int, n: int, p: float) -> float:
    """Exact two-sided p-value of ``k`` successes in ``n`` trials at ``p``: the probability
    of every outcome no more likely than ``k`` (as ``scipy.stats.binomtest``)."""
    def log_pmf(i: int) -> float:
        return (math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                + i * math.log(p) + (n - i) * math.log1p(-p))

    threshold = log_pmf(k) + 1e-7  # relative tolerance on ties, as scipy
    return min(1.0, sum(math.exp(log_pmf(i)) for i in range(n + 1) if log_pmf(i) <= threshold))


@dataclass
class _Arm:
    tcp: np.ndarray

    def tcp_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return self.tcp, np.array([1.0, 0.0, 0.0, 0.0])


@dataclass
class _Scene:
    """What the injector reads of a world, with the cube either carried (lifted 5 cm, held)
    or being approached (the hand 6 cm above it, not touching)."""

    carried: bool
    objects: dict[str, Any] = field(default_factory=lambda: {"red_cube": None})
    start: dict[str, np.ndarray] = field(
        default_factory=lambda: {"red_cube": np.array([0.5, 0.0, 0.02])})
    arm: _Arm = field(default_factory=lambda: _Arm(np.array([0.5, 0.0, 0.08])))

    def movable(self, name: str) -> bool:
        return True

    def position(self, name: str) -> np.ndarray:
        return self.start[name] + (np.array([0.0, 0.0, 0.05]) if self.carried else 0.0)

    def held(self, name: str) -> bool:
        return self.carried

    def finger_contacts(self, name: str) -> list[str]:
        return ["left", "right"] if self.carried else []

    def set_slippery(self, name: str, on: bool) -> None:
        pass

    def set_object_xy(self, name: str, x: float, y: float) -> None:
        pass


def fired_once_per_episode(kind: str, rate: float, episodes: int) -> int:
    """How many of ``episodes`` (seeds 0..N-1, each injector seeded as the simulator seeds
    it) fire ``kind`` (slip or nudge: one opportunity per episode)."""
    count = 0
    for seed in range(episodes):
        injector = FaultInjector(FaultRates(**{kind: rate}),
                                 np.random.default_rng([seed, 0xFA17]), "red_cube")
        scene: Any = _Scene(carried=kind == "slip")
        for step in range(3):  # later steps are no new opportunity
            injector.before_physics(scene, step)
        count += len(injector.fired)
    return count


def fired_per_step(rate: float, steps: int, seed: int = 7) -> int:
    """How many of ``steps`` observations of one episode are occluded (one opportunity each,
    the occlusion lasting one step)."""
    injector = FaultInjector(FaultRates(occlude=rate, occlude_steps=1),
                             np.random.default_rng([seed, 0xFA17]), "red_cube")
    cams = (parse_camera_spec("front:64x48"),)
    for step in range(steps):
        injector.occlusions(cams, step)
    return len(injector.fired)


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("kind", ["slip", "nudge"])
def test_once_per_episode_faults_fire_at_a_binomially_plausible_rate(kind: str, p: float
                                                                      ) -> None:
    n = 1000
    k = fired_once_per_episode(kind, p, n)
    assert binomial_p_value(k, n, p) > ALPHA, (kind, p, k)


@pytest.mark.parametrize("p", [0.02, 0.2, 0.5])
def test_occlusions_fire_per_step_at_a_binomially_plausible_rate(p: float) -> None:
    n = 3000
    k = fired_per_step(p, n)
    assert binomial_p_value(k, n, p) > ALPHA, (p, k)


@pytest.mark.parametrize("p", [0.05, 0.2, 0.4])
def test_the_check_catches_an_injector_firing_at_twice_the_rate(p: float) -> None:
    n = 1000
    assert binomial_p_value(fired_once_per_episode("slip", 2 * p, n), n, p) < ALPHA
    assert binomial_p_value(fired_per_step(2 * p, n), n, p) < ALPHA


def test_the_exact_p_value_agrees_with_scipy_and_with_hand_figures() -> None:
    assert binomial_p_value(5, 10, 0.5) == pytest.approx(1.0)
    assert binomial_p_value(0, 6, 0.3) == pytest.approx(0.7 ** 6 + sum(
        math.comb(6, i) * 0.3 ** i * 0.7 ** (6 - i) for i in (4, 5, 6)))  # 0.7**6 = 0.118
    stats = pytest.importorskip("scipy.stats")
    for k, n, p in [(3, 20, 0.3), (6, 20, 0.3), (130, 1000, 0.1), (0, 50, 0.05)]:
        assert binomial_p_value(k, n, p) == pytest.approx(stats.binomtest(k, n, p).pvalue,
                                                          rel=1e-6)
