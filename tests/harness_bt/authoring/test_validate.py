"""Every validation error class, matched by message and position (file:line:column)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness_bt.authoring import SpecError, check_file, load_task
from harness_bt.testing.example import example_skills

HEAD = """\
name: demo
blackboard: {target: cup}
phases:
"""
FINALS = """\
  - {id: done, kind: final}
  - {id: aborted_work, kind: final}
"""
TRANSITIONS = """\
    transitions:
      - {event: succeeded, target: done}
      - {event: failed, target: aborted_work}
"""


def work(tree: str, transitions: str = TRANSITIONS) -> str:
    """A task whose one working phase has ``tree`` (line 5 holds its first line)."""
    return HEAD + "  - id: work\n    tree: " + tree + "\n" + transitions + FINALS


def check(text: str, tmp_path: Path, name: str = "task.yaml") -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text) if text.startswith(" ") else text)
    return [str(p) for p in check_file(path, skills=example_skills()).report]


def only(problems: list[str], code: str) -> list[str]:
    return [p for p in problems if f" {code}: " in p]


CASES = [
    # --- reading
    ("YAML_SYNTAX", "name: demo\nphases: [\n", "task.yaml:3:1: error YAML_SYNTAX: malformed YAML"),
    ("YAML_DUPLICATE_KEY", work("{skill: grasp, name: g, name: h, inputs: {object_id: target}}"),
     "task.yaml:5:35: error YAML_DUPLICATE_KEY: key 'name' is given twice in this mapping "
     "(first at line 5)"),
    ("YAML_KEY", work("{type: success, name: ok, yes: 1}"),
     "task.yaml:5:37: error YAML_KEY: key 'yes' is read as bool True, not text"),
    ("YAML_TAG", work("!include other.yaml"),
     "task.yaml:5:11: error YAML_TAG: unsupported YAML tag '!include'"),
    ("NON_FINITE", work("{type: wait_for, name: w, seconds: .inf}"),
     "task.yaml:5:46: error NON_FINITE: non-finite number inf at phases[0].tree.seconds"),
    # --- shape
    ("WRONG_TYPE", work("{type: retry, name: r, attempts: '3', child: {type: success, name: s}}"),
     "task.yaml:5:44: error WRONG_TYPE: attempts of retry 'r' must be a whole number, got '3'"),
    ("MISSING_FIELD", work("{type: evaluate, name: e}"),
     "task.yaml:5:11: error MISSING_FIELD: evaluate 'e' needs 'command' (at "
     "phases[0].tree.command); fix: add 'command:' (str: blackboard key holding the command "
     "id)"),
    ("UNKNOWN_FIELD", work("{type: sequence, name: s, memroy: true, children: []}"),
     "task.yaml:5:37: error UNKNOWN_FIELD: unknown param 'memroy' of sequence 's'; known: type, "
     "name, children, memory; did you mean 'memory'?"),
    ("UNKNOWN_NODE_TYPE", work("{type: Observe, name: look}"),
     "did you mean 'observe'?"),
    ("NODE_WITHOUT_TYPE", work("{name: look}"),
     "task.yaml:5:11: error NODE_WITHOUT_TYPE: node 'look' has no 'type'"),
    ("UNKNOWN_PHASE_KIND", HEAD + "  - {id: work, kind: loop}\n" + FINALS,
     "task.yaml:4:5: error UNKNOWN_PHASE_KIND: phase kind 'loop' is not one of atomic, "
     "compound, parallel, final, history"),
    ("PHASE_WITHOUT_KIND", HEAD + "  - {id: work}\n" + FINALS,
     "task.yaml:4:5: error PHASE_WITHOUT_KIND: phase 'work' has no tree, phases or regions"),
    ("UNKNOWN_EVENT", work("{type: success, name: ok}", "    transitions:\n"
                           "      - {event: sucess, target: done}\n"),
     "task.yaml:7:17: error UNKNOWN_EVENT: unknown event 'sucess'; events: succeeded, failed, "
     "unknown, budget_exhausted, done (at phases[0].transitions[0].event)"),
    ("UNKNOWN_SKILL", work("{skill: grsp, name: g}"),
     "task.yaml:5:19: error UNKNOWN_SKILL: unknown skill 'grsp'; known: align, approach, grasp, "
     "navigate, place, release; did you mean 'grasp'?"),
    ("INVALID_ID", HEAD + "  - {id: do.ne, kind: final}\n",
     "task.yaml:4:10: error INVALID_ID: phase id 'do.ne' must be an identifier"),
    ("INVALID_NAME", work("{type: success, name: a/b}"),
     "task.yaml:5:33: error INVALID_NAME: node name 'a/b' must be non-empty and contain no '/'"),
    ("EMPTY_VALUE", "name: ''\nphases:\n  - {id: done, kind: final}\n",
     "task.yaml:1:7: error EMPTY_VALUE: name of the task must not be empty"),
    ("EMPTY_LIST", "name: demo\nphases: []\n",
     "task.yaml:2:9: error EMPTY_LIST: phases of the task needs at least one item"),
    ("INVALID_VALUE", work("{type: success, name: ok}", "    transitions:\n      - {event: "
                           "succeeded, target: done, guard: g, when: 'bb.x'}\n"),
     "task.yaml:7:9: error INVALID_VALUE: transition 0 of phase 'work': give a guard by name or "
     "an inline 'when', not both"),
    # --- nodes
    ("MISSING_PARAM", work("{skill: navigate, name: go, params: {x_m: 1.0}}"),
     "task.yaml:5:47: error MISSING_PARAM: skill 'navigate' needs param 'y_m' and skill_action "
     "'go' does not give it"),
    ("UNKNOWN_PARAM", work("{skill: grasp, name: g, params: {object_id: cup, force: 3}}"),
     "task.yaml:5:60: error UNKNOWN_PARAM: skill 'grasp' has no param 'force'; its params: "
     "object_id"),
    ("INVALID_PARAMS", work("{skill: navigate, name: go, params: {x_m: far, y_m: 0}}"),
     "task.yaml:5:53: error INVALID_PARAMS: param x_m of skill 'navigate' in skill_action 'go': "
     "Input should be a valid number"),
    ("INVALID_EXPRESSION", work("{type: wait_for, name: w, when: 'bb.x = 1'}"),
     "task.yaml:5:43: error INVALID_EXPRESSION: when of wait_for 'w': unexpected character '=' "
     "at column 6 of 'bb.x = 1'"),
    ("INVALID_NODE", work("{type: parallel, name: p, policy: some, children: []}"),
     "task.yaml:5:11: error INVALID_NODE: parallel 'p': policy 'some' must be one of"),
    ("INVALID_BUDGET", work("{type: retry, name: r, attempts: 0, child: {type: success, "
                            "name: s}}"),
     "task.yaml:5:44: error INVALID_BUDGET: retry 'r': attempts=0 must be >= 1"),
    ("INVALID_BUDGET", "name: demo\nbudget: {max_retries: -1}\nphases:\n"
     "  - {id: done, kind: final}\n",
     "task.yaml:2:23: error INVALID_BUDGET: max_retries=-1 must be >= 0"),
    ("INVALID_BUDGET", work("{type: recover, name: r, budget: 1, backoff: {base: 1}, attempt: "
                            "{type: success, name: a}, recovery: {type: success, name: b}}"),
     "task.yaml:5:57: error INVALID_BUDGET: recover 'r': backoff has no 'base'; it takes base_s "
     "and cap_s; did you mean 'base_s'?"),
    ("DUPLICATE_NAME", work("{type: sequence, name: s, children: [{type: success, name: a}, "
                            "{type: failure, name: a}]}"),
     "task.yaml:5:74: error DUPLICATE_NAME: children 0 and 1 of sequence 's' are both named 'a'"),
    ("RETRIES_EXCEED_TASK_BUDGET",
     "name: demo\nbudget: {max_retries: 1}\nphases:\n  - id: work\n    tree: {type: retry, name: "
     "r, attempts: 5, child: {type: success, name: s}}\n" + TRANSITIONS + FINALS,
     "task.yaml:5:44: warning RETRIES_EXCEED_TASK_BUDGET: retry 'r' allows 4 retries but the "
     "task budget has max_retries=1"),
    # --- blackboard
    ("BLACKBOARD_NEVER_WRITTEN", work("{skill: grasp, name: g, inputs: {object_id: tagret}}"),
     "task.yaml:5:55: error BLACKBOARD_NEVER_WRITTEN: blackboard key 'tagret' is read by "
     "skill_action 'g' (inputs) but nothing writes it; written: g, target; did you mean "
     "'target'?"),
    ("BLACKBOARD_NEVER_WRITTEN", work("{type: success, name: ok}", "    transitions:\n"
                                      "      - {event: succeeded, target: done, when: "
                                      "'bb.count > 2'}\n      - {event: succeeded, target: "
                                      "aborted_work}\n"),
     "task.yaml:7:48: error BLACKBOARD_NEVER_WRITTEN: blackboard key 'count' is read by the "
     "guard of phase 'work' on 'succeeded'"),
    # --- chart
    ("UNKNOWN_TARGET", work("{type: success, name: ok}", "    transitions:\n"
                            "      - {event: succeeded, target: dnoe}\n"
                            "      - {event: failed, target: aborted_work}\n"),
     "task.yaml:7:36: error UNKNOWN_TARGET: phase 'work': transition on 'succeeded' targets "
     "unknown phase 'dnoe'; phases: work, done, aborted_work; did you mean 'done'?"),
    ("UNREACHABLE_PHASE", work("{type: success, name: ok}") + "  - id: extra\n    tree: "
     "{type: success, name: ok}\n    transitions: [{event: succeeded, target: done}]\n",
     "task.yaml:11:9: error UNREACHABLE_PHASE: phase 'extra' can never be entered: no "
     "transition leads to it from the initial phase 'work'"),
    ("NO_EXIT", HEAD + "  - id: work\n    tree: {type: running, name: r}\n"
     "  - {id: done, kind: final}\n",
     "task.yaml:4:9: error NO_EXIT: phase 'work' has no transition out, nor do the phases around "
     "it"),
    ("DUPLICATE_PHASE", work("{type: success, name: ok}") + "  - {id: done, kind: final}\n",
     "task.yaml:11:10: error DUPLICATE_PHASE: phase id 'done' is used twice (first at "),
    ("NO_FINAL", HEAD + "  - id: work\n    tree: {type: running, name: r}\n    transitions: "
     "[{event: failed, target: work}]\n",
     "error NO_FINAL: the task has no top-level final phase"),
    ("INVALID_FINAL_REASON", work("{type: success, name: ok}") + "  - {id: x, kind: final, "
     "reason: finished}\n",
     "task.yaml:11:34: error INVALID_FINAL_REASON: top-level final 'x': reason 'finished' must be "
     "'done' or start with 'aborted_'"),
    ("UNKNOWN_INITIAL", "initial: wrok\n" + work("{type: success, name: ok}"),
     "task.yaml:1:10: error UNKNOWN_INITIAL: initial 'wrok' is not a top-level phase; top-level: "
     "work, done, aborted_work; did you mean 'work'?"),
    ("INVALID_REGION", HEAD + "  - id: both\n    kind: parallel\n    regions:\n"
     "      - {id: a, tree: {type: running, name: r}}\n      - {id: b, kind: final}\n"
     "    transitions: [{event: failed, target: done}]\n" + FINALS,
     "task.yaml:8:9: error INVALID_REGION: parallel 'both': region 'b' is a final phase"),
    ("DONE_ON_ATOMIC", work("{type: success, name: ok}", "    transitions:\n"
                            "      - {event: done, target: done}\n"),
     "task.yaml:7:17: error DONE_ON_ATOMIC: phase 'work': 'done' fires only on compound or "
     "parallel phases"),
    ("DONE_NEVER_FIRES", HEAD + "  - id: outer\n    kind: compound\n    phases:\n"
     "      - {id: a, tree: {type: success, name: ok}, transitions: [{event: failed, "
     "target: done}]}\n    transitions: [{event: done, target: done}, {event: failed, "
     "target: aborted_work}]\n" + FINALS,
     "warning DONE_NEVER_FIRES: compound 'outer' has no final phase, so its 'done' never fires"),
    ("UNKNOWN_GUARD", work("{type: success, name: ok}", "    transitions:\n"
                           "      - {event: succeeded, target: done, guard: redy}\n"
                           "      - {event: succeeded, target: aborted_work}\n"),
     "task.yaml:7:49: error UNKNOWN_GUARD: phase 'work': unknown guard 'redy'; known: (none)"),
]


@pytest.mark.parametrize(("code", "text", "expected"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_error_class_is_reported_with_its_place_and_message(
        code: str, text: str, expected: str, tmp_path: Path) -> None:
    problems = check(text, tmp_path)
    found = only(problems, code)
    assert found, "\n".join(problems)
    assert any(expected in p for p in found), "\n".join(found)
    assert all("fix: " in p for p in found)  # every problem says what to do


def test_every_problem_of_a_document_is_reported_at_once(tmp_path: Path) -> None:
    text = work("{type: sequence, name: s, memroy: true, children: [{type: Observe, name: o}, "
                "{skill: grsp, name: g}, {skill: navigate, name: go, params: {x_m: far}}]}",
                "    transitions:\n      - {event: sucess, target: dnoe}\n"
                "      - {event: failed, target: aborted_work, guard: nope}\n")
    codes = [p.split(" error ")[1].split(":")[0] for p in check(text, tmp_path)
             if " error " in p]
    assert codes == ["UNKNOWN_FIELD", "UNKNOWN_NODE_TYPE", "UNKNOWN_SKILL", "MISSING_PARAM",
                     "INVALID_PARAMS", "UNKNOWN_EVENT", "UNKNOWN_TARGET", "UNKNOWN_GUARD"]
    # the misspelt target 'dnoe' is one error: 'done', which it meant, is not unreachable


def test_load_refuses_the_document_before_building_anything(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(work("{skill: grsp, name: g}"))
    with pytest.raises(SpecError) as err:
        load_task(path, skills=example_skills())
    assert err.value.code == "INVALID_TASK_FILE"
    assert err.value.details["problems"][0].startswith(f"{path}:5:19: error UNKNOWN_SKILL")


def test_a_missing_or_empty_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    assert check("", tmp_path) == [f"{tmp_path / 'task.yaml'}: error EMPTY_FILE: the file holds "
                                   "no task; fix: write a task: name, phases, ..."]
    missing = [str(p) for p in check_file(tmp_path / "nope.yaml", skills=example_skills()).report]
    assert missing[0].startswith(f"{tmp_path / 'nope.yaml'}: error FILE_UNREADABLE: cannot read")
    assert only(check("- just\n- a list\n", tmp_path), "WRONG_TYPE") == [
        f"{tmp_path / 'task.yaml'}:1:1: error WRONG_TYPE: a task file is a mapping with name and "
        "phases, got a list; fix: start the file with the task's keys (name and phases)"]


def test_no_skills_registered_says_how_to_provide_them(tmp_path: Path) -> None:
    from harness_bt.skill import SkillRegistry

    path = tmp_path / "task.yaml"
    path.write_text(work("{skill: grasp, name: g, inputs: {object_id: target}}"))
    problems = [str(p) for p in check_file(path, skills=SkillRegistry()).report]
    assert problems == [
        f"{path}:5:19: error UNKNOWN_SKILL: unknown skill 'grasp' in skill_action 'g'; known: "
        "(none) (at phases[0].tree.skill); fix: use a registered skill, or install the package "
        "that provides it (no skills are registered: install a skills package, or pass --skills "
        "module:factory)"]


PARALLEL_LEFT_BY_ONE_REGION = """\
name: demo
phases:
  - id: both
    kind: parallel
    regions:
      - id: wait
        tree: {type: wait_for, name: w, seconds: 0.1}
        transitions: [{event: succeeded, target: done}]
      - id: idle
        tree: {type: running, name: r}
  - {id: done, kind: final}
"""


def test_a_parallel_phase_that_one_region_leaves_has_an_exit(tmp_path: Path) -> None:
    """A region's transition out of the parallel phase exits the phase and every region:
    neither is reported NO_EXIT."""
    assert check(PARALLEL_LEFT_BY_ONE_REGION, tmp_path) == []
    stuck = PARALLEL_LEFT_BY_ONE_REGION.replace("target: done}]", "target: idle}]")
    problems = check(stuck, tmp_path)  # wait only moves within the parallel phase
    assert [p.split(": error ")[1].split(":")[0] for p in problems] == [
        "NO_EXIT", "NO_EXIT", "UNREACHABLE_PHASE"]
    assert "phase 'both' has no transition out" in problems[0]
    assert "phase 'idle' has no transition out" in problems[1]


def test_a_python_task_is_held_to_the_chart_rules_of_a_document(tmp_path: Path) -> None:
    import py_trees

    from harness_bt import Final, Phase, Task, on
    from harness_bt.errors import DefinitionError

    text = HEAD + """\
  - id: work
    tree: {type: success, name: ok}
    transitions: [{event: succeeded, target: done}]
  - id: lost
    tree: {type: success, name: ok}
    transitions: [{event: succeeded, target: done}]
  - {id: done, kind: final}
"""
    assert [p.split(": error ")[1].split(":")[0] for p in check(text, tmp_path)] == [
        "UNREACHABLE_PHASE"]
    with pytest.raises(DefinitionError) as err:
        Task("demo", [
            Phase("work", lambda: py_trees.behaviours.Success("ok"),
                  transitions=[on("succeeded", "done")]),
            Phase("lost", lambda: py_trees.behaviours.Success("ok"),
                  transitions=[on("succeeded", "done")]),
            Final("done")])
    assert err.value.details["problems"] == [
        "UNREACHABLE_PHASE: phase 'lost' can never be entered: no transition leads to it from "
        "the initial phase 'work' (at phases[1].id)"]


NAVIGATE = "{skill: navigate, name: go, params: {x_m: 1.0, y_m: 0.0}}"


def test_a_misspelt_target_is_one_error_not_a_cascade_of_unreachable_phases(
        tmp_path: Path) -> None:
    problems = check(work(NAVIGATE, "    transitions:\n      - {event: succeeded, target: dnoe}\n"
                          "      - {event: failed, target: aborted_work}\n"), tmp_path)
    assert [p.split(" error ")[1].split(":")[0] for p in problems] == ["UNKNOWN_TARGET"]
    assert "did you mean 'done'?" in problems[0]


def test_a_phase_nothing_could_reach_is_still_reported_beside_a_misspelling(
        tmp_path: Path) -> None:
    text = work(NAVIGATE, "    transitions:\n      - {event: succeeded, target: dnoe}\n"
                "      - {event: failed, target: aborted_work}\n") \
        + "  - {id: aborted_never, kind: final}\n"
    codes = [(p.split(" error ")[1].split(":")[0], p) for p in check(text, tmp_path)]
    assert [c for c, _ in codes] == ["UNKNOWN_TARGET", "UNREACHABLE_PHASE"]
    assert "phase 'aborted_never' can never be entered" in codes[1][1]


def test_a_target_close_to_no_phase_reports_no_unreachable_phase(tmp_path: Path) -> None:
    problems = check(work(NAVIGATE, "    transitions:\n      - {event: succeeded, target: xyzzy}\n"
                          "      - {event: failed, target: aborted_work}\n"), tmp_path)
    assert [p.split(" error ")[1].split(":")[0] for p in problems] == ["UNKNOWN_TARGET"]


def test_a_misspelt_subtree_is_one_error_not_an_unused_subtree_and_an_unwritten_key(
        tmp_path: Path) -> None:
    text = ("name: demo\nsubtrees:\n  look_at: {type: observe, name: look, objects: [cup], "
            "record: plan}\nphases:\n  - id: work\n    tree:\n      type: sequence\n"
            "      name: s\n      children:\n        - {subtree: lok_at}\n"
            "        - {type: check, name: still, objects: [cup], snapshot: plan}\n"
            + TRANSITIONS + FINALS)
    problems = check(text, tmp_path)
    assert problems == [f"{tmp_path / 'task.yaml'}:10:21: error UNKNOWN_SUBTREE: unknown subtree "
                        "'lok_at'; known: look_at; did you mean 'look_at'? (at phases[0].tree."
                        "children[0].subtree); fix: define it under 'subtrees:' or include the "
                        "file that does"]
    fixed = check(text.replace("lok_at", "look_at"), tmp_path)
    assert fixed == []
