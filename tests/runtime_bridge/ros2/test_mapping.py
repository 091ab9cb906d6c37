from __future__ import annotations

import pytest

from harness_bt.errors import DefinitionError
from harness_bt.ledger import Command
from runtime_bridge.ros2.mapping import DEFAULT_MAPPING, load_mapping
from runtime_bridge.ros2.types import RosTypes

NAV = """geometry_msgs/PoseStamped pose
string behavior_tree
---
std_msgs/Empty result
---
geometry_msgs/PoseStamped current_pose
float32 distance_remaining
"""


def _command(skill: str, **params: object) -> Command:
    return Command(command_id=f"{skill}-1", task_id="t", robot_id="r", skill=skill,
                   params=params, resources=("arm",), world_version=0, start_within_ms=500,
                   execution_timeout_ms=10_000)


def test_a_gripper_skill_maps_onto_control_msgs_gripper_command_with_its_params() -> None:
    types = RosTypes()
    mapping = load_mapping({"skills": {"grasp": {
        "action": "/gripper_controller/gripper_cmd", "type": "control_msgs/action/GripperCommand",
        "goal": {"command.position": 0.0, "command.max_effort": "{params.force}"},
        "progress": "position"}}}, types)
    binding = mapping.binding("grasp")
    goal = mapping.build_goal(types, binding, _command("grasp", force=35), None)
    assert (goal.command.position, goal.command.max_effort) == (0.0, 35.0)
    data = types.serialize(goal, "control_msgs/action/GripperCommand_Goal")
    assert types.deserialize(data, "control_msgs/action/GripperCommand_Goal").command \
        .max_effort == 35.0


def test_an_action_from_the_files_interfaces_is_usable_like_a_built_in_one() -> None:
    types = RosTypes()
    mapping = load_mapping({"interfaces": {"nav2_msgs/action/NavigateToPose": NAV},
                            "skills": {"navigate_to_pose": {
                                "action": "/navigate_to_pose",
                                "type": "nav2_msgs/action/NavigateToPose",
                                "goal": {"pose.header.frame_id": "map",
                                         "pose.pose.position.x": "{params.x_m}"},
                                "progress": "distance_remaining"}}}, types)
    goal = mapping.build_goal(types, mapping.binding("navigate_to_pose"),
                              _command("navigate_to_pose", x_m=1.5), None)
    assert (goal.pose.header.frame_id, goal.pose.pose.position.x) == ("map", 1.5)


def test_every_problem_of_a_mapping_is_reported_at_once() -> None:
    with pytest.raises(DefinitionError) as err:
        load_mapping({"skills": {
            "a": {"action": "relative", "type": "control_msgs/action/GripperCommand"},
            "b": {"action": "/b", "type": "nav2_msgs/action/Unknown"},
            "c": {"action": "/c", "type": "control_msgs/action/GripperCommand",
                  "goal": {"command.force": 1}, "colour": "red"}}}, RosTypes())
    problems = err.value.details["problems"]
    assert len(problems) == 4, problems
    text = " | ".join(problems)
    assert "'relative' is not an absolute ROS 2 name" in text
    assert "'nav2_msgs/action/Unknown_Goal' is not known" in text
    assert "has no field 'command.force'" in text
    assert "unknown key(s) ['colour']" in text


def test_a_skill_without_a_binding_is_refused_naming_the_mapped_ones() -> None:
    mapping = load_mapping(DEFAULT_MAPPING, RosTypes())
    with pytest.raises(DefinitionError, match="skill 'navigate' has no ROS 2 action in the "
                       r"mapping; mapped: \['approach', 'grasp'"):
        mapping.binding("navigate")


def test_a_goal_field_naming_a_missing_param_is_refused_with_the_field() -> None:
    types = RosTypes()
    mapping = load_mapping({"skills": {"grasp": {
        "action": "/g", "type": "control_msgs/action/GripperCommand",
        "goal": {"command.max_effort": "{params.force}"}}}}, types)
    with pytest.raises(DefinitionError, match=r"goal field command.max_effort needs param "
                       "'force'"):
        mapping.build_goal(types, mapping.binding("grasp"), _command("grasp"), None)
