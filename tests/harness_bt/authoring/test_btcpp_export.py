"""``harness export-xml``: a task as BehaviorTree.CPP v4 XML that Groot2 opens and edits, read
back by ``import-xml`` to the same task; the port syntax (lists, mappings, transitions) and
its errors; the budget of an imported task."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness_bt.authoring import SpecError, check_file, import_btcpp, load_spec
from harness_bt.authoring.loader import export_btcpp
from harness_bt.authoring.model import TaskSpec
from harness_bt.authoring.readers.btcpp import DEFAULT_BUDGET, SUPPORTED, read_btcpp
from harness_bt.authoring.readers.btcpp.chart import format_transitions, parse_transitions
from harness_bt.authoring.readers.btcpp.peer import model_id
from harness_bt.authoring.registries import Registries
from harness_bt.cli import main
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.skill import SkillRegistry
from harness_bt.testing.example import example_skills
from harness_bt.testing.example_spec import FETCH_CUP_YAML

TREES = Path(__file__).resolve().parents[3] / "trees"
LIBRARY = sorted(p for p in TREES.glob("*.yaml") if p.name != "steps.yaml")
SKILLS = ["--skills", "harness_bt.testing.example:example_skills"]


def round_trip(task: Path, out: Path, **registries: object) -> tuple[TaskSpec, TaskSpec]:
    out.write_text(export_btcpp(task, out_dir=out.parent, **registries))  # type: ignore[arg-type]
    return load_spec(task, **registries), load_spec(out, **registries)  # type: ignore[arg-type]


def same_includes(original: TaskSpec, task: Path, back: TaskSpec, xml: Path) -> bool:
    """The includes name the same files (each relative to its own task file)."""
    return [(task.parent / i).resolve() for i in original.includes] == [
        (xml.parent / i).resolve() for i in back.includes]


@pytest.mark.parametrize("task", LIBRARY, ids=lambda p: p.stem)
def test_every_library_task_round_trips_through_export_and_import(task: Path,
                                                                  tmp_path: Path) -> None:
    out = tmp_path / "groot" / f"{task.stem}.xml"
    out.parent.mkdir()
    original, back = round_trip(task, out)
    assert same_includes(original, task, back, out)
    assert back.model_copy(update={"includes": original.includes}) == original


def test_a_task_with_compound_and_parallel_phases_round_trips(tmp_path: Path) -> None:
    original, back = round_trip(FETCH_CUP_YAML, tmp_path / "fetch.xml", skills=example_skills())
    assert any(p.kind in ("compound", "parallel") for p in original.phases)
    assert back == original


def test_guards_reasons_blackboard_and_metadata_round_trip(tmp_path: Path) -> None:
    task = tmp_path / "t.yaml"
    task.write_text(
        "name: guarded\nversion: 3\nmetadata: {author: me, tags: [a, b]}\n"
        "blackboard: {target: cup, count: 2, pose: [0.1, 0.2]}\n"
        "budget: {max_retries: 2}\n"
        "guards: {slow: \"outcome.reason == 'TIMEOUT'\"}\n"
        "phases:\n"
        "  - id: work\n"
        "    description: 'work; then [stop]'\n"
        "    tree: {skill: grasp, name: close, inputs: {object_id: target}, output: grasp}\n"
        "    transitions:\n"
        "      - {event: succeeded, target: done, description: 'all; done'}\n"
        "      - {event: failed, target: aborted_slow, guard: slow}\n"
        "      - {event: failed, target: aborted_x, when: \"bb.count > max(1, len([1, 2]))\"}\n"
        "      - {event: failed, target: aborted_x, reason: NO_PROGRESS}\n"
        "      - {event: unknown, target: aborted_x, when: \"outcome.reason == 'a;b]'\"}\n"
        "  - {id: done, kind: final}\n  - {id: aborted_slow, kind: final}\n"
        "  - {id: aborted_x, kind: final, reason: aborted_other}\n")
    original, back = round_trip(task, tmp_path / "t.xml", skills=example_skills())
    assert back == original


def test_the_file_is_what_groot2_opens(tmp_path: Path) -> None:
    out = tmp_path / "pick_and_place.xml"
    out.write_text(export_btcpp(TREES / "pick_and_place.yaml", out_dir=tmp_path))
    root = ET.parse(out).getroot()
    assert (root.tag, root.get("BTCPP_format"), root.get("main_tree_to_execute")) == (
        "root", "4", "pick_and_place")
    trees = [bt.get("ID") for bt in root.findall("BehaviorTree")]
    spec = load_spec(TREES / "pick_and_place.yaml")
    atomic = [p.id for p in spec.phases if p.kind == "atomic"]
    assert trees[0] == "pick_and_place"  # the chart
    assert trees[1:1 + len(atomic)] == [f"phase_{p}" for p in atomic]  # one per phase tree
    assert {"approach", "reach", "close", "grasp", "held", "carry", "put"} <= set(trees)
    assert spec.includes == ["steps.yaml"]  # those subtrees are steps.yaml's
    (model,) = root.findall("TreeNodesModel")
    declared = {el.get("ID"): el for el in model}
    registries = Registries.installed()
    assert {model_id(n) for n in NodeRegistry(entry_points=True).names()} <= set(declared)
    assert registries.skills is not None
    assert {model_id(n) for n in registries.skills.names()} <= set(declared)
    # every element in a tree is a BehaviorTree.CPP node or one the model declares
    used = {el.tag for bt in root.findall("BehaviorTree") for el in bt.iter()} - {"BehaviorTree"}
    assert used <= set(SUPPORTED) | set(declared) | {"Script"}  # (the parameters)
    # ports carry a direction, a type and a description
    observe = {p.get("name"): p for p in declared["Observe"]}
    assert observe["objects"].tag == "input_port"
    assert observe["objects"].get("type") == "std::vector<std::string>"
    assert "a list: a;b;c" in (observe["objects"].text or "")
    assert observe["record"].tag == "output_port"
    grasp = {p.get("name"): p for p in declared["Grasp"]}
    assert grasp["object_id"].tag == "input_port" and grasp["output"].tag == "output_port"
    assert grasp["speed_mps"].get("default") == "0.12"
    assert declared["Phase"].tag == "Decorator" and declared["Task"].tag == "Control"


def test_edits_made_in_groot2_come_back(tmp_path: Path) -> None:
    out = tmp_path / "pick_cube.xml"
    text = export_btcpp(TREES / "pick_cube.yaml", out_dir=tmp_path)
    assert 'max_retries="8"' in text and "failed -&gt; aborted_approach;" in text
    out.write_text(text.replace('max_retries="8"', 'max_retries="3"').replace(
        "failed -&gt; aborted_approach;", "failed [reason=IK_FAILED] -&gt; aborted_approach;"))
    back = load_spec(out)
    assert back.budget is not None and back.budget.max_retries == 3
    approach = next(p for p in back.phases if p.id == "approach")
    assert approach.transitions[1].reason == "IK_FAILED"  # type: ignore[union-attr]


def test_a_changed_included_tree_is_reported_and_the_included_one_used(tmp_path: Path
                                                                      ) -> None:
    out = tmp_path / "pick_cube.xml"
    text = export_btcpp(TREES / "pick_cube.yaml", out_dir=tmp_path)
    out.write_text(text.replace('<Recover name="approach_or_back_off" budget="3">',
                                '<Recover name="approach_or_back_off" budget="2">'))
    back = load_spec(out)  # loads, with a warning
    warnings = [str(p) for p in check_file(out).report.problems]
    assert len(warnings) == 1
    assert "warning INCLUDED_TREE_CHANGED: tree 'approach' differs from the one in " in \
        warnings[0] and warnings[0].startswith(f"{out}:")
    assert back.subtrees == {}


def test_transitions_read_back_and_odd_text_falls_back_to_json() -> None:
    items = [{"event": "succeeded", "target": "done"},
             {"event": "failed", "target": "x", "reason": "TIMEOUT", "guard": "slow"},
             {"event": "failed", "target": "y", "when": "bb.a in [1, 2] and bb.s == 'k;]'"}]
    text = format_transitions(items)
    assert text.startswith("succeeded -> done; failed [reason=TIMEOUT] [guard=slow] -> x; ")
    assert parse_transitions(text) == items
    odd = [{"event": "failed", "target": "x", "description": "a ] b"}]
    assert format_transitions(odd).startswith("json:[")
    assert parse_transitions(format_transitions(odd)) == odd


@pytest.mark.parametrize(("text", "message"), [
    ("succeeded done", "'succeeded done' has no '->'"),
    ("failed [reson=X] -> done", "[reson=X] is not one of reason=..., guard=..."),
    ("failed [reason=X -> done", "'[' without its ']'"),
    ("-> done", "does not start with an event"),
    ("failed -> two words", "target 'two words' is not a phase id"),
])
def test_a_malformed_transition_is_an_error_naming_it(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_transitions(text)
    assert message in str(err.value)


def test_a_malformed_transition_in_a_file_points_at_its_line(tmp_path: Path) -> None:
    out = tmp_path / "t.xml"
    out.write_text(export_btcpp(TREES / "pick_cube.yaml", out_dir=tmp_path).replace(
        "succeeded -&gt; approach", "succeeded approach"))
    with pytest.raises(SpecError) as err:
        load_spec(out)
    assert f"{out}:6:7: error XML_ATTRIBUTE: <Phase id='observe'> transitions: " \
           "'succeeded approach' has no '->'" in str(err.value)


def test_a_comma_where_a_list_is_expected_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "tree.xml"
    path.write_text('<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n'
                    '    <Observe objects="red_cube,tray"/>\n  </BehaviorTree>\n</root>\n')
    _, problems = read_btcpp(path, Registries(skills=SkillRegistry()))
    assert [str(p) for p in problems] == [
        f"{path}:3:5: error XML_ATTRIBUTE: <Observe> objects='red_cube,tray': 'red_cube,tray': "
        "a list here is separated by ';', not ',' (write 'red_cube;tray', or json:[...] for "
        "items that hold a comma) (at subtrees.Main); fix: write a value of the port's type"]
    path.write_text(path.read_text().replace("red_cube,tray", "red_cube;tray"))
    doc, problems = read_btcpp(path, Registries(skills=SkillRegistry()))
    assert problems == [] and doc.data["subtrees"]["Main"]["objects"] == ["red_cube", "tray"]


def test_an_imported_tree_gets_the_default_budget_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tree.xml"
    path.write_text('<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n'
                    '    <Navigate x_m="1.0" y_m="0.5"/>\n  </BehaviorTree>\n</root>\n')
    spec = import_btcpp(path, skills=example_skills())
    assert spec.budget is not None
    assert spec.budget.model_dump() == DEFAULT_BUDGET
    assert main(["import-xml", str(path), "-o", str(tmp_path / "t.yaml"), *SKILLS]) == 0
    err = capsys.readouterr().err
    assert "note: tree.xml gives no task budget (BehaviorTree.CPP has none); the task gets " \
           "max_retries=5, max_time_s=120" in err
    assert main(["import-xml", str(path), "-o", str(tmp_path / "t.yaml"), "--max-retries",
                 "2", *SKILLS]) == 0
    assert "max_retries=2, max_time_s=120" in capsys.readouterr().err
    assert "budget: {max_retries: 2, max_time_s: 120.0}" in (tmp_path / "t.yaml").read_text()


def test_export_xml_and_import_xml_from_the_command_line(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    xml = tmp_path / "out" / "fetch.xml"
    assert main(["export-xml", str(FETCH_CUP_YAML), "-o", str(xml), *SKILLS]) == 0
    assert main(["import-xml", str(xml), "-o", str(tmp_path / "fetch.yaml"), *SKILLS]) == 0
    assert capsys.readouterr().err == ""  # the exported task has its budget
    assert load_spec(tmp_path / "fetch.yaml", skills=example_skills()) == load_spec(
        FETCH_CUP_YAML, skills=example_skills())


def test_an_exported_file_included_by_a_task_lends_its_trees(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "pick_cube.xml").write_text(
        export_btcpp(TREES / "pick_cube.yaml", out_dir=tmp_path / "lib"))
    task = tmp_path / "task.yaml"
    task.write_text(
        "name: reach_only\nincludes: [lib/pick_cube.xml]\nscene: pick_cube\n"
        "params: {target: {type: object, default: red_cube}}\n"
        "phases:\n  - id: a\n    tree: {subtree: approach, values: {obj: \"{target}\"}}\n"
        "    transitions: [{event: succeeded, target: done}, {event: failed, target: "
        "aborted_a}]\n  - {id: done, kind: final}\n  - {id: aborted_a, kind: final}\n")
    assert check_file(task).report.problems == []


def test_a_node_type_with_child_trees_takes_one_child_per_tree_port(tmp_path: Path) -> None:
    path = tmp_path / "tree.xml"
    path.write_text('<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n'
                    '    <recover name="hold" budget="2">\n      <AlwaysSuccess/>\n'
                    '    </recover>\n  </BehaviorTree>\n</root>\n')
    _, problems = read_btcpp(path, Registries(skills=SkillRegistry()))
    assert [str(p) for p in problems] == [
        f"{path}:3:5: error XML_CHILDREN: <recover> takes 2 to 2 children (attempt, recovery), "
        "has 1 (at subtrees.Main); fix: give it one child for each of: attempt, recovery"]
    path.write_text(path.read_text().replace("<AlwaysSuccess/>",
                                             "<AlwaysSuccess/><AlwaysFailure/>"))
    doc, problems = read_btcpp(path, Registries(skills=SkillRegistry()))
    assert problems == []
    assert doc.data["subtrees"]["Main"] == {
        "type": "recover", "name": "hold", "budget": 2,
        "attempt": {"type": "success", "name": "success"},
        "recovery": {"type": "failure", "name": "failure"}}
