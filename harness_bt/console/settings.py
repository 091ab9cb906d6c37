"""How a live console listens and feeds: one frozen settings object, checked when made.

``Console(structure, settings=ConsoleSettings(port=8000, start_paused=True))``; the defaults
listen on loopback on any free port, with a fresh token.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness_bt.errors import DefinitionError
from harness_bt.request_budget import RequestBudget

__all__ = ["CONSOLE_BUDGET", "MAX_MESSAGE", "ConsoleSettings"]

MAX_MESSAGE = 4096
#: the console's doors: connections at once, control JSON depth, bytes held
CONSOLE_BUDGET = RequestBudget(max_body_bytes=MAX_MESSAGE, max_depth=8, max_elements=256,
                               max_text_bytes=MAX_MESSAGE, max_connections=32,
                               max_bytes_in_flight=1 << 20)


@dataclass(frozen=True)
class ConsoleSettings:
    """``host`` / ``port``: where to listen (port 0: any free one); ``token``: the one that
    steers (and reads, bound beyond loopback; None: a fresh random one); ``allowed_hosts``:
    host names answered besides loopback's and the bound address; ``start_paused``: the run
    waits for ``resume`` or ``step``; ``rate_hz`` / ``image_hz``: the most state updates /
    camera images a second a client is sent; ``fold``: draw long sequences folded;
    ``budget``: the doors' limits (connections, message sizes, bytes held)."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    allowed_hosts: Sequence[str] = ()
    start_paused: bool = False
    rate_hz: float = 25.0
    image_hz: float = 5.0
    fold: bool = True
    budget: RequestBudget = field(default=CONSOLE_BUDGET)

    def __post_init__(self) -> None:
        if not (isinstance(self.port, int) and 0 <= self.port <= 65535):
            raise DefinitionError("INVALID_OPTION", f"console port {self.port!r} is not "
                                  "0..65535", where="--console",
                                  fix="use 0 for any free port, or e.g. 8000")
        for name in ("rate_hz", "image_hz"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise DefinitionError("INVALID_OPTION", f"console {name}={value!r} is not a "
                                      "positive number of updates a second",
                                      fix=f"use e.g. {name}={getattr(ConsoleSettings, name)}")
        if self.token is not None and not (isinstance(self.token, str) and self.token):
            raise DefinitionError("INVALID_OPTION", "the console token is empty",
                                  fix="pass a non-empty token, or None for a random one")
        if isinstance(self.allowed_hosts, str):
            raise DefinitionError("INVALID_OPTION", f"allowed_hosts={self.allowed_hosts!r} is "
                                  "one string, not a list of host names",
                                  fix="pass e.g. allowed_hosts=('robot.lan',)")
        object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))
