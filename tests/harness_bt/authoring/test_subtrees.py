"""Subtrees, includes and named guards: reuse with blackboard remapping, every misuse named."""

from __future__ import annotations

from pathlib import Path

from harness_bt import FakeClock, TaskRunner
from harness_bt.authoring import check_file, dump_yaml, load_spec, load_task, neutral_form
from harness_bt.testing.example import example_runtime, example_skills

LIBRARY = """\
description: shared trees
guards:
  slow: "outcome.reason == 'NO_PROGRESS'"
subtrees:
  grasp_it:
    type: sequence
    name: grasp_it
    children:
      - {type: observe, name: look, objects: [cup], record: plan}
      - {skill: grasp, name: close, inputs: {object_id: object}, snapshot: plan, output: cmd}
      - {type: evaluate, name: held, command: cmd}
"""

TASK = """\
name: reuse
includes: [lib.yaml]
blackboard: {thing: cup}
phases:
  - id: first
    tree: {subtree: grasp_it, name: grab, remap: {object: thing}}
    transitions:
      - {event: succeeded, target: second}
      - {event: failed, target: aborted_slow, guard: slow}
      - {event: failed, target: aborted_grasp}
  - id: second
    tree: {subtree: grasp_it, name: again, values: {object: cup}, autoremap: false}
    transitions: [{event: succeeded, target: done}, {event: failed, target: aborted_grasp}]
  - {id: done, kind: final}
  - {id: aborted_slow, kind: final}
  - {id: aborted_grasp, kind: final}
"""


def write(tmp_path: Path, task: str = TASK, lib: str = LIBRARY) -> Path:
    (tmp_path / "lib.yaml").write_text(lib)
    path = tmp_path / "task.yaml"
    path.write_text(task)
    return path


def test_subtrees_expand_with_remapped_shared_and_private_keys(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert check_file(path, skills=example_skills()).report.problems == []
    neutral = neutral_form(path, skills=example_skills())
    first, second = (p["tree"] for p in neutral["phases"][:2])
    assert first["name"] == "grab" and second["name"] == "again"
    assert first["children"][1] == {"type": "skill_action", "skill": "grasp", "name": "close",
                                    "inputs": {"object_id": "thing"}, "snapshot": "plan",
                                    "output": "cmd"}
    assert second["children"][0]["record"] == "again.plan"  # private to this use
    assert second["children"][1]["inputs"] == {"object_id": "again.object"}
    assert second["children"][2]["command"] == "again.cmd"
    assert neutral["blackboard"] == {"again.object": "cup", "thing": "cup"}
    assert neutral["phases"][0]["transitions"][1] == {"event": "failed",
                                                      "target": "aborted_slow",
                                                      "guard": "slow"}


def test_the_expanded_task_runs(tmp_path: Path) -> None:
    task = load_task(write(tmp_path), skills=example_skills())
    clock = FakeClock()
    runner = TaskRunner(task, bridge=example_runtime(clock), clock=clock,
                        skills=example_skills(), run_id="r")
    result = runner.run(max_ticks=400)
    assert (result.outcome, result.reason) == ("succeeded", "done")
    assert runner.blackboard["again.cmd"] == "r/second.1/again/close#1"


def test_a_spec_with_subtrees_and_includes_round_trips_through_yaml(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path), skills=example_skills())
    (tmp_path / "again.yaml").write_text(dump_yaml(spec))
    assert load_spec(tmp_path / "again.yaml", skills=example_skills()) == spec


def problems(tmp_path: Path, task: str, lib: str = LIBRARY) -> list[str]:
    path = write(tmp_path, task, lib)
    return [str(p).replace(f"{tmp_path}/", "")
            for p in check_file(path, skills=example_skills()).report]


def test_misused_subtrees_and_includes_are_named(tmp_path: Path) -> None:
    task = TASK.replace("{subtree: grasp_it, name: grab, remap: {object: thing}}",
                        "{subtree: grasp_ti, name: grab}")
    assert problems(tmp_path, task)[0] == (
        "task.yaml:6:21: error UNKNOWN_SUBTREE: unknown subtree 'grasp_ti'; known: grasp_it; did "
        "you mean 'grasp_it'? (at phases[0].tree.subtree); fix: define it under 'subtrees:' or "
        "include the file that does")
    task = TASK.replace("remap: {object: thing}", "remap: {objekt: thing}")
    found = problems(tmp_path, task)
    assert "task.yaml:6:51: warning UNUSED_REMAP: subtree 'grasp_it' names no blackboard key " \
           "'objekt' (at phases[0].tree.remap.objekt)" in found[0]
    assert "lib.yaml:10:57: error BLACKBOARD_NEVER_WRITTEN: blackboard key 'object' is read by " \
           "skill_action 'close' (inputs) but nothing writes it (via subtree 'grasp_it' used at " \
           "task.yaml:6:11)" in found[1]
    assert problems(tmp_path, TASK.replace("lib.yaml", "nope.yaml"))[0].startswith(
        "task.yaml:2:12: error INCLUDE_NOT_FOUND: included file 'nope.yaml' does not exist")
    cyclic = LIBRARY.replace("description: shared trees", "includes: [lib.yaml]")
    assert problems(tmp_path, TASK, cyclic)[0].startswith(
        "lib.yaml:1:12: error INCLUDE_CYCLE: include 'lib.yaml' closes a cycle")
    looped = LIBRARY + "  loop:\n    {subtree: loop}\n"
    task = TASK.replace("{subtree: grasp_it, name: grab, remap: {object: thing}}",
                        "{subtree: loop}")
    assert any(p.startswith("lib.yaml:13:15: error SUBTREE_CYCLE: subtree 'loop' uses itself: "
                            "loop -> loop") for p in problems(tmp_path, task, looped))
    twice = TASK.replace("blackboard:", "subtrees:\n  grasp_it: {type: success, name: s}\n"
                         "guards: {slow: 'bb.x'}\nblackboard:")
    found = problems(tmp_path, twice)
    assert "lib.yaml:5:3: error DUPLICATE_SUBTREE: subtree 'grasp_it' is defined twice (first " \
           "at task.yaml:4:3)" in found[-1]
    assert "lib.yaml:3:3: error DUPLICATE_GUARD: guard 'slow' is defined twice (first at " \
           "task.yaml:5:10)" in found[-2]
    bad_guard = LIBRARY.replace("outcome.reason == 'NO_PROGRESS'", "outcome.reason = 1")
    assert "lib.yaml:3:9: error INVALID_EXPRESSION: guard 'slow': unexpected character '=' at " \
           "column 16" in problems(tmp_path, TASK, bad_guard)[0]
    unused = TASK.replace("blackboard:", "subtrees:\n  spare: {type: success, name: s}\n"
                          "blackboard:")
    assert problems(tmp_path, unused) == [
        "task.yaml:4:3: warning UNUSED_SUBTREE: subtree 'spare' is defined but no phase uses it "
        "(at subtrees.spare); fix: use it with '{subtree: spare}' or remove it"]


def test_python_guards_by_name_are_checked_and_used(tmp_path: Path) -> None:
    task = TASK.replace("guard: slow", "guard: ready")
    assert "unknown guard 'ready'; known: slow" in problems(tmp_path, task)[0]
    def ready(ctx: object) -> bool:
        return False

    path = write(tmp_path, task)
    assert check_file(path, skills=example_skills(), guards={"ready": ready}).report.ok
    built = load_task(path, skills=example_skills(), guards={"ready": ready})
    first = built.specs["first"]
    assert [t.guard for t in first.transitions][1] is ready
