"""``harness run --console``: the address printed with the run's token, the page and the
state served from the run's process, the run held (``--console-paused``) until a client with
the token resumes it, the console closed with the run (``--console-exit``); a bad address
refused before anything starts."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

from harness_bt.cli import main
from tests.conftest import ROOT, Processes, python


def test_a_run_is_served_held_and_resumed_from_its_console(processes: Processes) -> None:
    import websocket

    proc = processes.start(*python("-m", "harness_bt.cli", "run",
                                   str(ROOT / "trees" / "pick_cube.yaml"), "--console", "0",
                                   "--console-paused", "--console-exit", "--json"),
                           stderr=subprocess.PIPE)
    assert proc.stderr is not None and proc.stdout is not None
    line = next(x for x in proc.stderr if x.startswith("console: "))  # stdout is the JSON
    url = line.split()[1]
    assert url.startswith("http://127.0.0.1:") and "/?token=" in url
    base, token = url.split("/?token=")
    page = httpx.get(url, timeout=60)
    assert page.status_code == 200 and "pick_cube — live console" in page.text
    ws = websocket.create_connection(base.replace("http", "ws") + "/ws", timeout=120)
    try:
        messages = (json.loads(m) for m in iter(ws.recv, None) if isinstance(m, str))
        held = next(m for m in messages if m["type"] == "state"
                    and m["d"].get("control", {}).get("tick") == 1)
        assert held["d"]["control"]["paused"]  # held after its first tick
        state = httpx.get(base + "/state.json", timeout=60).json()
        assert state["tick"] == 1 and state["config"]
        ws.send(json.dumps({"op": "resume", "token": token, "id": 1}))
        ack = next(m for m in messages if m["type"] == "ack" and "ok" in m)
        assert ack["ok"] and ack["op"] == "resume"
        end = next(m for m in messages if m["type"] == "alert" and m["kind"] == "run_end")
        assert end["outcome"] == "succeeded"
    finally:
        ws.close()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert json.loads(out)["episodes"][0]["reason"] == "done"


@pytest.mark.parametrize("address", ["nope", "70000", "host:"])
def test_a_bad_console_address_is_refused_before_the_run(
        address: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "trees" / "pick_cube.yaml"), "--console", address]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"INVALID_OPTION: --console {address}: not [HOST:]PORT with a port between 0 and " \
           "65535" in err and "--console 8000" in err
