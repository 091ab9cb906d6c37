"""``harness policy list`` and ``harness policy serve``: what is installed, clear errors before
anything listens, and a served policy that prints its URL, logs a line per connection and ends
cleanly on SIGINT or SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import httpx
import pytest

from harness_bt.cli import main
from harness_bt.policy.client import PolicyClient
from tests.conftest import Processes


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_list_names_each_installed_policy_and_its_knobs(capsys: Any) -> None:
    status, out, err = run(capsys, "policy", "list")
    assert (status, err) == (0, "")
    assert out.startswith("pick  scripted pick from the cameras")
    assert out.rstrip().endswith("(knobs: misgrasp_rate, pose_noise_m, seed)")
    status, out, _ = run(capsys, "policy", "list", "--json")
    [pick] = json.loads(out)
    assert (pick["name"], pick["knobs"]) == ("pick", ["misgrasp_rate", "pose_noise_m", "seed"])
    assert pick["origin"] == "entry point policies.scripted:PICK of package 'harness-bt'"


@pytest.mark.parametrize(("argv", "message"), [
    (["--policy", "pik"], "error: --policy: UNKNOWN_POLICY: unknown policy 'pik'; known: pick; "
                          "did you mean 'pick'?"),
    (["--policy", "pick", "--misgrasp-rate", "1.5"],
     "error: BAD_POLICY_SETTING: misgrasp_rate=1.5 is not a probability; use a number between "
     "0 and 1, e.g. 0.3"),
    (["--policy", "pick", "--pose-noise-m", "-0.1"],
     "error: BAD_POLICY_SETTING: pose_noise_m=-0.1 is not a standard deviation in 0..0.1 m"),
    (["--policy", "pick", "--port", "70000"], "error: INVALID_OPTION: --port 70000 is not "
                                              "0..65535"),
    (["--policy", "pick", "--log-level", "LOUD"], "error: INVALID_OPTION: --log-level 'LOUD' "
                                                  "is not a logging level"),
])
def test_serve_refuses_bad_options_before_it_listens(capsys: Any, argv: list[str],
                                                     message: str) -> None:
    status, out, err = run(capsys, "policy", "serve", *argv)
    assert (status, out) == (1, "")
    assert err.startswith(message)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_its_url_serves_and_ends_cleanly_on_a_signal(processes: Processes,
                                                                  sig: int) -> None:
    proc = processes.start(sys.executable, "-m", "harness_bt.cli", "policy", "serve",
                           "--policy", "pick", "--port", "0", "--misgrasp-rate", "0.45",
                           "--seed", "3", stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    ready = json.loads(proc.stdout.readline())
    assert ready["ready"] is True and ready["policy"] == "pick"
    assert ready["settings"] == {"misgrasp_rate": 0.45, "pose_noise_m": 0.0, "seed": 3}
    url = ready["url"]
    assert url.startswith("ws://127.0.0.1:")
    port = int(url.rsplit(":", 1)[1])
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).text == "OK\n"
    with PolicyClient(url) as client:
        assert client.metadata["policy"] == "pick"
        assert client.metadata["settings"] == ready["settings"]
        assert client.metadata["action_format"]["columns"] == ["dx", "dy", "dz", "rx", "ry",
                                                               "rz", "gripper"]
    proc.send_signal(sig)
    assert proc.wait(30) == (130 if sig == signal.SIGINT else 0)  # Ctrl-C: as a shell says
    log = proc.stderr.read()
    assert "policy connection 1 from 127.0.0.1:" in log
    assert "ended after 0 requests: closed by the client (code 1000)" in log
    assert "policy server stopped after 1 connections, 0 requests, 0 failures" in log
    assert proc.stdout.read() == ""
