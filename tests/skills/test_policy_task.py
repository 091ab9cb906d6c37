"""A policy skill in a real task on the built-in simulator: ``harness run`` of the policy
tasks against a policy served over openpi's protocol; judged by the task's evaluation and
checked against the simulator's own verdict."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from harness_bt.cli import main
from tests.conftest import ROOT
from tests.harness_bt.policy.peer import OpenpiPeer
from tests.skills.policy_peers import PlainPick

pytestmark = pytest.mark.slow
ALONE = str(ROOT / "trees" / "policy_pick_alone.yaml")
ORCHESTRATED = str(ROOT / "trees" / "policy_pick.yaml")


@pytest.fixture
def policy() -> Iterator[OpenpiPeer]:
    peer = OpenpiPeer(PlainPick()).start()
    yield peer
    peer.stop()


def run(capfd: pytest.CaptureFixture[str], task: str, url: str, *args: str) -> dict:
    code = main(["run", task, "--set", f"policy_url={url}", "--json", *args])
    report = json.loads(capfd.readouterr().out)
    report["exit"] = code
    return report


def test_the_policy_alone_picks_the_cube_judged_by_the_task_and_the_simulator(
        policy: OpenpiPeer, capfd: pytest.CaptureFixture[str]) -> None:
    report = run(capfd, ALONE, policy.url, "--set", "target=green_cube", "--seed", "3")
    episode = report["episodes"][0]
    assert (report["exit"], episode["outcome"], episode["reason"]) == (0, "succeeded", "done")
    assert episode["sim_success"] is True
    assert policy.observations[0]["prompt"] == "pick up the green cube"


def test_a_miss_the_policy_cannot_see_fails_alone_and_is_recovered_when_orchestrated(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with OpenpiPeer(PlainPick(0.045, 0.0)) as peer:  # the first attempt closes beside the cube
        alone = run(capfd, ALONE, peer.url, "--seed", "3")
    episode = alone["episodes"][0]
    assert (alone["exit"], episode["outcome"], episode["reason"]) == (1, "aborted",
                                                                      "aborted_policy")
    assert episode["sim_success"] is False and episode["false_success"] is False

    with OpenpiPeer(PlainPick(0.045, 0.0)) as peer:
        orchestrated = run(capfd, ORCHESTRATED, peer.url, "--seed", "3", "--trace",
                           str(tmp_path / "run.jsonl"))
    episode = orchestrated["episodes"][0]
    assert (orchestrated["exit"], episode["outcome"], episode["reason"]) == (0, "succeeded",
                                                                             "done")
    assert episode["sim_success"] is True and episode["recoveries"] == 1
    ends = [json.loads(line)["data"].get("detail", "") for line in
            (tmp_path / "run.jsonl").open() if '"event:control_done"' in line
            and '"run_policy"' in line]  # why each policy run ended, in the trace
    assert ends[0] == "the policy signalled done after 94 steps"  # the miss: lifted nothing
    assert ends[1].startswith("until lifted: red_cube is ")  # seen lifted between two chunks


def test_a_policy_answering_nan_fails_its_command_with_the_reason_and_the_run_goes_on(
        capfd: pytest.CaptureFixture[str]) -> None:
    def nan(obs: dict, n: int) -> dict:
        return {"actions": np.full((4, 7), np.nan, dtype=np.float32)}

    with OpenpiPeer(nan) as peer:
        report = run(capfd, ORCHESTRATED, peer.url, "--seed", "3")
    episode = report["episodes"][0]
    assert (report["exit"], episode["outcome"]) == (1, "aborted")
    assert episode["false_success"] is False and episode["sim_success"] is False
    assert "POLICY_ACTION" in json.dumps(episode)  # the reason reaches the summary
    assert episode["recoveries"] >= 2  # each failed run was recovered from, then the budget ran out
