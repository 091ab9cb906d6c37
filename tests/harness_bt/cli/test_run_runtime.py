"""``harness run --runtime URL`` and ``harness resume`` end to end, against a real
``harness runtime serve --backend sim`` subprocess on free loopback ports: the harness is its
own process too, killed with SIGKILL mid-command and resumed. What ran is read from the
runtime's own journal (SQLite), never from the harness's account of it."""

from __future__ import annotations

import json
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness_bt.cli import main
from runtime_bridge.host.record_log import read_rows
from tests.conftest import ENV, ROOT, Processes

pytestmark = pytest.mark.slow
PICK_CUBE = str(ROOT / "trees" / "pick_cube.yaml")
PICK_AND_PLACE = str(ROOT / "trees" / "pick_and_place.yaml")


def harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness_bt.cli", *args]


@pytest.fixture
def runtime(tmp_path: Path, processes: Processes) -> Callable[..., dict[str, Any]]:
    """Start ``harness runtime serve --backend sim`` on free loopback ports; returns its
    ready line (``bind``, ``telemetry``, ``journal``). ``options``: more serve options."""

    def start(*options: str, lease_ms: int = 30_000) -> dict[str, Any]:
        _, ready = processes.ready(*harness(
            "runtime", "serve", "--backend", "sim", "--bind", "tcp://127.0.0.1:*",
            "--telemetry", "tcp://127.0.0.1:*", "--journal", str(tmp_path / "runtime.db"),
            "--lease-ms", str(lease_ms), *options))
        return ready

    return start


def runtime_records(path: str) -> list[dict[str, Any]]:
    """The runtime journal's rows (its append log included): command id, skill, state, event
    kinds."""
    return [{"command_id": cid, "skill": json.loads(cmd)["skill"] if cmd else None,
             "state": state, "events": [e["kind"] for e in json.loads(events)]}
            for cid, cmd, _, state, _, _, _, _, events in read_rows(path).values()]


def assert_nothing_ran_twice(records: list[dict[str, Any]]) -> None:
    """No command id started twice, and no step (an id without its attempt number) completed
    twice: in a clean scene nothing legitimately redoes a completed step."""
    started = Counter(r["command_id"] for r in records for k in r["events"] if k == "started")
    assert all(n == 1 for n in started.values()), started
    done = Counter(r["command_id"].rsplit("#", 1)[0] for r in records
                   if r["state"] == "CONTROL_DONE")
    assert all(n == 1 for n in done.values()), done


def test_pick_cube_against_a_runtime_server(runtime: Callable[..., dict[str, Any]],
                                            capfd: pytest.CaptureFixture[str]) -> None:
    served = runtime()
    code = main(["run", PICK_CUBE, "--runtime", served["bind"], "--json"])
    report = json.loads(capfd.readouterr().out)
    assert code == 0, report
    episode = report["episodes"][0]
    assert (episode["outcome"], episode["reason"]) == ("succeeded", "done")
    assert report["sim_success_rate"] is None  # the runtime cannot tell: not invented
    assert episode["sim_ended_by"] == "not_judged"
    assert episode["phases_visited"] == ["observe", "approach", "grasp", "evaluate", "done"]
    records = runtime_records(served["journal"])
    assert {r["skill"] for r in records if r["state"] == "CONTROL_DONE"} == {
        "approach", "grasp", "lift"}
    assert_nothing_ran_twice(records)


def test_pick_and_place_against_a_runtime_serving_its_scene(
        runtime: Callable[..., dict[str, Any]], capfd: pytest.CaptureFixture[str]) -> None:
    served = runtime("--sim-scene", "pick_and_place", "--seed", "0")
    code = main(["run", PICK_AND_PLACE, "--runtime", served["bind"], "--json"])
    report = json.loads(capfd.readouterr().out)
    assert code == 0, report
    episode = report["episodes"][0]
    assert (episode["outcome"], episode["reason"]) == ("succeeded", "done")
    assert episode["phases_visited"][-2:] == ["place", "done"]
    records = runtime_records(served["journal"])
    assert {"grasp", "move_ee_to", "place"} <= {
        r["skill"] for r in records if r["state"] == "CONTROL_DONE"}  # there was a tray
    assert_nothing_ran_twice(records)


def test_serve_refuses_sim_options_with_another_backend(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "setswitchinterval", lambda _: None)  # serve's, process-wide
    assert main(["runtime", "serve", "--backend", "kinematic", "--sim-scene", "pick_and_place",
                 "--journal", "", "--telemetry", ""]) == 1
    assert ("INVALID_CONFIG: --sim-scene pick_and_place: only for --backend sim (they choose "
            "the built-in simulator's scene), not --backend kinematic; drop --sim-scene, or "
            "serve --backend sim") in " ".join(capfd.readouterr().err.split())


def test_serve_names_the_known_sim_scenes(capfd: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "setswitchinterval", lambda _: None)
    assert main(["runtime", "serve", "--backend", "sim", "--sim-scene", "pick_and_plac",
                 "--journal", "", "--telemetry", ""]) == 1
    err = " ".join(capfd.readouterr().err.split())  # installed packages may add scenes
    assert re.search(r"pick_and_plac: UNKNOWN_SCENE: unknown scene 'pick_and_plac'; known: "
                     r"(\w+, )*pick_and_place, pick_cube, place_at, (\w+, )*sort, stack, "
                     r"table; did "
                     r"you mean 'pick_and_place'\?", err), err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_runtime_says_where_and_how_to_start_one(
        capfd: pytest.CaptureFixture[str]) -> None:
    url = f"tcp://127.0.0.1:{free_port()}"
    assert main(["run", PICK_CUBE, "--runtime", url]) == 1
    err = capfd.readouterr().err
    assert f"{url}: RUNTIME_UNREACHABLE: no runtime answered at {url}" in " ".join(err.split())
    assert "harness runtime serve --backend sim --bind" in " ".join(err.split())


@pytest.mark.parametrize(("args", "message"), [
    (["--journal", "x.db"], "JOURNAL_NEEDS_RUNTIME: --journal x.db: only a run against a "
     "runtime server can be resumed"),
    (["--runtime", "tcp://127.0.0.1:1", "--episodes", "3"], "UNSUPPORTED_OPTION: --episodes "
     "configure the built-in simulator or episodes"),
    (["--runtime", "not a url"], "INVALID_RUNTIME_URL: --runtime 'not a url' is not a ZeroMQ "
     "endpoint"),
    (["--runtime", "tcp://127.0.0.1:1", "--journal", "taken.db"], "RUN_JOURNAL_EXISTS: "
     "taken.db already exists; a new run needs its own journal"),
    (["--runtime-telemetry", "tcp://127.0.0.1:2"], "INVALID_OPTION: --runtime-telemetry "
     "tcp://127.0.0.1:2: only a runtime server publishes telemetry"),
])
def test_runtime_options_are_checked_before_anything_runs(
        capfd: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken.db").write_text("an earlier run")
    assert main(["run", PICK_CUBE, *args]) == 1
    assert message in " ".join(capfd.readouterr().err.split())
    assert not (tmp_path / "x.db").exists()


def test_harness_killed_mid_command_resumes_and_runs_nothing_twice(
        runtime: Callable[..., dict[str, Any]], processes: Processes,
        tmp_path: Path) -> None:
    served = runtime()
    journal = tmp_path / "run.db"
    first = processes.start(*harness(
        "run", PICK_CUBE, "--runtime", served["bind"], "--journal", str(journal),
        "--trace", str(tmp_path / "run.jsonl"), "--json"), stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not any(r["skill"] == "grasp" and r["state"] == "RUNNING"
                  for r in runtime_records(served["journal"])):
        assert first.poll() is None, "the harness ended before the grasp started"
        assert time.monotonic() < deadline, runtime_records(served["journal"])
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)  # mid-grasp: the runtime goes on without a harness
    assert first.wait(20) == -signal.SIGKILL
    before = {r["command_id"]: r for r in runtime_records(served["journal"])}
    (killed,) = [cid for cid, r in before.items() if r["skill"] == "grasp"]

    resumed = subprocess.run(harness("resume", str(journal), "--json"), capture_output=True,
                             text=True, env=ENV, cwd=ROOT, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    report = json.loads(resumed.stdout)
    assert report["episodes"][0]["reason"] == "done"
    records = runtime_records(served["journal"])
    assert_nothing_ran_twice(records)
    assert {r["skill"] for r in records if r["state"] == "CONTROL_DONE"} == {
        "approach", "grasp", "lift"}
    # the grasp was RUNNING when the harness died (the wait above); it finished exactly once
    assert {r["command_id"]: r["state"] for r in records}[killed] == "CONTROL_DONE"
    # the resumed harness sent no command the runtime had already seen: it reconciled them
    trace = [json.loads(line) for line in (tmp_path / "run.resumed.jsonl").open()]
    sent = {e["command_id"] for e in trace if e["kind"] == "dispatch"}
    assert not sent & set(before)
    follows = [e["data"]["action"] for e in trace if e["kind"] == "reconcile"]
    assert follows and set(follows) <= {"following", "none"}
    # the ledger in the journal knows every command the runtime ran, as SUCCEEDED
    db = sqlite3.connect(journal)
    meta = dict(db.execute("SELECT key, value FROM run_meta").fetchall())
    db.close()
    assert meta["status"] == "finished"
    result = json.loads(meta["result"])
    assert {r["command_id"] for r in records} <= set(result["commands"])
    assert result["commands"][killed] == "SUCCEEDED"  # judged from observations after resume
    # the new harness took a newer control epoch than the one it replaced
    epochs = {e["data"]["command"]["epoch"] for e in trace
              if e["kind"] == "command" and e["data"]["op"] == "submit"}
    assert epochs == {2}


def test_a_lease_that_runs_out_while_the_harness_is_dead_holds_the_robot_and_resume_recovers(
        runtime: Callable[..., dict[str, Any]], processes: Processes,
        tmp_path: Path) -> None:
    served = runtime(lease_ms=1000)
    journal = tmp_path / "run.db"
    first = processes.start(*harness(
        "run", PICK_CUBE, "--runtime", served["bind"], "--journal", str(journal), "--json"),
        stdout=subprocess.DEVNULL)

    def wait_for(what: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
        deadline = time.monotonic() + 120
        while not what(records := runtime_records(served["journal"])):
            assert time.monotonic() < deadline, records
            time.sleep(0.02)
        return records

    wait_for(lambda rs: any(r["skill"] == "approach" and r["state"] == "RUNNING" for r in rs))
    first.send_signal(signal.SIGKILL)
    assert first.wait(20) == -signal.SIGKILL
    held = wait_for(lambda rs: any(r["state"] == "STOPPED" for r in rs))  # the runtime's own
    assert [r["skill"] for r in held if r["state"] == "STOPPED"] == ["approach"]

    resumed = subprocess.run(harness("resume", str(journal), "--json"), capture_output=True,
                             text=True, env=ENV, cwd=ROOT, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    episode = json.loads(resumed.stdout)["episodes"][0]
    assert episode["reason"] == "done" and episode["recoveries"] >= 1
    records = runtime_records(served["journal"])
    started = Counter(r["command_id"] for r in records for k in r["events"] if k == "started")
    assert all(n == 1 for n in started.values()), started
    done = Counter(r["command_id"].rsplit("#", 1)[0] for r in records
                   if r["state"] == "CONTROL_DONE")
    assert all(n == 1 for n in done.values()), done  # no completed step ran again
    stopped = [r["command_id"] for r in records if r["state"] != "CONTROL_DONE"]
    assert len(stopped) == 1 and stopped[0].endswith("pregrasp.act#1")
    assert stopped[0].replace("#1", "#2") in {r["command_id"] for r in records}
