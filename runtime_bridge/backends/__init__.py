"""Backends by name, for ``harness runtime serve --backend SPEC``.

A backend is a robot or a simulator a runtime steps (:class:`harness_bt.runtime.backend.
Backend`). They are plug-ins: each is an entry point of the ``harness_bt.backends`` group
(:data:`~harness_bt.runtime.backend.BackendFactory`, called ``factory(dt=..., **options)``).
This package provides:

- ``kinematic``: the deterministic :class:`~runtime_bridge.backends.kinematic.KinematicBackend`;
- ``sim``: the built-in PyBullet Franka simulator (``runtime_bridge.sim``); ``sim_scene``,
  ``sim_params`` and ``seed`` (``--sim-scene``, ``--sim-set``, ``--seed``) choose its scene,
  the scene's parameters and the layout, and are refused with any other backend;
- ``genmanip``: a GenManip server through the GenManip client, named by its URL
  (``--backend http://HOST:PORT``);

and ``package.module:callable`` names any factory ``callable(dt=...)`` directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_bt.errors import BridgeError
from harness_bt.plugins import load_reference
from harness_bt.runtime.backend import Backend, backend_registry

__all__ = ["backend_from_spec"]


def backend_from_spec(spec: str, *, dt: float = 1.0 / 30.0, sim_scene: str | None = None,
                      sim_params: Mapping[str, Any] | None = None,
                      seed: int | None = None) -> Backend:
    """The backend that ``spec`` names (see the module docstring)."""
    given = {flag: value for flag, value in (("--sim-scene", sim_scene),
                                             ("--sim-set", sim_params or None), ("--seed", seed))
             if value is not None}
    if given and spec != "sim":
        flags = ", ".join(f"{flag} {value}" for flag, value in given.items())
        raise BridgeError("INVALID_CONFIG", f"{flags}: only for --backend sim (they choose the "
                          f"built-in simulator's scene), not --backend {spec}",
                          fix=f"drop {' and '.join(given)}, or serve --backend sim")
    if spec.startswith(("http://", "https://")):
        factory = backend_registry(entry_points=True).get("genmanip", where="--backend")
        return factory(dt=dt, url=spec)
    if ":" in spec:
        backend: Backend = load_reference(spec, "backend")(dt=dt)
        return backend
    factory = backend_registry(entry_points=True).get(spec, where="--backend")
    if spec == "sim":
        options = {"scene": sim_scene, "params": sim_params or None, "seed": seed}
        return factory(dt=dt, **{k: v for k, v in options.items() if v is not None})
    return factory(dt=dt)
