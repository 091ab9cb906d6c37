"""The live console: watch and steer a run from a browser (``harness run TASK --console
PORT``). :class:`Console` serves one run's page and WebSocket from the run's own process;
:class:`RunControl` applies pause / resume, single tick, breakpoints and the stop on the run's
thread; :class:`Feed` turns the run's trace into what the page shows."""

from harness_bt.console.control import Breakpoint, Request, RunControl
from harness_bt.console.feed import Feed, StopStages, delta, image_message
from harness_bt.console.server import CONTROLS, Console
from harness_bt.console.settings import ConsoleSettings

__all__ = ["CONTROLS", "Breakpoint", "Console", "ConsoleSettings", "Feed", "Request", "RunControl",
           "StopStages", "delta", "image_message"]
