"""Every server the command line starts ends the same way (harness_bt.listen): Ctrl-C stops it
and exits 130, as a shell reports an interrupted program; SIGTERM stops it and exits 0; either
way its port is free afterwards. The time each takes is measured by
tests/benchmarks/bench_interrupt.py, not here."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from harness_bt import listen
from tests.conftest import Processes

HARNESS = (sys.executable, "-m", "harness_bt.cli")
#: each server's command line and where its ready line says it listens
SERVERS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, Any]], int]]] = {
    "policy serve": ((*HARNESS, "policy", "serve", "--port", "0"),
                     lambda ready: int(ready["url"].rsplit(":", 1)[1])),
    "runtime serve": ((*HARNESS, "runtime", "serve", "--bind", "tcp://127.0.0.1:*",
                       "--telemetry", "", "--journal", ""),
                      lambda ready: int(ready["bind"].rsplit(":", 1)[1])),
    "runtime broker": ((*HARNESS, "runtime", "broker", "--bind", "tcp://127.0.0.1:*"),
                       lambda ready: int(ready["bind"].rsplit(":", 1)[1])),
}
STOP_TIMEOUT_S = 30.0  # a bound for a loaded machine, not a speed claim


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl_c", "sigterm"])
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_server_stops_on_a_signal_with_the_shells_status_and_frees_its_port(
        processes: Processes, server: str, sig: signal.Signals) -> None:
    argv, port_of = SERVERS[server]
    proc, ready = processes.ready(*argv)
    assert ready["ready"] is True
    port = port_of(ready)
    assert not port_is_free(port)
    proc.send_signal(sig)
    assert proc.wait(STOP_TIMEOUT_S) == (130 if sig == signal.SIGINT else 0)
    assert port_is_free(port)


def test_ctrl_c_after_the_announcement_stops_the_server_and_ends_as_an_interrupt() -> None:
    stopped: list[str] = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        listen.wait_until_interrupted(lambda: stopped.append("stop"),
                                      announce=lambda: os.kill(os.getpid(), signal.SIGINT))
    assert stopped == ["stop"]
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterm_stops_the_server_and_returns() -> None:
    stopped: list[str] = []
    before = signal.getsignal(signal.SIGTERM)
    listen.wait_until_interrupted(lambda: stopped.append("stop"),
                                  announce=lambda: os.kill(os.getpid(), signal.SIGTERM))
    assert stopped == ["stop"]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_server_that_ends_by_itself_is_stopped_and_the_wait_returns() -> None:
    asked = threading.Event()
    stopped: list[str] = []

    def ended() -> bool:
        was = asked.is_set()
        asked.set()
        return was  # ended at the second look

    listen.wait_until_interrupted(lambda: stopped.append("stop"), ended=ended)
    assert stopped == ["stop"]


def test_a_failing_announcement_still_stops_the_server_and_restores_the_handlers() -> None:
    stopped: list[str] = []
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    def announce() -> None:
        raise BrokenPipeError("stdout closed")

    with pytest.raises(BrokenPipeError):
        listen.wait_until_interrupted(lambda: stopped.append("stop"), announce=announce)
    assert stopped == ["stop"]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
