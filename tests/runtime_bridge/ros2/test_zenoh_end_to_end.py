"""``harness run trees/pick.yaml --runtime zenoh://127.0.0.1:PORT?domain=N`` against
``harness sim serve --ros2 --zenoh tcp/127.0.0.1:PORT`` (a subprocess listening on loopback):
the same checks as over DDS (test_end_to_end.py), and a robot killed mid-goal and restarted on
its journal, reached over Zenoh."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness_bt.cli import main
from runtime_bridge.host.journal_log import read_rows
from runtime_bridge.ros2.types import RosTypes
from runtime_bridge.ros2.zenoh_transport import ZenohEndpoints, ZenohSession
from tests.conftest import Processes
from tests.runtime_bridge.ros2.conftest import free_endpoint
from tests.runtime_bridge.ros2.test_end_to_end import _check_bag, _pick_with_time

pytestmark = pytest.mark.slow


def _serve(processes: Processes, endpoint: str, domain: int, journal: Path,
           *extra: str) -> Any:
    return processes.ready(sys.executable, "-m", "harness_bt.cli", "sim", "serve", "--ros2",
                           "--zenoh", endpoint, "--ros2-domain", str(domain),
                           "--ros2-journal", str(journal), *extra)


def test_pick_runs_against_the_simulators_arm_served_over_zenoh(
        processes: Processes, domain: int, tmp_path: Path,
        capfd: pytest.CaptureFixture[str]) -> None:
    endpoint = free_endpoint()
    _, served = _serve(processes, endpoint, domain, tmp_path / "robot.db", "--ros2-truth",
                       "--scene", "pick_cube", "--seed", "3")
    assert (served["transport"], served["zenoh"]) == ("zenoh", endpoint)
    assert served["actions"]["grasp"] == "/harness/skills/grasp"
    bag = tmp_path / "robot_bag"
    url = f"zenoh://{endpoint.removeprefix('tcp/')}?domain={domain}"
    code = main(["run", str(_pick_with_time(tmp_path)), "--runtime", url,
                 "--record-ros2", str(bag), "--json"])
    report = json.loads(capfd.readouterr().out)
    assert code == 0, report
    episode = report["episodes"][0]
    assert (episode["outcome"], episode["reason"]) == ("succeeded", "done")
    assert episode["sim_ended_by"] == "not_judged"
    types = RosTypes()
    session = ZenohSession(domain, types, ZenohEndpoints(connect=(endpoint,)))
    try:  # the simulator's ground truth agrees: the target is in the hand
        reader = session.reader("/harness/sim/truth", "std_msgs/msg/String")
        truth: dict[str, Any] = {}
        for _ in range(1000):
            got = reader.take(8)
            if got:
                truth = json.loads(got[-1].data)
                break
            time.sleep(0.01)
    finally:
        session.close()
    assert truth["held"] == ["red_cube"], truth
    rows = read_rows(str(tmp_path / "robot.db")).values()
    started = Counter(cid for cid, *_, events in rows
                      for e in json.loads(events) if e["kind"] == "started")
    assert started and all(n == 1 for n in started.values()), started
    _check_bag(bag, skills={"approach", "grasp", "lift"})


def test_a_zenoh_robot_killed_mid_goal_and_restarted_reports_it_aborted_and_runs_it_once(
        processes: Processes, domain: int, tmp_path: Path) -> None:
    from harness_bt.errors import BridgeError
    from harness_bt.ledger import Command
    from runtime_bridge.ros2.bridge import Ros2Bridge
    from runtime_bridge.ros2.mapping import DEFAULT_MAPPING, load_mapping

    endpoint, journal = free_endpoint(), tmp_path / "robot.db"
    first, _ = _serve(processes, endpoint, domain, journal)
    types = RosTypes()
    bridge = Ros2Bridge(ZenohSession(domain, types, ZenohEndpoints(connect=(endpoint,))),
                        load_mapping(DEFAULT_MAPPING, types), timeout_s=3.0)
    try:
        assert bridge.wait_for_servers(60.0, {"home"}) == []
        slow = Command(command_id="home-1", task_id="t", robot_id="r", skill="home",
                       params={"joints": [0.6, 0.0, 0.0, -2.0, 0.0, 2.0, 0.8],
                               "speed_rad_s": 0.05},
                       resources=("arm",), world_version=0, start_within_ms=5_000,
                       execution_timeout_ms=600_000)
        assert bridge.dispatch(slow).accepted
        kinds: list[str] = []
        for _ in range(3000):
            kinds += [str(e.kind) for e in bridge.poll().events]
            if "started" in kinds:
                break
            time.sleep(0.01)
        assert kinds[:1] == ["started"]
        first.kill()  # SIGKILL mid-goal: its session's link closes, its tokens go
        first.wait(20)
        with pytest.raises(BridgeError, match="is gone"):
            for _ in range(3000):
                bridge.query("home-1")
                time.sleep(0.01)
        _serve(processes, endpoint, domain, journal)  # the same endpoint and journal
        for _ in range(6000):  # the bridge's session connects again on its own
            kinds += [str(e.kind) for e in bridge.poll().events]
            if "aborted" in kinds:
                break
            time.sleep(0.01)
        assert kinds[-1] == "aborted" and "control_done" not in kinds
        assert "RUNTIME_RESTARTED" in bridge.query("home-1").reason
        assert bridge.goals_sent == 1  # the goal was never sent again
    finally:
        bridge.close()
    rows = read_rows(str(journal))
    started = [e for e in json.loads(rows["home-1"][-1]) if e["kind"] == "started"]
    assert len(started) == 1  # started once, in the first life; never again


def test_zenoh_without_ros2_is_refused(capfd: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "serve", "--zenoh", "tcp/127.0.0.1:7447"])
    out = capfd.readouterr()
    assert code != 0
    assert "only the ROS 2 robot (--ros2) speaks Zenoh" in out.err + out.out
