"""Backends by name, for ``harness runtime serve --backend SPEC``.

``kinematic``: the deterministic :class:`~runtime_bridge.kinematic.KinematicBackend`.
``sim``: the built-in PyBullet Franka simulator (``runtime_bridge.sim``, from the simulator
issue): it plugs in by providing ``runtime_bridge.sim.make_backend(dt: float, *, task: str,
seed: int) -> Backend``; ``sim_task`` and ``seed`` (``--sim-task``, ``--seed``) choose its
scene and layout, and are refused with any other backend.
``http://HOST:PORT``: a GenManip server through the GenManip client (the GenManip issue): it
plugs in by providing ``runtime_bridge.genmanip.make_backend(url: str, dt: float) -> Backend``.
``package.module:callable``: any factory ``callable(dt: float) -> Backend``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from harness_bt.errors import BridgeError
from runtime_bridge.host import Backend
from runtime_bridge.kinematic import KinematicBackend

__all__ = ["backend_from_spec", "load_object"]

_HOOKS = {
    "sim": ("runtime_bridge.sim", "make_backend", "the built-in PyBullet simulator"),
    "genmanip": ("runtime_bridge.genmanip", "make_backend", "the GenManip client"),
}


def load_object(spec: str, what: str) -> Any:
    """``package.module:attr`` -> the object, with an error that names what failed."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BridgeError("INVALID_CONFIG", f"{what} {spec!r} is not of the form "
                          "package.module:name", fix="e.g. tests.runtime_bridge.executors:factory")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BridgeError("INVALID_CONFIG", f"{what} {spec!r}: cannot import {module_name!r} "
                          f"({exc})", fix="install the package that provides it") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise BridgeError("INVALID_CONFIG", f"{what} {spec!r}: {module_name!r} has no "
                          f"{attr!r}") from None


def _hook(name: str, *args: Any, **kwargs: Any) -> Backend:
    module, attr, what = _HOOKS[name]
    try:
        factory: Callable[..., Backend] = load_object(f"{module}:{attr}", f"backend {name!r}")
    except BridgeError as exc:
        raise BridgeError("BACKEND_UNAVAILABLE", f"backend {name!r} needs {what} "
                          f"({module}.{attr}), which is not installed here: {exc.message}",
                          fix="use --backend kinematic, or install the branch that provides it"
                          ) from exc
    return factory(*args, **kwargs)


def backend_from_spec(spec: str, *, dt: float = 1.0 / 30.0, sim_task: str | None = None,
                      seed: int | None = None) -> Backend:
    """The backend that ``spec`` names (see the module docstring)."""
    given = {flag: value for flag, value in (("--sim-task", sim_task), ("--seed", seed))
             if value is not None}
    if given and spec != "sim":
        flags = ", ".join(f"{flag} {value}" for flag, value in given.items())
        raise BridgeError("INVALID_CONFIG", f"{flags}: only for --backend sim (they choose the "
                          f"built-in simulator's scene), not --backend {spec}",
                          fix=f"drop {' and '.join(given)}, or serve --backend sim")
    if spec == "kinematic":
        return KinematicBackend(dt=dt)
    if spec == "sim":
        options = {"task": sim_task, "seed": seed}
        return _hook("sim", dt, **{k: v for k, v in options.items() if v is not None})
    if spec.startswith(("http://", "https://")):
        return _hook("genmanip", spec, dt)
    if ":" in spec:
        return load_object(spec, "backend")(dt)
    raise BridgeError("INVALID_CONFIG", f"unknown backend {spec!r}; known: kinematic, sim, "
                      "http(s)://GENMANIP_SERVER, package.module:factory")
