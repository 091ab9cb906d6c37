"""Seeded fault injection inside the simulator (all off by default).

* **nudge**: while the hand approaches the target (within 12 cm above it, not holding it),
  push the target 3-5 cm sideways, once per episode with probability ``rates.nudge``.
* **slip**: while the target is carried (held, lifted >= 1 cm), the fingers go limp and the
  target loses its friction for 8 steps, once per episode with probability ``rates.slip``.

The target is the scene's ``target`` parameter (or its first object parameter) when that is an
object that moves; otherwise (``sort``: its parameter is the container) every movable object is
a target: the first one approached is nudged, the first one carried slips.
* **occlude**: each step, with probability ``rates.occlude``, cover a large part of one camera's
  image (dark pixels, depth a few cm from the lens) for ``rates.occlude_steps`` steps.
* **drop** / **delay**: per ``/step`` decisions for the HTTP server (:class:`TransportFaults`).

Every fault that fires is recorded (episode step, kind, details) in the episode's result, and
goes out with the answer of the step it fired in (:class:`~runtime_bridge.sim.env.SimEnv`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime_bridge.sim.config import CameraSpec, FaultRates
from runtime_bridge.sim.scene import SimWorld

__all__ = ["FaultInjector", "TransportFaults"]

SLIP_STEPS = 8


@dataclass
class FaultInjector:
    """The simulator-side faults of one episode; ``rng`` is seeded from the episode seed."""

    rates: FaultRates
    rng: np.random.Generator
    target: str | None
    fired: list[dict[str, Any]] = field(default_factory=list)
    _nudge_decided: bool = False
    _slip_decided: bool = False
    _slip_left: int = 0
    _slipping: str | None = None
    _occlusion: tuple[str, tuple[int, int, int, int], int] | None = None

    def before_physics(self, scene: SimWorld, step: int) -> None:
        """Decide and apply nudge / slip for this step (called after the action, before physics)."""
        candidates = [self.target] if self.target in scene.objects and \
            scene.movable(self.target) else [n for n in scene.objects if scene.movable(n)]
        if not candidates:
            return
        approached = next((n for n in candidates if self._approaching(scene, n)), None)
        if self.rates.nudge and not self._nudge_decided and approached is not None:
            self._nudge_decided = True
            if self.rng.random() < self.rates.nudge:
                angle = float(self.rng.uniform(0, 2 * np.pi))
                dist = float(self.rng.uniform(0.03, 0.05))
                pos = scene.position(approached)
                x, y = pos[0] + dist * np.cos(angle), pos[1] + dist * np.sin(angle)
                scene.set_object_xy(approached, x, y)
                self.fired.append({"step": step, "kind": "nudge", "object": approached,
                                   "offset_m": [round(float(dist * np.cos(angle)), 4),
                                                round(float(dist * np.sin(angle)), 4)]})
        if self._slip_left:
            self._slip_left -= 1
            if not self._slip_left and self._slipping is not None:
                scene.set_slippery(self._slipping, False)
                self._slipping = None
            return
        carried = next((n for n in candidates if self._carried(scene, n)), None)
        if self.rates.slip and not self._slip_decided and carried is not None:
            self._slip_decided = True
            if self.rng.random() < self.rates.slip:
                scene.set_slippery(carried, True)
                self._slipping = carried
                self._slip_left = SLIP_STEPS
                self.fired.append({"step": step, "kind": "slip", "object": carried,
                                   "steps": SLIP_STEPS})

    def occlusions(self, specs: tuple[CameraSpec, ...], step: int
                   ) -> dict[str, tuple[int, int, int, int]]:
        """The camera boxes to paint over in this step's frames."""
        if self._occlusion is not None:
            name, box, left = self._occlusion
            self._occlusion = (name, box, left - 1) if left > 1 else None
            return {name: box}
        if self.rates.occlude and specs and self.rng.random() < self.rates.occlude:
            spec = specs[int(self.rng.integers(len(specs)))]
            w = int(spec.width * self.rng.uniform(0.4, 0.7))
            h = int(spec.height * self.rng.uniform(0.4, 0.7))
            x0 = int(self.rng.integers(0, spec.width - w + 1))
            y0 = int(self.rng.integers(0, spec.height - h + 1))
            box = (x0, y0, x0 + w, y0 + h)
            self.fired.append({"step": step, "kind": "occlude", "camera": spec.name,
                               "box": list(box), "steps": self.rates.occlude_steps})
            if self.rates.occlude_steps > 1:
                self._occlusion = (spec.name, box, self.rates.occlude_steps - 1)
            return {spec.name: box}
        return {}

    def end(self, scene: SimWorld) -> None:
        if self._slip_left and self._slipping in scene.objects:
            scene.set_slippery(self._slipping, False)
        self._slip_left = 0
        self._slipping = None

    @staticmethod
    def _approaching(scene: SimWorld, name: str) -> bool:
        tcp = scene.arm.tcp_pose()[0]
        obj = scene.position(name)
        dz = tcp[2] - obj[2]
        return bool(np.hypot(tcp[0] - obj[0], tcp[1] - obj[1]) < 0.05 and 0.02 < dz < 0.12
                    and not any(scene.finger_contacts(name)))

    @staticmethod
    def _carried(scene: SimWorld, name: str) -> bool:
        lifted = scene.position(name)[2] - scene.start[name][2]
        return bool(lifted > 0.01 and scene.held(name))


class TransportFaults:
    """Per-``/step`` decisions for the server: ``"drop"`` (apply the step, withhold the answer),
    ``"delay"`` (answer late) or None. Seeded; one stream per server."""

    def __init__(self, rates: FaultRates, seed: int = 0) -> None:
        self.rates = rates
        self.rng = np.random.default_rng([seed, 0x7A11])
        self.fired: list[dict[str, Any]] = []

    def draw(self, count: int) -> str | None:
        """Decide the fault of the ``count``-th ``/step`` request."""
        kind = None
        if self.rates.drop and self.rng.random() < self.rates.drop:
            kind = "drop"
        elif self.rates.delay and self.rng.random() < self.rates.delay:
            kind = "delay"
        if kind:
            self.fired.append({"request": count, "kind": kind})
        return kind
