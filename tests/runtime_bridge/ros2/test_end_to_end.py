"""``harness run trees/pick.yaml --runtime ros2://DOMAIN`` against ``harness sim serve --ros2``
(a subprocess) on loopback: the task is judged by the harness from ROS 2 topics, and the
simulator's own ground truth (``/harness/sim/truth``) confirms it; what ran is read from the
robot's journal."""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness_bt.cli import main
from runtime_bridge.host.journal_log import read_rows
from runtime_bridge.ros2.dds import Participant
from runtime_bridge.ros2.types import RosTypes
from tests.conftest import ROOT, Processes

pytestmark = pytest.mark.slow


def _serve(processes: Processes, domain: int, journal: Path, *extra: str) -> dict[str, Any]:
    _, ready = processes.ready(sys.executable, "-m", "harness_bt.cli", "sim", "serve", "--ros2",
                               "--ros2-domain", str(domain), "--ros2-journal", str(journal),
                               "--ros2-truth", *extra,
                               env={"CYCLONEDDS_URI": os.environ["CYCLONEDDS_URI"]})
    return ready


def test_pick_runs_against_the_simulators_arm_served_over_ros2(
        processes: Processes, domain: int, tmp_path: Path,
        capfd: pytest.CaptureFixture[str]) -> None:
    served = _serve(processes, domain, tmp_path / "robot.db", "--scene", "pick_cube",
                    "--seed", "3")
    assert served["actions"]["grasp"] == "/harness/skills/grasp"
    code = main(["run", str(ROOT / "trees" / "pick.yaml"), "--runtime", f"ros2://{domain}",
                 "--json"])
    report = json.loads(capfd.readouterr().out)
    assert code == 0, report
    episode = report["episodes"][0]
    assert (episode["outcome"], episode["reason"]) == ("succeeded", "done")
    assert episode["sim_ended_by"] == "not_judged"  # the robot cannot tell: not invented
    # the simulator's ground truth agrees: the target is in the hand
    types = RosTypes()
    p = Participant(domain, types)
    try:
        reader = p.reader("/harness/sim/truth", "std_msgs/msg/String")
        truth: dict[str, Any] = {}
        for _ in range(1000):
            got = reader.take(8)
            if got:
                truth = json.loads(got[-1].data)
                break
            time.sleep(0.01)
    finally:
        p.close()
    assert truth["held"] == ["red_cube"], truth
    rows = read_rows(str(tmp_path / "robot.db")).values()
    started = Counter(cid for cid, *_, events in rows
                      for e in json.loads(events) if e["kind"] == "started")
    assert started and all(n == 1 for n in started.values()), started


def test_a_ros2_url_with_a_bad_domain_is_refused_naming_it(
        domain: int, capfd: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(ROOT / "trees" / "pick.yaml"), "--runtime", f"ros2://{domain}x"])
    out = capfd.readouterr()
    assert code != 0
    assert f"ros2://{domain}x" in out.err + out.out
    assert "is not a ROS_DOMAIN_ID" in out.err + out.out
