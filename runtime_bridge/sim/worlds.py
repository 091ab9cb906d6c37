"""Worlds kept for the next simulator of the same process (``SimConfig(keep_world=True)``).

Building a :class:`~runtime_bridge.sim.scene.SimWorld` (a PyBullet client, the Panda and its
kinematic twin, the table) costs about as much as a few seconds of simulated time; an
evaluation worker that runs one short episode per simulator pays it for every episode. A
simulator made with ``keep_world=True`` takes a kept world of its physics (substeps, control
period, arm meshes) when there is one and, when it closes, hands its world back instead of
disconnecting it. A new episode lays out its objects in it as a fresh world would
(:meth:`SimWorld.load` removes the previous objects and homes the arm; the pair cache is
deterministic), so an episode's outcome stays a function of its seed: the same seed gives the
same poses, step for step, in a kept world as in a new one
(``tests/runtime_bridge/sim/test_worlds.py``).

At most :data:`MAX_KEPT` worlds wait per process; a world handed back beyond that is closed.
One thread at a time takes and gives (a lock guards the shelf).
"""

from __future__ import annotations

import threading

from runtime_bridge.sim.scene import SimWorld

__all__ = ["MAX_KEPT", "WorldKey", "close_kept", "give", "kept", "take"]

#: The most worlds one process keeps waiting for a simulator.
MAX_KEPT = 2

WorldKey = tuple[int, float, str]

_shelf: list[tuple[WorldKey, SimWorld]] = []
_lock = threading.Lock()


def _key(substeps: int, control_dt: float, arm_meshes: str) -> WorldKey:
    return (int(substeps), float(control_dt), str(arm_meshes))


def take(*, substeps: int, control_dt: float, arm_meshes: str) -> SimWorld:
    """A kept world of this physics, or a new one."""
    key = _key(substeps, control_dt, arm_meshes)
    with _lock:
        for i, (k, world) in enumerate(_shelf):
            if k == key:
                del _shelf[i]
                return world
    return SimWorld(substeps=substeps, control_dt=control_dt, arm_meshes=arm_meshes)


def give(world: SimWorld, *, arm_meshes: str) -> None:
    """Keep ``world`` for the next :func:`take` of its physics (closed if the shelf is full or
    the world is closed already)."""
    if world.client is None:
        return
    key = _key(world.substeps, world.control_dt, arm_meshes)
    with _lock:
        if len(_shelf) < MAX_KEPT:
            _shelf.append((key, world))
            return
    world.close()


def kept() -> int:
    """How many worlds wait."""
    with _lock:
        return len(_shelf)


def close_kept() -> None:
    """Close every kept world (a process that is done simulating; tests)."""
    with _lock:
        worlds = [w for _, w in _shelf]
        _shelf.clear()
    for world in worlds:
        world.close()
