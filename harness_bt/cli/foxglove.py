"""``--foxglove [HOST:]PORT`` and ``--foxglove-wait`` of ``harness run``: the run served live
to the Foxglove app (:mod:`harness_bt.viz.live`), its address printed, closed with the run."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from harness_bt.cli.console import parse_address
from harness_bt.errors import DefinitionError

if TYPE_CHECKING:
    from harness_bt.run.episodes import RunWatch

__all__ = ["FOXGLOVE_HELP", "FOXGLOVE_WAIT_HELP", "live_foxglove"]

FOXGLOVE_HELP = ("Serve the run live to the Foxglove app over its WebSocket protocol at "
                 "[HOST:]PORT (loopback unless HOST is given; 0: any free port; Foxglove's "
                 "default is 8765): the channels of harness export (cameras, /tf, "
                 "/harness/log, /harness/tree).")
FOXGLOVE_WAIT_HELP = ("With --foxglove: hold the run at its first camera image until a "
                      "Foxglove client subscribes to a channel.")


@contextmanager
def live_foxglove(address: str | None, inner: RunWatch | None, *, as_json: bool = False,
                  wait: bool = False) -> Iterator[RunWatch | None]:
    """The run's watch: ``inner`` alone without ``address``; else the Foxglove server passing
    everything on to ``inner``, started, its address printed (on stderr with ``--json``),
    stopped on the way out."""
    if address is None:
        if wait:
            raise DefinitionError("INVALID_OPTION", "--foxglove-wait: there is no Foxglove "
                                  "server to wait on", fix="pass --foxglove PORT too")
        yield inner
        return
    from harness_bt.viz.live import FoxgloveLive

    host, port = parse_address(address, "--foxglove")
    live = FoxgloveLive(host=host, port=port, inner=inner, wait_for_client=wait)
    live.start()
    out = sys.stderr if as_json else sys.stdout
    out.write(f"foxglove: {live.url}\n")
    if host not in ("127.0.0.1", "::1", "localhost"):
        out.write(f"foxglove: anyone who can reach {host}:{live.port} can watch this run\n")
    if wait:
        out.write("foxglove: the run waits for a client to subscribe (open the address in "
                  "Foxglove: Open connection, Foxglove WebSocket)\n")
    out.flush()
    try:
        yield live
    finally:
        live.close()
