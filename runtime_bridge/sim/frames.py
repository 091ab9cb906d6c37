"""Frames on demand: which cameras the next observation renders (``render="on_demand"``).

Software rendering is most of what a simulator step costs, and most frames are read by
nobody: while an executor drives the arm from joint states, or while an episode is held to
its end. With ``SimConfig(render="on_demand")`` the simulator steps its physics without
rendering unless someone asked for a frame:

- :meth:`FrameDemand.request` asks for the next observation's frames (every camera, or the
  ones named); an unnamed request renders one camera per frame in turn, as ``round_robin``
  does per step, so a frame costs one camera's rendering;
- an episode's first observation renders every camera (as in the other modes);
- :meth:`~runtime_bridge.sim.env.SimEnv.frames_now` (in the wire form ``render_now``) renders
  the latest observation's frames afterwards, as long as the world has not moved since (the
  step's fault occlusions are kept for it), for a reader that learns only after the step that
  it wants to look.

Whatever is not requested is not rendered: the observation's ``camera_data`` is then empty.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness_bt.errors import DefinitionError
from runtime_bridge.sim.config import CameraSpec

__all__ = ["FrameDemand"]


class FrameDemand:
    """The frame requests for the next observation of one simulator worker (one thread)."""

    def __init__(self, specs: tuple[CameraSpec, ...]) -> None:
        self.specs = specs
        self.names = tuple(s.name for s in specs)
        self._requested: set[str] = set()
        self._in_turn = False
        #: camera images rendered (any mode) and on-demand steps that rendered none
        self.rendered = 0
        self.skipped = 0

    def request(self, cameras: Iterable[str] | None = None) -> None:
        """Render the next observation's frames: the cameras named, or (None) the camera whose
        turn it is at that observation's timestep (as ``round_robin`` renders it). An unknown
        name is refused before anything is requested."""
        if cameras is None:
            self._in_turn = True
            return
        wanted = list(cameras)
        unknown = sorted(set(wanted) - set(self.names))
        if unknown:
            raise DefinitionError(
                "UNKNOWN_CAMERA", f"frame request for camera(s) {', '.join(unknown)}: this "
                f"simulator has {', '.join(self.names) or 'no cameras'}",
                where="FrameDemand.request", fix="ask for one of its cameras, or for None (the "
                "next in turn)")
        self._requested.update(wanted)

    def next_in_turn(self, timestep: int) -> str | None:
        """The camera whose turn it is at ``timestep`` (``round_robin``'s); None without
        cameras."""
        return self.names[timestep % len(self.names)] if self.names else None

    @property
    def pending(self) -> bool:
        """Whether the next observation will render something."""
        return bool(self._requested) or self._in_turn

    def take(self, reset: bool, timestep: int) -> set[str] | None:
        """The cameras the observation at ``timestep`` renders (None: all of them) and forget
        the requests."""
        wanted, self._requested = self._requested, set()
        if self._in_turn and (name := self.next_in_turn(timestep)) is not None:
            wanted.add(name)
        self._in_turn = False
        if reset:
            return None
        if not wanted:
            self.skipped += 1
        return wanted
