"""``harness sim serve`` at its doors: a port in use is refused at once as PORT_IN_USE naming
``--port`` (not the server library's error and exit 3), and Ctrl-C ends the server even while
a hostile request is being refused (the time it took is printed by
tests/benchmarks/bench_abuse.py; here the bound is a generous timeout)."""

from __future__ import annotations

import signal
import socket
import sys

import httpx
import pytest

from harness_bt.cli import main
from tests import hostile
from tests.conftest import Processes

STOP_TIMEOUT_S = 20.0


def test_a_port_in_use_is_refused_naming_the_port_option(
        capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = main(["sim", "serve", "--port", str(port), "--camera", "front:32x24"])
    out, err = capsys.readouterr()
    text = " ".join(err.split())
    assert status == 1
    assert f"PORT_IN_USE: --port {port}: port {port} on 127.0.0.1 is in use" in text
    assert "pick another port with --port, or 0 for any free one" in text
    assert "harness sim:" not in out  # refused before the banner


def test_ctrl_c_ends_the_server_while_hostile_requests_arrive(processes: Processes) -> None:
    proc = processes.start(sys.executable, "-m", "harness_bt.cli", "sim", "serve", "--port",
                           "0", "--camera", "front:32x24", "--episodes", "1", "--no-shm")
    assert proc.stdout is not None
    banner = proc.stdout.readline()
    url = banner.rsplit("; ", 1)[1].split(" ", 1)[0]
    assert httpx.get(url + "/harness/info", timeout=30).is_success
    refused = httpx.post(url + "/reset", content=hostile.reset_with_shared_tuple(40),
                         timeout=30)
    assert refused.status_code == 400
    proc.send_signal(signal.SIGINT)
    assert proc.wait(STOP_TIMEOUT_S) == 130  # Ctrl-C, as a shell reports it
