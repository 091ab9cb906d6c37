"""``harness sim serve`` with its defaults is safe for ``harness run --sim URL``: it holds
success as long as the in-process run does (so the harness judges first) and renders the
same cameras; and against a server that ends episodes sooner, the episode is reported
``aborted_episode_ended``, as docs/running.md says. The app ``harness sim serve`` builds is
served here on a loopback port."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness_bt import listen
from harness_bt.cli import main
from runtime_bridge.genmanip import ServerThread
from runtime_bridge.sim.config import DEFAULT_HOLD_STEPS

TREES = Path(__file__).resolve().parents[3] / "trees"


@contextmanager
def served(monkeypatch: pytest.MonkeyPatch, *argv: str) -> Iterator[str]:
    """What ``harness sim serve ARGV`` would serve, on a free loopback port."""
    made: dict[str, Any] = {}
    monkeypatch.setattr(listen, "serve", lambda app, sock: made.update(app=app, sock=sock))
    monkeypatch.setattr(listen, "bind", lambda host, port, option: made.update(
        host=host, port=port, option=option) or socket.socket())
    assert main(["sim", "serve", *argv]) == 0
    assert (made["host"], made["port"], made["option"]) == ("127.0.0.1", 8087, "--port")
    made["sock"].close()
    with ServerThread(made["app"]) as running:
        yield running.url


def run_json(capfd: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, Any]:
    capfd.readouterr()
    code = main(["run", str(TREES / "pick_and_place.yaml"), "--sim", url, "--json", *args])
    return code, json.loads(capfd.readouterr().out)


def test_the_served_defaults_are_the_in_process_runs(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    with served(monkeypatch, "--task", "pick_and_place") as url:
        info = httpx.get(f"{url}/harness/sim", timeout=10).json()
    out = capfd.readouterr().out
    assert "success held 150 steps, cameras front:256x192, left:256x192 (round_robin)" in out
    assert (info["success_hold_steps"], info["render"], info["cameras"]) == (
        DEFAULT_HOLD_STEPS, "round_robin", ["front:256x192", "left:256x192"])
    assert list(info["scenes"]) == ["pick_and_place"]


@pytest.mark.slow
def test_harness_run_against_the_default_server_succeeds(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    with served(monkeypatch, "--task", "pick_and_place", "--episodes", "1") as url:
        code, report = run_json(capfd, url)
    assert code == 0, report
    (episode,) = report["episodes"]
    assert (episode["reason"], episode["sim_ended_by"], episode["why"]) == (
        "done", "success", None)


@pytest.mark.slow
def test_an_episode_the_server_ends_before_the_harness_judges_is_aborted_episode_ended(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    with served(monkeypatch, "--task", "pick_and_place", "--episodes", "1",
                "--success-hold-steps", "5") as url:  # upstream's few steps
        code, report = run_json(capfd, url)
    assert code == 1
    (episode,) = report["episodes"]
    assert (episode["reason"], episode["sim_success"], episode["false_success"]) == (
        "aborted_episode_ended", True, False)
    assert episode["why"]["stopped"] == "aborted_episode_ended"
    assert episode["why"]["evidence"]["ended_by"] == "success"
    assert "EPISODE_ENDED" not in json.dumps(episode["why"])
