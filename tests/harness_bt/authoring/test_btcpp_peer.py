"""What BehaviorTree.CPP requires of an exported file, and what its users write that we read:
IDs, port types and defaults, the parameters' script, script conditions, BT.CPP's lenient
attribute text, implicit names, the main tree, and a palette of the user's own nodes. (BT.CPP
itself runs the results in ``btcpp/test_btcpp_conformance.py``.)"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness_bt.authoring import SpecError, import_btcpp
from harness_bt.authoring.loader import export_btcpp
from harness_bt.authoring.readers.btcpp import read_btcpp, task_document
from harness_bt.authoring.readers.btcpp.bindings import read_palette
from harness_bt.authoring.readers.btcpp.peer import BUILTIN, model_id, script_literal
from harness_bt.authoring.readers.btcpp.script import translate
from harness_bt.authoring.registries import Registries
from harness_bt.errors import DefinitionError

TREES = Path(__file__).resolve().parents[3] / "trees"
CONVERTIBLE = {"std::string", "int", "double", "bool", "std::vector<std::string>",
               "std::vector<double>", "std::vector<int>"}


def exported(task: str, tmp_path: Path) -> ET.Element:
    return ET.fromstring(export_btcpp(TREES / task, out_dir=tmp_path))


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_exported_ids_are_unique_and_none_is_a_btcpp_node(tmp_path: Path) -> None:
    root = exported("place_at.yaml", tmp_path)
    trees = [bt.get("ID") for bt in root.findall("BehaviorTree")]
    (model,) = root.findall("TreeNodesModel")
    nodes = [m.get("ID") for m in model if m.tag != "SubTree"]
    assert len(set(trees)) == len(trees) and len(set(nodes)) == len(nodes)
    assert not set(trees) & (set(nodes) | BUILTIN)
    assert {"approach", "grasp"} <= set(trees) and {"Approach", "Grasp"} <= set(nodes)


def test_exported_ports_have_convertible_types_real_defaults_and_allowed_names(
        tmp_path: Path) -> None:
    text = export_btcpp(TREES / "place_at.yaml", out_dir=tmp_path)
    assert "PydanticUndefined" not in text and "std::map" not in text
    (model,) = ET.fromstring(text).findall("TreeNodesModel")
    for node in model:
        for port in node:
            if port.tag.endswith("_port"):
                assert port.get("type") in CONVERTIBLE, (node.get("ID"), port.attrib)
                assert port.get("name") not in ("name", "ID"), node.get("ID")
    move = model.find("Action[@ID='MoveEeTo']")
    assert move is not None
    ports = {p.get("name"): p for p in move}
    assert ports["offset_m"].get("type") == "std::vector<double>"
    assert ports["target"].get("default") is None  # required: no default written


def test_task_parameters_are_main_tree_blackboard_entries_set_by_a_script(
        tmp_path: Path) -> None:
    root = exported("place_at.yaml", tmp_path)
    task = root.find("BehaviorTree/Task")
    assert task is not None
    assert (task.get("target"), task.get("offset")) == ("{target}", "{offset}")
    script = task[0]
    assert (script.tag, script.get("code")) == ("Script", "target:='red_cube'; offset:='0.0;0.1'")
    model = root.find("TreeNodesModel/Control[@ID='Task']")
    assert model is not None
    ports = {p.get("name"): p.get("type") for p in model}
    assert ports["target"] == ports["offset"] == "std::string" and "name" not in ports


def test_subtree_inputs_and_lists_are_written_in_btcpp_syntax(tmp_path: Path) -> None:
    root = exported("place_at.yaml", tmp_path)
    use = root.find("BehaviorTree[@ID='phase_approach']/SubTree")
    assert use is not None and use.attrib == {"ID": "approach", "obj": "{target}",
                                              "_values": "obj", "_autoremap": "true"}
    aim = root.find(".//DerivePose[@name='aim']")
    assert aim is not None and (aim.get("offset"), aim.get("_whole")) == ("{offset}", "offset")
    looks = [el.get("objects") or "" for el in root.iter("Observe")]
    assert "{target}" in looks  # a list of one parameter: BT.CPP converts its text
    assert all(not (v.startswith("{") and v.endswith("}")) or v.count("{") == 1 for v in looks)
    model = root.find("TreeNodesModel/SubTree[@ID='approach']")
    assert model is not None and [p.get("name") for p in model] == ["obj"]


def test_a_parameter_named_like_a_task_field_is_refused_at_export(tmp_path: Path) -> None:
    task = write(tmp_path, "t.yaml", "name: t\nparams: {scene: {type: string, default: x}}\n"
                 "budget: {max_retries: 1, max_time_s: 5}\nphases:\n"
                 "  - {id: a, tree: {type: success, name: s}, transitions: "
                 "[{event: succeeded, target: done}]}\n  - {id: done, kind: final}\n")
    with pytest.raises(DefinitionError, match="the parameter 'scene' cannot be a port of <Task>"):
        export_btcpp(task)


def test_script_values_are_the_text_ports_convert_from() -> None:
    assert script_literal("red_cube") == "'red_cube'"
    assert script_literal([0.0, 0.1]) == "'0.0;0.1'"
    assert script_literal(True) == "'true'"
    assert script_literal("it's") is None and script_literal({"a": 1}) is None
    assert model_id("act_and_evaluate") == "ActAndEvaluate"
    assert model_id("sequence") == "sequence"  # Sequence is BT.CPP's own


@pytest.mark.parametrize(("code", "expr"), [
    ("a > 1 && b == 'x'", "bb.a > 1 and bb.b == 'x'"),
    ("!(done) || count <= 2.5", "not ( bb.done ) or bb.count <= 2.5"),
    ("flag == true", "bb.flag == true"),
])
def test_a_btcpp_condition_becomes_an_expression(code: str, expr: str) -> None:
    assert translate(code) == expr


@pytest.mark.parametrize(("code", "message"), [
    ("x := 1", "an assignment (:=) has no counterpart"),
    ("a .. b", "string concatenation (..) has no counterpart"),
    ("a ? b : c", "the conditional operator (? :) has no counterpart"),
    ("a == 1; b == 2", "more than one statement (;) has no counterpart"),
    ("a & 1", "the bitwise operator & has no counterpart"),
    ("@root > 1", "the root blackboard (@) and enums are not blackboard keys here"),
])
def test_a_btcpp_script_without_a_counterpart_is_refused_naming_the_construct(
        code: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("?", r"\?").replace(".", r"\.")):
        translate(code)


def test_pre_conditions_wrap_the_node_in_btcpp_order(tmp_path: Path) -> None:
    path = write(tmp_path, "c.xml", '<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n'
                 '    <AlwaysSuccess name="go" _while="a > 1" _failureIf="b && c"/>\n'
                 "  </BehaviorTree>\n</root>\n")
    doc, problems = read_btcpp(path, Registries.installed())
    assert problems == []
    tree = doc.data["subtrees"]["Main"]
    assert (tree["type"], tree["name"]) == ("sequence", "go_failure_if")  # checked first
    check, inner = tree["children"]
    assert check == {"type": "wait_for", "name": "failure_if",
                     "when": "not (bb.b and bb.c)", "timeout_s": 0.001}
    assert (inner["name"], inner["memory"]) == ("go_while", False)  # re-checked every tick
    assert inner["children"][1] == {"type": "success", "name": "go"}


def test_an_unnamed_subtree_beside_an_unnamed_always_success_is_no_duplicate(
        tmp_path: Path) -> None:
    path = write(tmp_path, "d.xml", '<root BTCPP_format="4" main_tree_to_execute="Main">\n'
                 '  <BehaviorTree ID="Main">\n    <Sequence>\n      <SubTree ID="Sub"/>\n'
                 "      <AlwaysSuccess/>\n    </Sequence>\n  </BehaviorTree>\n"
                 '  <BehaviorTree ID="Sub"><AlwaysSuccess/></BehaviorTree>\n</root>\n')
    spec = import_btcpp(path)
    assert spec.subtrees["Main"]["children"] == [
        {"subtree": "Sub", "name": "Sub", "autoremap": False},
        {"type": "success", "name": "success"}]


def test_underscore_attributes_are_ignored_as_btcpp_does(tmp_path: Path) -> None:
    path = write(tmp_path, "u.xml", '<root BTCPP_format="4" main_tree_to_execute="Main">\n'
                 '  <BehaviorTree ID="Main" _fullpath="">\n'
                 '    <SubTree ID="Sub" _fullpath="Sub::1" _uid="1" _autoremap="true"/>\n'
                 '  </BehaviorTree>\n  <BehaviorTree ID="Sub" _fullpath="Sub::1">\n'
                 "    <AlwaysSuccess/>\n  </BehaviorTree>\n</root>\n")
    doc, problems = read_btcpp(path, Registries.installed())
    assert problems == [] and doc.data["subtrees"]["Main"] == {"subtree": "Sub"}


def test_a_file_without_a_main_tree_says_so_plainly(tmp_path: Path) -> None:
    path = write(tmp_path, "m.xml", '<root BTCPP_format="4">\n'
                 '  <BehaviorTree ID="A"><AlwaysSuccess/></BehaviorTree>\n'
                 '  <BehaviorTree ID="B"><AlwaysSuccess/></BehaviorTree>\n</root>\n')
    doc, _ = read_btcpp(path, Registries.installed())
    with pytest.raises(DefinitionError) as err:
        task_document(doc)
    assert str(err.value) == (
        f"NO_MAIN_TREE: {path}: the file names no main tree: it has no main_tree_to_execute "
        "and holds 2 trees (A, B); set main_tree_to_execute=\"<ID>\" on <root>, or pass "
        "--tree <ID>")


def test_an_unescaped_and_and_less_than_in_an_attribute_are_read_as_btcpp_reads_them(
        tmp_path: Path) -> None:
    path = write(tmp_path, "a.xml", '<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n'
                 '    <ScriptCondition code="a &amp;&amp; b < 2 && c"/>\n'
                 "  </BehaviorTree>\n</root>\n")
    doc, problems = read_btcpp(path, Registries.installed())
    assert problems == []
    assert doc.data["subtrees"]["Main"]["when"] == "bb.a and bb.b < 2 and bb.c"


PALETTE = """<root BTCPP_format="4">
  <TreeNodesModel>
    <Action ID="OpenGripper">
      <input_port name="object" type="std::string" param="object_id"/>
      <MetadataFields><Metadata skill="release"/></MetadataFields>
    </Action>
    <Action ID="Observe"/>
    <Action ID="Fly"><input_port name="to"/></Action>
    <Action ID="GoHome">
      <input_port name="speed" type="double"/>
      <MetadataFields><Metadata skill="home"/></MetadataFields>
    </Action>
  </TreeNodesModel>
</root>
"""


def test_a_palette_binds_the_users_nodes_to_skills(tmp_path: Path) -> None:
    palette = write(tmp_path, "p.xml", PALETTE.replace('    <Action ID="Fly"><input_port '
                                                       'name="to"/></Action>\n', "")
                    .replace('name="speed"', 'name="speed" param="speed_rad_s"'))
    tree = write(tmp_path, "t.xml", '<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n'
                 '    <Sequence>\n      <OpenGripper object="red_cube"/>\n'
                 '      <GoHome speed="0.5"/>\n    </Sequence>\n  </BehaviorTree>\n</root>\n')
    spec = import_btcpp(tree, palette=palette)
    assert spec.subtrees["Main"]["children"] == [
        {"type": "act_and_evaluate", "name": "release", "skill": "release",
         "params": {"object_id": "red_cube"}},
        {"type": "act_and_evaluate", "name": "home", "skill": "home",
         "params": {"speed_rad_s": 0.5}}]
    with pytest.raises(SpecError, match="XML_UNKNOWN_NODE: <OpenGripper>"):
        import_btcpp(tree)  # without the palette


def test_a_palette_model_naming_no_skill_or_param_is_refused_with_every_problem(
        tmp_path: Path) -> None:
    palette = write(tmp_path, "p.xml", PALETTE)
    with pytest.raises(SpecError) as err:
        read_palette(palette, Registries.installed())
    text = str(err.value)
    assert f"{palette}:8:5: error PALETTE_UNBOUND: <Action ID='Fly'> names no skill: 'fly' " \
           "is not one" in text
    assert f"{palette}:10:7: error PALETTE_PORT: <Action ID='GoHome'> port 'speed' gives no " \
           "param of skill 'home' (its params: joints, speed_rad_s, tolerance_rad)" in text
