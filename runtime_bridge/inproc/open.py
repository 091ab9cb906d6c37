"""``open_runtime``: the ``harness_bt.bridges`` entry point ``inproc`` (what ``harness run``
uses): an :class:`~runtime_bridge.inproc.InProcRuntime` over the built-in simulator, or over
the GenManip server at ``RunOptions.sim_url``, hosting every executor installed in the
``harness_bt.executors`` entry-point group (``runtime_bridge`` never imports ``skills``)."""

from __future__ import annotations

from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.runtime.episodes import RunOptions
from harness_bt.runtime.executor import load_executors
from runtime_bridge.inproc.frames import DEFAULT_MONITOR_HZ
from runtime_bridge.inproc.runtime import InProcRuntime
from runtime_bridge.sim.config import DEFAULT_CAMERAS, DEFAULT_HOLD_STEPS

__all__ = ["DEFAULT_BATCH_STEPS", "DEFAULT_CAMERAS", "DEFAULT_HOLD_STEPS", "open_runtime"]

#: Most simulator steps one poll of ``harness run`` in-process runs while nobody looks.
DEFAULT_BATCH_STEPS = 15

_SIM_FAULTS = ("nudge", "slip", "occlude")
_TRANSPORT_FAULTS = ("drop", "delay")


def _faults(faults: dict[str, float]) -> Any:
    from runtime_bridge.sim.config import FaultRates

    unknown = sorted(set(faults) - set(_SIM_FAULTS) - set(_TRANSPORT_FAULTS))
    if unknown:
        raise DefinitionError("UNKNOWN_FAULT", f"unknown fault(s) {', '.join(unknown)}; known: "
                              f"{', '.join(_SIM_FAULTS)}", fix="write e.g. slip=0.3,nudge=0.3")
    transport = sorted(set(faults) & set(_TRANSPORT_FAULTS))
    if transport:
        raise DefinitionError("UNSUPPORTED_FAULT", f"{', '.join(transport)} are faults of the "
                              "HTTP transport; the in-process simulator has none",
                              fix="serve the simulator (harness sim serve --fault-drop ...) and "
                                  "run with --sim URL")
    return FaultRates(**{k: float(v) for k, v in faults.items()})  # type: ignore[arg-type]


def open_runtime(options: RunOptions) -> InProcRuntime:
    """The runtime ``options`` ask for (see the module docstring).
    ``options.runtime_settings`` may hold
    ``executors`` (``package.module:factory``, instead of the installed executors),
    ``worker_id`` (the GenManip worker to drive, default ``0``),
    ``num_steps`` (per episode, built-in simulator: default the scene's ``max_steps``, else
    600; for a server, overrides what it reports), ``success_hold_steps``, ``render`` (built-in
    simulator: ``on_demand``, the default, frames only for the steps someone reads
    (:mod:`runtime_bridge.inproc.frames`); ``round_robin``, one camera every step; or ``all``)
    ``frame_hz`` (``on_demand``: frames per second while commands run, default
    :data:`~runtime_bridge.inproc.frames.DEFAULT_MONITOR_HZ`) and ``batch_steps``
    (``on_demand``: most steps one poll runs while nobody looks, default
    :data:`DEFAULT_BATCH_STEPS`; 1: one step per poll) and ``keep_world`` (built-in simulator:
    keep its PyBullet world for the process's next runtime, :mod:`runtime_bridge.sim.worlds`)."""
    extra = options.runtime_settings.given()
    executors = load_executors(extra.get("executors"))
    if options.sim_url:
        if options.faults:
            raise DefinitionError(
                "UNSUPPORTED_FAULT", "--inject configures the built-in simulator; a server at "
                f"{options.sim_url} injects its own faults",
                fix="start the server with its fault options (harness sim serve --fault-slip "
                    "0.3 ...)")
        from runtime_bridge.genmanip.backend import GenManipBackend

        backend: Any = GenManipBackend(options.sim_url,
                                       worker_id=str(extra.get("worker_id", "0")))
        steps = extra.get("num_steps")
        return InProcRuntime(backend, executors,
                             num_steps=int(steps) if steps is not None else None)
    from runtime_bridge.sim.backend import SimBackend
    from runtime_bridge.sim.config import SimConfig, parse_camera_spec

    faults = _faults(dict(options.faults))
    if options.scene is None:
        raise DefinitionError(
            "NO_SCENE", f"task {options.task!r} names no scene for the built-in simulator",
            fix="add 'scene: NAME' to the task (harness scenes lists them), or pass --scene "
                "NAME_OR_FILE")
    from harness_bt.authoring.scenes import load_scene

    scene = options.scene_document or load_scene(options.scene, params=options.params)
    own_steps = scene.spec.max_steps
    config = SimConfig(
        scenes=(options.scene,), params=dict(options.params),
        episodes=max(1, int(options.episodes)), seed=int(options.seed),
        num_steps=int(extra.get("num_steps", own_steps or 600)),
        cameras=tuple(parse_camera_spec(c) for c in (options.cameras or DEFAULT_CAMERAS)),
        faults=faults,
        success_hold_steps=int(extra.get("success_hold_steps", DEFAULT_HOLD_STEPS)),
        render=str(extra.get("render", "on_demand")),
        keep_world=bool(extra.get("keep_world", False)),
    )
    from runtime_bridge.sim.scenes import SimScene

    backend = SimBackend(config, scenes={options.scene: SimScene(scene)})
    return InProcRuntime(backend, executors,
                         monitor_hz=extra.get("frame_hz", DEFAULT_MONITOR_HZ),
                         batch_steps=extra.get("batch_steps", DEFAULT_BATCH_STEPS))
