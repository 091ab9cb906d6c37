from __future__ import annotations

from typing import Any

import pytest

from harness_bt.errors import DefinitionError
from harness_bt.runtime.episodes import RunOptions
from runtime_bridge.ros2.runtime import open_runtime, parse_ros2_url


def test_the_domain_comes_from_the_url_else_ros_domain_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROS_DOMAIN_ID", "42")
    assert parse_ros2_url("ros2://7") == (7, {})
    assert parse_ros2_url("ros2://") == (42, {})


def test_the_url_carries_the_mapping_and_the_cameras() -> None:
    assert parse_ros2_url("ros2://3?mapping=robot.yaml&cameras=front,wrist") == (
        3, {"mapping": "robot.yaml", "cameras": "front,wrist"})


@pytest.mark.parametrize(("url", "message"), [
    ("ros2://300", "domain '300' is not a ROS_DOMAIN_ID"),
    ("tcp://127.0.0.1:5555", "is not ros2://"),
    ("ros2://1?colour=red", "'colour=red' is not NAME=VALUE with NAME one of mapping"),
])
def test_a_bad_ros2_url_is_refused_naming_the_offending_part(url: str, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        parse_ros2_url(url)


def test_a_missing_mapping_file_is_refused_before_anything_connects(tmp_path) -> None:
    missing = tmp_path / "robot.yaml"
    with pytest.raises(DefinitionError, match=f"cannot read the mapping {missing}"):
        open_runtime(RunOptions(task="pick", runtime_url=f"ros2://5?mapping={missing}"))


def test_simulator_options_are_refused_against_a_ros2_robot() -> None:
    with pytest.raises(DefinitionError, match="--inject, --episodes configure the built-in "
                       "simulator"):
        open_runtime(RunOptions(task="pick", runtime_url="ros2://5", faults={"slip": 0.5},
                                episodes=3))


def test_serve_ros2_refuses_the_http_simulators_options(
        capfd: pytest.CaptureFixture[str]) -> None:
    from harness_bt.cli import main

    code = main(["sim", "serve", "--ros2", "--episodes", "3", "--fault-slip", "0.5"])
    out = capfd.readouterr()
    assert code != 0
    assert "--episodes, --fault-*: options of the HTTP simulator; --ros2 serves one scene" in \
        out.err + out.out


def test_a_zenoh_url_names_the_endpoint_to_connect_to_and_the_domain(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime_bridge.ros2.zenoh_runtime import parse_zenoh_url

    monkeypatch.setenv("ROS_DOMAIN_ID", "42")
    assert parse_zenoh_url("zenoh://") == ("tcp/127.0.0.1:7447", 42, {})
    assert parse_zenoh_url("zenoh://robot.local:7450?domain=7&mapping=robot.yaml") == (
        "tcp/robot.local:7450", 7, {"mapping": "robot.yaml"})


@pytest.mark.parametrize(("url", "message"), [
    ("zenoh://robot.local", "'robot.local' is not HOST:PORT"),
    ("zenoh://127.0.0.1:70000", "'127.0.0.1:70000' is not HOST:PORT"),
    ("zenoh://127.0.0.1:7447?domain=300", "domain '300' is not a ROS_DOMAIN_ID"),
    ("zenoh://127.0.0.1:7447?colour=red", "'colour=red' is not NAME=VALUE with NAME one of "
                                         "domain, mapping"),
    ("ros2://3", "is not zenoh://"),
])
def test_a_bad_zenoh_url_is_refused_naming_the_offending_part(url: str, message: str) -> None:
    from runtime_bridge.ros2.zenoh_runtime import parse_zenoh_url

    with pytest.raises(DefinitionError, match=message):
        parse_zenoh_url(url)


def test_a_zenoh_runtime_refuses_the_simulators_options_before_connecting() -> None:
    from runtime_bridge.ros2.zenoh_runtime import open_runtime as open_zenoh

    with pytest.raises(DefinitionError, match="--sim configure the built-in simulator"):
        open_zenoh(RunOptions(task="t", runtime_url="zenoh://127.0.0.1:7447",
                              sim_url="http://x"))


def test_serve_zenoh_without_ros2_is_refused(capfd: pytest.CaptureFixture[str]) -> None:
    from harness_bt.cli import main

    code = main(["sim", "serve", "--zenoh", "tcp/127.0.0.1:7447"])
    out = capfd.readouterr()
    assert code != 0
    assert "only the ROS 2 robot (--ros2) speaks Zenoh" in out.err + out.out


def test_a_zenoh_robot_that_does_not_answer_is_unreachable_naming_the_endpoint_and_a_fix(
        closing: Any) -> None:
    from harness_bt.errors import BridgeError
    from runtime_bridge.ros2.zenoh_runtime import open_runtime as open_zenoh
    from tests.runtime_bridge.ros2.conftest import free_endpoint

    port = free_endpoint().rpartition(":")[2]
    runtime = closing(open_zenoh(RunOptions(
        task="pick", runtime_url=f"zenoh://127.0.0.1:{port}?domain=3&connect_timeout_s=0.2")))
    with pytest.raises(BridgeError, match=f"no ROS 2 action server answered at .* on "
                       f"zenoh://127.0.0.1:{port}\\?domain=3 within 0.2 s") as err:
        runtime.start_episode()
    assert err.value.code == "RUNTIME_UNREACHABLE"
    assert f"harness sim serve --ros2 --zenoh tcp/127.0.0.1:{port}" in err.value.fix
