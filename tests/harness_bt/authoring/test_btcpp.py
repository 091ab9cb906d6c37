"""BehaviorTree.CPP v4 XML import: every supported tag from a hand-written fixture, the tree
running end to end, and clear errors for what is not supported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness_bt import FakeClock, TaskRunner
from harness_bt.authoring import (
    SpecError,
    build_task,
    check_file,
    dump_yaml,
    import_btcpp,
    neutral_form,
)
from harness_bt.authoring.readers.btcpp import SUPPORTED, read_btcpp
from harness_bt.authoring.registries import Registries
from harness_bt.testing.example import example_runtime, example_skills

FIXTURES = Path(__file__).parent / "fixtures"
EVERY_TAG = FIXTURES / "every_tag.xml"


def registries() -> Registries:
    return Registries(skills=example_skills())


def problems_of(text: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "tree.xml"
    path.write_text(text)
    _, problems = read_btcpp(path, registries())
    return [str(p).replace(f"{tmp_path}/", "") for p in problems]


def wrap(body: str) -> str:
    return (f'<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n{body}\n'
            "  </BehaviorTree>\n</root>\n")


def test_the_fixture_covers_every_supported_tag() -> None:
    tags = set(re.findall(r"<([A-Za-z_]+)", EVERY_TAG.read_text()))
    assert set(SUPPORTED) <= tags


def test_every_tag_maps_to_its_node() -> None:
    doc, problems = read_btcpp(EVERY_TAG, registries())
    assert problems == []
    fetch = doc.data["subtrees"]["FetchCup"]
    assert fetch["type"] == "sequence" and "memory" not in fetch  # the default: True
    go, have_cup, hold, release, never = fetch["children"]
    assert go == {"type": "act_and_evaluate", "name": "go", "skill": "navigate",
                  "params": {"x_m": 1.6, "y_m": 0.5}}
    assert (have_cup["type"], have_cup["memory"]) == ("selector", False)  # ReactiveFallback
    assert have_cup["children"][0] == {"type": "inverter", "name": "already_held",
                                       "child": {"type": "success", "name": "success"}}
    assert have_cup["children"][1] == {  # SubTree: literal value, {=}, _autoremap
        "subtree": "PickCup", "name": "pick", "remap": {"grip_key": "grip_key"},
        "values": {"target": [0.5, 0.0, 0.05]}}  # _autoremap="true": the default
    assert hold["policy"] == "one"  # Parallel success_count=1
    assert hold["children"][0] == {"type": "timeout", "name": "timeout", "seconds": 1.5,
                                   "child": {"type": "evaluate", "name": "held",
                                             "command": "grip_key", "max_observations": 2}}
    assert hold["children"][1] == {
        "type": "keep_running_until_failure", "name": "watch",
        "child": {"type": "delay", "name": "delay", "seconds": 0.1,
                  "child": {"type": "success", "name": "tick"}}}
    assert release == {"type": "force_success", "name": "try_release", "child": {
        "type": "retry", "name": "retry_until_successful", "attempts": 2,
        "backoff": {"base_s": 0.0, "cap_s": 0.0},
        "child": {"type": "act_and_evaluate", "name": "release", "skill": "release",
                  "params": {"object_id": "cup"}}}}
    assert never == {"type": "force_failure", "name": "never",
                     "child": {"type": "wait_for", "name": "sleep", "seconds": 0.2}}
    pick = doc.data["subtrees"]["PickCup"]
    observe, approach, repeat, both, anyof = pick["children"]
    assert (pick["type"], pick.get("memory", True)) == ("sequence", True)  # SequenceWithMemory
    assert observe == {"type": "observe", "name": "observe", "objects": ["cup"],
                       "record": "plan", "timeout_s": 1.0}
    assert (approach["type"], approach["memory"]) == ("sequence", False)  # ReactiveSequence
    assert approach["children"][1] == {"type": "act_and_evaluate", "name": "descend",
                                       "skill": "approach", "params": {"height_m": 0.0},
                                       "inputs": {"target": "target"}}
    assert repeat == {"type": "repeat", "name": "repeat", "times": 1, "child": {
        "skill": "grasp", "name": "grasp", "output": "grip_key",
        "params": {"object_id": "cup"}}}
    assert (both["type"], both["policy"]) == ("parallel", "all")  # ParallelAll
    assert (anyof["type"], anyof.get("memory", True)) == ("selector", True)  # Fallback
    assert [c["name"] for c in anyof["children"]] == ["failure", "success"]
    assert doc.data["metadata"] == {"main_tree_to_execute": "FetchCup"}
    assert str(doc.mark(("subtrees", "PickCup", "children", 2))) == f"{EVERY_TAG}:40:7"


def test_the_imported_tree_runs_to_its_forced_failure() -> None:
    spec = import_btcpp(EVERY_TAG, skills=example_skills())
    assert [p.id for p in spec.phases] == ["main", "done", "aborted_failed", "aborted_unknown",
                                           "aborted_budget_exhausted"]
    task = build_task(spec, skills=example_skills())
    assert task.blackboard == {"pick.target": [0.5, 0.0, 0.05]}  # the SubTree's literal port
    clock = FakeClock()
    runner = TaskRunner(task, bridge=example_runtime(clock), clock=clock,
                        skills=example_skills(), run_id="x")
    result = runner.run(max_ticks=500)
    assert (result.outcome, result.reason) == ("aborted", "aborted_failed")
    assert result.commands == {
        "x/main.1/fetch/go/go.act#1": "SUCCEEDED",
        "x/main.1/fetch/have_cup/pick/approach/descend/descend.act#1": "SUCCEEDED",
        "x/main.1/fetch/have_cup/pick/repeat/grasp#1": "SUCCEEDED",
        "x/main.1/fetch/try_release/retry_until_successful/release/release.act#1": "SUCCEEDED"}
    (outcome,) = [e["data"]["outcome"] for e in runner.trace.of_kind("outcome")]
    assert (outcome["kind"], outcome["reason"], outcome["node_path"]) == (
        "failed", "FORCED_FAILURE", "fetch/never")


def test_a_task_file_includes_the_xml_and_uses_its_trees(tmp_path: Path) -> None:
    (tmp_path / "trees.xml").write_text(EVERY_TAG.read_text())
    task = tmp_path / "task.yaml"
    task.write_text(
        "name: reuse\nincludes: [trees.xml]\nblackboard: {goal: [0.5, 0.0, 0.05]}\nphases:\n"
        "  - id: pick\n    tree: {subtree: PickCup, remap: {target: goal}}\n"
        "    transitions: [{event: succeeded, target: done}, {event: failed, target: "
        "aborted_pick}]\n  - {id: done, kind: final}\n  - {id: aborted_pick, kind: final}\n")
    checked = check_file(task, skills=example_skills())
    assert checked.report.problems == []
    neutral = neutral_form(task, skills=example_skills())
    approach = neutral["phases"][0]["tree"]["children"][1]["children"][1]
    assert approach["inputs"] == {"target": "goal"}  # remapped into the including task
    assert neutral["phases"][0]["tree"]["children"][2]["child"]["output"] == "grip_key"


def test_the_import_command_writes_a_task_that_validates(tmp_path: Path) -> None:
    from harness_bt.cli import main

    out = tmp_path / "task.yaml"
    assert main(["import-xml", str(EVERY_TAG), "-o", str(out), "--skills",
                 "harness_bt.testing.example:example_skills"]) == 0
    text = out.read_text()
    assert text.startswith("# imported from every_tag.xml (BehaviorTree.CPP v4)\nname: every_tag")
    assert "tree: {subtree: FetchCup}" in text
    assert main(["validate", str(out), "--skills",
                 "harness_bt.testing.example:example_skills"]) == 0
    assert dump_yaml(import_btcpp(EVERY_TAG, skills=example_skills())) in text


@pytest.mark.parametrize(("body", "expected"), [
    ('    <Script code="x := 1"/>',
     "tree.xml:3:5: error XML_UNSUPPORTED: <Script> ('x := 1') assigns the blackboard, which "
     "trees here never do from a script (at subtrees.Main); fix: set the value in the task's "
     "'blackboard:' defaults"),
    ('    <ScriptCondition code="a .. b"/>',
     "tree.xml:3:5: error XML_UNSUPPORTED: <ScriptCondition code='a .. b'>: string "
     "concatenation (..) has no counterpart in the expression language"),
    ('    <Sequence>\n      <IfThenElse><AlwaysSuccess/><AlwaysSuccess/></IfThenElse>\n'
     '    </Sequence>',
     'tree.xml:4:7: error XML_UNSUPPORTED: <IfThenElse> is not supported'),
    ('    <Grasp object_id="cup" _onSuccess="done := true"/>',
     "tree.xml:3:5: error XML_UNSUPPORTED: <Grasp> _onSuccess='done := true': a post-condition "
     "assigns the blackboard"),
    ('    <Grasp object_id="cup" _skipIf="n := 1"/>',
     "tree.xml:3:5: error XML_UNSUPPORTED: <Grasp> _skipIf='n := 1': an assignment (:=) has no "
     "counterpart in the expression language"),
    ('    <Grsp object_id="cup"/>',
     "tree.xml:3:5: error XML_UNKNOWN_NODE: <Grsp> is neither a supported BehaviorTree.CPP node "
     "nor a registered skill or node type (looked for 'Grsp' / 'grsp'); did you mean 'grasp'?"),
    ('    <Parallel success_count="2"><AlwaysSuccess/><AlwaysSuccess/><AlwaysSuccess/>'
     '</Parallel>',
     "tree.xml:3:5: error XML_UNSUPPORTED: <Parallel success_count=2> with 3 children"),
    ('    <RetryUntilSuccessful num_attempts="-1"><AlwaysSuccess/></RetryUntilSuccessful>',
     "tree.xml:3:5: error XML_UNSUPPORTED: <RetryUntilSuccessful num_attempts=-1>: retries "
     "here are bounded"),
    ('    <Repeat num_cycles="three"><AlwaysSuccess/></Repeat>',
     "tree.xml:3:5: error XML_ATTRIBUTE: <Repeat> num_cycles='three' is not a whole number"),
    ('    <Inverter><AlwaysSuccess/><AlwaysFailure/></Inverter>',
     "tree.xml:3:5: error XML_CHILDREN: <Inverter> needs exactly one child, has 2"),
    ('    <Timeout><AlwaysSuccess/></Timeout>',
     "tree.xml:3:5: error XML_MISSING_ATTRIBUTE: <Timeout> needs msec="),
    ('    <Sequence>\n      <AlwaysSuccess>\n    </Sequence>',
     "tree.xml:5:7: error XML_SYNTAX: malformed XML: mismatched tag"),
])
def test_what_is_not_supported_gets_an_error_naming_the_tag_and_line(
        body: str, expected: str, tmp_path: Path) -> None:
    problems = problems_of(wrap(body), tmp_path)
    assert any(p.startswith(expected) for p in problems), "\n".join(problems)


def test_a_doctype_is_refused(tmp_path: Path) -> None:
    text = '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY x "y">]>\n<root/>\n'
    assert problems_of(text, tmp_path)[0].startswith("tree.xml:2: error XML_DOCTYPE: a DOCTYPE "
                                                     "is not allowed")


def test_import_problems_point_into_the_xml(tmp_path: Path) -> None:
    path = tmp_path / "tree.xml"
    path.write_text(wrap('    <Navigate x_m="1.5"/>'))
    with pytest.raises(SpecError) as err:
        import_btcpp(path, skills=example_skills())
    assert err.value.details["problems"] == [
        f"{path}:3:5: error MISSING_PARAM: skill 'navigate' needs param 'y_m' and "
        "act_and_evaluate 'navigate' does not give it (at subtrees.Main.params); fix: give it in "
        "params (a value), inputs (a blackboard key) or objects (an object's pose); see "
        "NavigateParams(x_m: float (m), y_m: float (m), yaw_rad: float = 0.0 (rad), "
        "landmark: str = 'cup')"]
    path.write_text(wrap('    <Navigate x_m="far" y_m="0"/>'))
    with pytest.raises(SpecError, match="x_m='far': could not convert string to float"):
        import_btcpp(path, skills=example_skills())


def test_harness_validate_checks_an_xml_file_as_the_task_it_makes(
        capsys: pytest.CaptureFixture[str]) -> None:
    from harness_bt.cli import main

    assert main(["validate", str(EVERY_TAG), "--skills",
                 "harness_bt.testing.example:example_skills"]) == 0
    assert capsys.readouterr().out == f"{EVERY_TAG}: OK (every_tag: 5 phases)\n"
    from harness_bt.skill import SkillRegistry

    report = check_file(EVERY_TAG, skills=SkillRegistry()).report
    assert [p.code for p in report.errors] == [
        "UNKNOWN_SKILL", "BLACKBOARD_NEVER_WRITTEN",  # the grasp that would write it is unknown
        "XML_UNKNOWN_NODE", "XML_UNKNOWN_NODE", "XML_UNKNOWN_NODE"]
    assert str(report.errors[2]).startswith(f"{EVERY_TAG}:25:11: error XML_UNKNOWN_NODE: "
                                            "<Release> is neither")
