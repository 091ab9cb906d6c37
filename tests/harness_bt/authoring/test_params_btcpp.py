"""Parameters and subtree inputs in BehaviorTree.CPP XML: ``{key}`` on a blackboard port
stays a blackboard reference; on a value port (``objects=``, ``timeout_s=``) it is a task
parameter or a subtree input, which a ``<SubTree>`` port supplies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_bt.authoring import check_file, load_task, neutral_form
from harness_bt.testing.example import example_skills

TREES = """\
<root BTCPP_format="4" main_tree_to_execute="Main">
  <BehaviorTree ID="Main">
    <Sequence name="main">
      <SubTree ID="pick_object" name="pick" obj="green_cube"/>
    </Sequence>
  </BehaviorTree>
  <BehaviorTree ID="pick_object">
    <Sequence name="pick_object">
      <Observe objects="{obj}" record="{plan}" timeout_s="1.0"/>
      <Grasp object_id="{obj}" snapshot="{plan}"/>
    </Sequence>
  </BehaviorTree>
</root>
"""
TASK = """\
name: pick
includes: [trees.xml]
params:
  target: {type: object, default: cup}
phases:
  - id: work
    tree: USE
    transitions:
      - {event: succeeded, target: done}
      - {event: failed, target: aborted_work}
  - {id: done, kind: final}
  - {id: aborted_work, kind: final}
"""


def write(tmp_path: Path, xml: str = TREES, use: str | None = None) -> Path:
    (tmp_path / "trees.xml").write_text(xml)
    if use is None:
        return tmp_path / "trees.xml"
    (tmp_path / "task.yaml").write_text(TASK.replace("USE", use))
    return tmp_path / "task.yaml"


def problems(path: Path, **params: Any) -> list[str]:
    report = check_file(path, skills=example_skills(), params=params).report
    return [str(p).replace(f"{path.parent}/", "") for p in report]


def pick_tree(path: Path, **params: Any) -> dict[str, Any]:
    tree = neutral_form(path, skills=example_skills(), params=params)["phases"][0]["tree"]
    while tree.get("name") != "pick":
        tree = tree["children"][0]
    return tree


def test_a_subtree_port_supplies_the_input_a_value_port_uses(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert problems(path) == []
    observe, grasp = pick_tree(path)["children"]
    assert observe["objects"] == ["green_cube"]  # a value port: the input's value
    assert observe["record"] == "pick.plan"  # a blackboard port: a key (private to the use)
    assert grasp["inputs"] == {"object_id": "pick.obj"}  # a skill port: still the blackboard
    task = load_task(path, skills=example_skills())
    assert task.blackboard == {"pick.obj": "green_cube"}


def test_a_task_parameter_reaches_the_xml_subtree_by_remap(tmp_path: Path) -> None:
    path = write(tmp_path, use="{subtree: pick_object, name: pick, remap: {obj: target}}")
    assert problems(path) == []
    assert pick_tree(path)["children"][0]["objects"] == ["cup"]
    assert pick_tree(path, target="bottle")["children"][0]["objects"] == ["bottle"]
    task = load_task(path, skills=example_skills(), params={"target": "bottle"})
    assert task.blackboard == {"pick.obj": "bottle"}  # the skill's blackboard port reads it


def test_a_subtree_port_naming_a_parameter_passes_its_value(tmp_path: Path) -> None:
    xml = TREES.replace('obj="green_cube"', 'obj="{target}"')
    path = write(tmp_path, xml, use="{subtree: Main}")
    assert problems(path) == []
    assert pick_tree(path, target="bottle")["children"][0]["objects"] == ["bottle"]


def test_an_input_no_subtree_port_gives_is_named_in_the_xml(tmp_path: Path) -> None:
    path = write(tmp_path, TREES.replace(' obj="green_cube"', ""))
    assert problems(path) == [
        "trees.xml:4:7: error MISSING_SUBTREE_INPUT: subtree 'pick_object' needs input 'obj' "
        "('{obj}' at trees.xml:9:7) and this use does not give it (at "
        "subtrees.Main.children[0].subtree); fix: add values: {obj: ...} to this use (a value, "
        "or '{param}' for a task parameter)",
        "trees.xml:9:7: error UNDECLARED_PARAM: '{obj}' in subtree 'pick_object' is not given "
        "by its use at trees.xml:4:7 nor a task parameter (at "
        "subtrees.pick_object.children[0].objects[0]); fix: give it where the subtree is used "
        "(values: {obj: ...}), or declare 'obj' under the task's 'params:'",
        # the skill's port reads the blackboard, where nothing wrote the key either
        "trees.xml:10:7: error BLACKBOARD_NEVER_WRITTEN: blackboard key 'pick.obj' is read by "
        "act_and_evaluate 'grasp' (inputs) but nothing writes it (via subtree 'Main' used at "
        "trees.xml:1:1; subtree 'pick_object' used at trees.xml:4:7); written: "
        "grasp.check.verdict, grasp.cmd, pick.plan (at "
        "subtrees.pick_object.children[1].inputs.object_id); fix: write it first (a "
        "skill_action's output, an observe / check 'record', the task's 'blackboard:' "
        "defaults), or fix the key's spelling"]


def test_a_value_port_cannot_take_a_blackboard_reference(tmp_path: Path) -> None:
    path = write(tmp_path, TREES.replace('timeout_s="1.0"', 'timeout_s="{=}"'))
    assert problems(path)[0] == (
        "trees.xml:9:7: error XML_ATTRIBUTE: <Observe> timeout_s='{=}': this port takes a "
        "value, not a blackboard reference (at subtrees.pick_object.children[0]); fix: write "
        "the value itself, or '{name}' for a task parameter or a subtree input")


def test_a_value_port_typed_from_a_parameter(tmp_path: Path) -> None:
    xml = TREES.replace('timeout_s="1.0"', 'timeout_s="{wait}"').replace(
        'obj="green_cube"', 'obj="green_cube" wait="2.5"')
    path = write(tmp_path, xml)
    assert problems(path) == []
    assert pick_tree(path)["children"][0]["timeout_s"] == 2.5
    xml = xml.replace('wait="2.5"', 'wait="soon"')
    assert problems(write(tmp_path, xml))[0].startswith(
        "trees.xml:9:7: error WRONG_TYPE: timeout_s of observe 'observe' must be a number, got "
        "'soon'")
