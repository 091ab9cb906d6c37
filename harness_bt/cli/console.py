"""``--console [HOST:]PORT`` of ``harness run`` and ``harness resume``: the live console
(:mod:`harness_bt.console`) opened around a run, its address (with the run's token) printed,
and kept up after the run until Ctrl-C unless ``--console-exit``."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from rich.console import Console as Terminal

from harness_bt.errors import DefinitionError
from harness_bt.task import Task

if TYPE_CHECKING:
    from harness_bt.console import Console

__all__ = ["CONSOLE_EXIT_HELP", "CONSOLE_HELP", "CONSOLE_PAUSED_HELP", "live_console",
           "parse_address", "stay_up"]

CONSOLE_HELP = ("Serve a live console of the run at [HOST:]PORT (loopback unless HOST is "
                "given; 0: any free port): the graph ticking, cameras, commands, verdicts, "
                "and pause, single tick, breakpoints and stop. The address printed carries "
                "the run's token, which the controls need.")
CONSOLE_EXIT_HELP = "Close the console when the run ends (default: keep it up until Ctrl-C)."
CONSOLE_PAUSED_HELP = "Hold the run after its first tick until the console resumes or steps it."


def parse_address(text: str, option: str = "--console") -> tuple[str, int]:
    """``8000`` -> ("127.0.0.1", 8000); ``0.0.0.0:8000``; ``[::1]:8000`` (``option`` names
    the option in the error)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise DefinitionError("INVALID_OPTION", f"{option} {text}: not [HOST:]PORT with a "
                              "port between 0 and 65535",
                              fix=f"write e.g. {option} 8000 or {option} 127.0.0.1:8000")
    return host, int(port)


@contextmanager
def live_console(address: str | None, task: Task, *, as_json: bool = False,
                 paused: bool = False) -> Iterator[Console | None]:
    """The console of a run (None without ``address``), started, its address printed on
    stdout (stderr with ``--json``, whose stdout is the summary); closed on the way out."""
    if address is None:
        yield None
        return
    from harness_bt.console import Console, ConsoleSettings

    host, port = parse_address(address)
    allowed = [h for h in os.environ.get("HARNESS_CONSOLE_HOSTS", "").split(",") if h.strip()]
    console = Console(task.structure(), ConsoleSettings(host=host, port=port,
                                                       start_paused=paused,
                                                       allowed_hosts=allowed))
    console.start()
    out = sys.stderr if as_json else sys.stdout
    out.write(f"console: {console.url}\n")
    if host not in ("127.0.0.1", "::1", "localhost"):
        out.write(f"console: listening on {host}:{console.port}; reading and steering need "
                  "the token in the address above; it answers only to the names "
                  f"{', '.join(sorted(console.doorman.names))} (add more with "
                  "HARNESS_CONSOLE_HOSTS=name,...)\n")
    out.flush()
    try:
        yield console
    finally:
        console.close()


def stay_up(console: Console | None, exit_with_run: bool) -> None:
    """After the run: keep the console up, showing the finished run, until Ctrl-C."""
    if console is None:
        return
    console.run_over()
    if exit_with_run:
        console.wait_sent(timeout_s=5.0)
        return
    Terminal(stderr=True).print(f"the run is over; the console stays up at {console.url} "
                                "until Ctrl-C", highlight=False)
    with suppress(KeyboardInterrupt):
        threading.Event().wait()
