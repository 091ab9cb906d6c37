"""``harness eval --sim URL --workers 2`` against ``harness sim serve --workers 2``: two
episodes at once on one GenManip server through its worker ids, each recorded once under the
server's episode id; a rerun against the same queue records nothing twice."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest

from harness_bt.eval.session import EvalConfig, run_evaluation
from tests.conftest import ROOT, Processes, python

pytestmark = pytest.mark.slow  # real episodes, processes or a notebook kernel

PICK = ROOT / "trees" / "pick_cube.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(900)  # two real episodes on a shared 2-core machine
def test_a_servers_worker_ids_run_its_episodes_in_parallel_recorded_once(
        tmp_path: Path, processes: Processes) -> None:
    port = _free_port()
    server = processes.start(*python("-m", "harness_bt.cli", "sim", "serve", "--port",
                                     str(port), "--scene", "pick_cube", "--episodes", "2",
                                     "--num-steps", "140", "--workers", "2", "--no-shm",
                                     "--camera", "front:256x192:fov=40"))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            info = httpx.get(f"{url}/harness/sim", timeout=2).json()
            break
        except httpx.HTTPError:
            assert server.poll() is None, "the simulator server exited"
            assert time.monotonic() < deadline, "the simulator server did not start"
            time.sleep(0.1)
    assert info["episodes"] == 2
    workers = httpx.get(f"{url}/harness/results", timeout=5)
    assert workers.status_code == 200
    config = EvalConfig(tasks=(PICK,), out=tmp_path, workers=2, sim_url=url, traces=False)
    result = run_evaluation(config)
    assert sorted(r["episode"] for r in result.rows) == ["w0.e0", "w1.e0"]
    assert {r["condition"] for r in result.rows} == {f"clean @{url}"}
    assert all(r["seed"] is None and r["outcome"] in ("succeeded", "aborted")
               for r in result.rows)
    assert result.run.recorded == 2
    again = run_evaluation(config)  # the server's queue is empty: nothing new
    assert (again.run.recorded, len(again.rows)) == (0, 2)
