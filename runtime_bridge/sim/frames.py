"""Frames on demand: which cameras the next observation renders (``render="on_demand"``).

Software rendering is most of what a simulator step costs, and most frames are read by
nobody: while an executor drives the arm from joint states, or while an episode is held to
its end. With ``SimConfig(render="on_demand")`` the simulator steps its physics without
rendering unless someone asked for a frame:

- :meth:`FrameDemand.request` asks for the next observation's frames (every camera, or the
  ones named); an unnamed request renders one camera per frame in turn, as ``round_robin``
  does per step, so a frame costs one camera's rendering;
- an episode's first observation renders every camera (as in the other modes);
- :meth:`~runtime_bridge.sim.env.SimEnv.render_now` renders the latest observation's frames
  afterwards, as long as the world has not moved since (the step's fault occlusions are kept
  for it), for a reader that learns only after the step that it wants to look.

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
        self._turn = 0
        #: camera images rendered (any mode) and on-demand steps that rendered none
        self.rendered = 0
        self.skipped = 0

    def request(self, cameras: Iterable[str] | None = None) -> None:
        """Render the next observation's frames: the cameras named, or (None) one camera, the
        next in turn. An unknown name is refused before anything is requested."""
        if cameras is None:
            name = self.next_in_turn()
            if name is not None:
                self._requested.add(name)
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

    def next_in_turn(self) -> str | None:
        """The camera whose turn it is (and move the turn on); None without cameras."""
        if not self.names:
            return None
        name = self.names[self._turn % len(self.names)]
        self._turn += 1
        return name

    @property
    def pending(self) -> bool:
        """Whether the next observation will render something."""
        return bool(self._requested)

    def take(self, reset: bool) -> set[str] | None:
        """The cameras this observation renders (None: all of them) and forget the requests."""
        wanted, self._requested = self._requested, set()
        if reset:
            return None
        if not wanted:
            self.skipped += 1
        return wanted
