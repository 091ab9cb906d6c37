"""The built-in simulator behind the GenManip HTTP routes (what ``harness sim serve`` runs)."""

from __future__ import annotations

from fastapi import FastAPI

from harness_bt.errors import DefinitionError
from harness_bt.request_budget import RequestBudget
from runtime_bridge.genmanip.server import DEFAULT_MAX_REQUEST_BYTES, AppSettings, create_app
from runtime_bridge.genmanip.shm import ShmConfig
from runtime_bridge.sim.config import SimConfig
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.episodes import EpisodeBook
from runtime_bridge.sim.faults import TransportFaults
from runtime_bridge.sim.scenes import load_sim_scenes

__all__ = ["create_sim_app"]


def create_sim_app(config: SimConfig | None = None, *, token: str | None = None,
                   max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
                   shm: ShmConfig | bool = True,
                   budget: RequestBudget | None = None) -> FastAPI:
    """A GenManip server whose workers are :class:`SimEnv` worlds sharing one episode queue.
    ``shm``: the shared-memory fast path for same-host harness-bt clients (see ``create_app``).
    The scenes are loaded and checked here, before the server starts."""
    config = config or SimConfig()
    if config.render == "on_demand":
        raise DefinitionError(
            "BAD_SIM_CONFIG", "render='on_demand' renders only frames asked for in-process; "
            "a GenManip client asks for images with every /step", where="create_sim_app",
            fix="serve with render='round_robin' (the default) or 'all'")
    scenes = load_sim_scenes(config.scenes, config.params)
    book = EpisodeBook(config.scenes, config.episodes, config.seed)

    def factory(worker_id: str) -> SimEnv:
        return SimEnv(config, worker_id=worker_id, book=book, scenes=scenes)

    rates = config.faults
    faults = TransportFaults(rates, config.seed) if (rates.drop or rates.delay) else None
    app = create_app(factory, AppSettings(
        token=token, budget=budget or RequestBudget(max_body_bytes=max_request_bytes),
        transport_faults=faults, delay_s=rates.delay_s, drop_hold_s=rates.drop_hold_s,
        title="harness-bt PyBullet Franka simulator", shm=shm))
    app.state.episode_book = book

    @app.get("/harness/sim")
    async def sim_info() -> dict[str, object]:
        """The simulator's configuration (scenes and whether each is judged, episodes, steps
        per episode, cameras, faults)."""
        return {"scenes": {ref: {"name": s.name, "judged": s.judged,
                                 "instruction": s.instruction, "params": dict(s.doc.params)}
                           for ref, s in scenes.items()},
                "episodes": config.episodes,
                "num_steps": config.num_steps, "seed": config.seed,
                "success_hold_steps": config.success_hold_steps, "render": config.render,
                "control_dt": config.control_dt,
                "cameras": [f"{c.name}:{c.width}x{c.height}" for c in config.cameras],
                "faults": {k: getattr(rates, k) for k in ("nudge", "slip", "occlude", "drop",
                                                           "delay")}}

    return app
