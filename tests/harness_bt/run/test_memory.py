"""World memory across a resume: the world model (objects, poses, versions, when each was seen)
and the blackboard values made from it are checkpointed with the run and restored by a resumed
run; remembered objects are re-checked against fresh observations, and an object no camera sees
any more is found from memory. The process "dies" here by dropping every object unclosed (the
SIGKILL tests are in tests/harness_bt/cli/test_resume_memory.py)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness_bt import FakeClock, Ledger, TaskRunner
from harness_bt.errors import DefinitionError
from harness_bt.ledger import CommandState
from harness_bt.nodes import Check, Observe
from harness_bt.nodes.poses import DerivedPose
from harness_bt.run import memory
from harness_bt.run.checkpoint import NO_MEMORY, check_memory, forget_world
from harness_bt.run.resume import open_durable
from harness_bt.run.run_record import RunCheckpoint, RunHeader, RunRecord, file_digest
from harness_bt.run.settings import RunParts
from harness_bt.testing import FakeRuntime, Script
from harness_bt.testing.example import (
    TRAY,
    example_runtime,
    example_skills,
    fetch_cup_task,
    grasp_effect,
)
from harness_bt.world import ObjectUpdate, Pose, Relation, WorldModel, WorldSnapshot
from tests.harness_bt.helpers import one_phase, run_to_end

CLOSE = "r1/grasp.1/pick/steps/close#1"
PUT = "r1/place.1/put/put.act#1"


def header(path: Path) -> RunHeader:
    """A run of the example task, started from a task file beside ``path``."""
    task = path.parent / "task.yaml"
    task.write_text("name: fetch_cup\n")
    return RunHeader(task_file=str(task), task_digest=file_digest(task),
                     task_name="fetch_cup", run_id="r1", bridge="fake")


def runner_on(path: Path, clock: FakeClock, rt: FakeRuntime, *, resume: RunCheckpoint | None
              = None) -> tuple[TaskRunner, Ledger, RunRecord]:
    record = RunRecord.open(path) if path.exists() else RunRecord.create(path, header(path))
    ledger = Ledger.open(path, wall_clock=clock.wall, now=clock.monotonic())
    runner = TaskRunner(fetch_cup_task(), bridge=rt, clock=clock, skills=example_skills(),
                        run_id="r1", parts=RunParts(ledger=ledger, run_record=record,
                                                    resume=resume))
    return runner, ledger, record


def killed_while(path: Path, clock: FakeClock, rt: FakeRuntime, until: str,
                 state: CommandState) -> None:
    """Run until ``until`` is in ``state``, then drop everything unclosed (a SIGKILL)."""
    runner, ledger, record = runner_on(path, clock, rt)
    while not (until in ledger and ledger.get(until).state is state):
        runner.tick()
        clock.advance(0.05)
        assert runner.phase == "running", runner.result
    runner.close()
    ledger.close()
    record.close()


def hide(oid: str) -> Any:
    """No camera sees ``oid`` any more (it is still there)."""
    return lambda scene: scene.objects.pop(oid)


def resumed(path: Path, clock: FakeClock, rt: FakeRuntime, *, forget: bool = False
            ) -> tuple[TaskRunner, Ledger, RunRecord]:
    durable = open_durable(path, forget=forget)  # what harness resume [--forget-world] does
    cp = durable.checkpoint
    durable.close()
    return runner_on(path, clock, rt, resume=cp)


def hidden_tray_run(tmp_path: Path, *, forget: bool) -> tuple[TaskRunner, FakeRuntime]:
    """The example seen whole, the tray hidden from every camera while the evaluation runs,
    the harness killed there, the tray still hidden when it is resumed."""
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    killed_while(path, clock, rt, CLOSE, CommandState.RUNNING)
    hide("tray")(rt.scene)
    clock.advance(2.0)  # dead for 2 s; the grasp finishes meanwhile
    runner, ledger, record = resumed(path, clock, rt, forget=forget)
    run_to_end(runner, clock)
    ledger.close()
    record.close()
    return runner, rt


def test_a_resumed_run_places_on_a_tray_no_camera_sees_any_more_from_memory(
        tmp_path: Path) -> None:
    runner, rt = hidden_tray_run(tmp_path, forget=False)
    res = runner.result
    assert res is not None and (res.outcome, res.reason) == ("succeeded", "done")
    (put,) = [c for c in rt.received if c.skill == "place"]
    assert put.params["target"] == list(TRAY)  # where the tray was seen before the crash
    assert put.premises == {"tray": 1}  # the version it had: the premise still holds
    world = runner.trace.of_kind("resume")[0]["data"]["world"]
    assert world == {"restored": True, "version": 1, "objects": {"cup": 1, "tray": 1}}
    tray = runner.world.get("tray")
    assert tray is not None and tray.provenance.remembered  # never seen since
    assert runner.world.get("cup") is not None and \
        not runner.world.get("cup").provenance.remembered  # type: ignore[union-attr]
    assert rt.starts == {"navigate": 1, "align": 1, "approach": 1, "grasp": 1, "place": 1}


def test_without_the_world_memory_the_resumed_run_cannot_find_the_hidden_tray(
        tmp_path: Path) -> None:
    runner, rt = hidden_tray_run(tmp_path, forget=True)
    res = runner.result
    assert res is not None and (res.outcome, res.reason) == ("aborted", "aborted_place")
    failures = [e["data"]["outcome"] for e in runner.trace.of_kind("outcome")
                if e["data"]["phase"] == "place"]
    assert failures[0]["reason"] == "UNKNOWN_OBJECT" and "place" not in rt.starts
    world = runner.trace.of_kind("resume")[0]["data"]["world"]
    assert world["objects"] == {} and world["version"] == 1
    assert world["forgotten"] == "harness resume --forget-world: every object is observed again"
    assert runner.world.get("tray") is None
    # the cup, seen again, is newer than anything planned before the crash
    assert runner.world.get("cup").version > 1  # type: ignore[union-attr]


def test_an_object_seen_again_keeps_its_version_where_it_was_and_gets_a_new_one_if_it_moved(
        tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    killed_while(path, clock, rt, CLOSE, CommandState.RUNNING)
    rt.scene.move("tray", [TRAY[0] + 0.1, TRAY[1], TRAY[2]])  # moved while nobody watched
    runner, ledger, record = resumed(path, clock, rt)
    assert runner.world.objects() == []  # restored on the first tick, before its poll
    runner.tick()
    cup, tray = runner.world.get("cup"), runner.world.get("tray")
    assert cup is not None and tray is not None
    assert not cup.provenance.remembered and not tray.provenance.remembered  # both seen again
    assert tray.version == runner.world.version == 2  # re-checked: moved, a new version
    changes = [e["data"]["changed"] for e in runner.trace.of_kind("observation")]
    assert changes[0] == {"tray": "moved 0.100 m"}  # the cup did not move: no new version
    assert runner.world.premise_check_versions({"tray": 1}) == (
        "premises changed since planning: tray changed: version 1 -> 2")
    run_to_end(runner, clock)
    (put,) = [c for c in rt.received if c.skill == "place"]
    assert put.params["target"][0] == pytest.approx(TRAY[0] + 0.1)  # planned on the new pose
    ledger.close()
    record.close()


def test_a_remembered_object_is_as_old_as_it_really_is_and_check_finds_it_stale(
        tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    killed_while(path, clock, rt, CLOSE, CommandState.RUNNING)
    with RunRecord.open(path) as record:
        cp = record.latest()
    assert cp is not None and cp.world is not None
    seen = {o["id"]: o["seen_wall"] for o in cp.world["objects"]}
    clock.advance(30.0)  # the harness was dead for 30 s
    world = WorldModel()
    restored = memory.recall(world, cp.world, now=clock.monotonic(), wall=clock.wall(),
                             where="here")
    assert restored["objects"] == {"cup": 1, "tray": 1}
    assert world.age("tray", clock.monotonic()) == pytest.approx(clock.wall() - seen["tray"])
    assert world.age("tray", clock.monotonic()) > 30.0
    tray = world.get("tray")
    assert tray is not None and tray.provenance.remembered and tray.version == 1
    assert tray.relations == {Relation.ON: "table"}
    runner = TaskRunner(one_phase(lambda: Check("fresh", ["tray"], max_age_s=1.0)),
                        bridge=FakeRuntime(clock, observe=False), clock=clock,
                        skills=example_skills(), parts=RunParts(world=world))
    runner.tick()
    (outcome,) = runner.trace.of_kind("outcome")
    assert outcome["data"]["outcome"]["reason"] == "STALE"


def looking_for_a_remembered_box(*, observe: bool) -> tuple[TaskRunner, FakeClock]:
    """An observe leaf for a box a resumed run remembers and no camera shows; the runtime
    sends observations (of a scene without the box) when ``observe``."""
    clock = FakeClock()
    world = WorldModel()
    world.update([ObjectUpdate("box", Pose((0.5, 0.0, 0.1)))], now=0.0)
    data = memory.remember(world, now=0.0, wall=clock.wall())
    later = WorldModel()
    memory.recall(later, data, now=clock.monotonic(), wall=clock.wall(), where="here")
    runner = TaskRunner(one_phase(lambda: Observe("look", ["box"], record="plan", timeout_s=1.0)),
                        bridge=FakeRuntime(clock, observe=observe), clock=clock,
                        skills=example_skills(), parts=RunParts(world=later))
    for _ in range(20):  # 0.95 s: still looking for a sighting
        runner.tick()
        clock.advance(0.05)
    assert runner.status_map() == {"work": {"look": "RUNNING"}}
    runner.tick()  # 1.0 s: the timeout
    return runner, clock


def test_observe_falls_back_on_a_remembered_object_at_its_timeout() -> None:
    runner, _ = looking_for_a_remembered_box(observe=True)
    assert [e["data"]["event"] for e in runner.trace.of_kind("outcome")] == ["succeeded.work"]
    plan = runner.blackboard["plan"]
    assert isinstance(plan, WorldSnapshot) and plan.premises() == {"box": 1}
    assert plan.to_dict()["objects"]["box"]["remembered"] is True


def test_observe_does_not_trust_memory_without_an_observation_since_it_started() -> None:
    runner, _ = looking_for_a_remembered_box(observe=False)
    (outcome,) = [e["data"]["outcome"] for e in runner.trace.of_kind("outcome")]
    assert (outcome["kind"], outcome["reason"]) == ("failed", "NOT_OBSERVED")
    assert outcome["details"]["missing"] == {"box": "no observation yet"}


def test_a_plan_and_a_derived_pose_survive_a_checkpoint() -> None:
    world = WorldModel()
    world.update([ObjectUpdate("box", Pose((0.5, 0.0, 0.1)), extent=(0.1, 0.1, 0.1),
                               camera="front", relations={Relation.ON: "table"})],
                 now=2.0, timestep=60)
    plan = world.snapshot(["box"], now=2.5)
    goal = DerivedPose((0.5, 0.1, 0.15, 1.0, 0.0, 0.0, 0.0), {"box": 1},
                       {"object": "box", "at": "current"})
    encoded = [json.loads(json.dumps(memory.encode_value(v, now=3.0, wall=103.0)))
               for v in (plan, goal)]
    back = [memory.decode_value(e, now=50.0, wall=110.0, where="here") for e in encoded]
    assert back[1] == goal
    snap = back[0]
    assert isinstance(snap, WorldSnapshot) and snap.version == plan.version
    assert snap.taken_at == pytest.approx(50.0 - 7.5)  # half a second before the checkpoint
    box = snap.objects["box"]
    assert box.provenance.remembered and box.provenance.observed_at == pytest.approx(42.0)
    assert dataclasses.replace(box.provenance, remembered=False, observed_at=2.0) == \
        plan.objects["box"].provenance
    assert dataclasses.replace(box, provenance=plan.objects["box"].provenance) == \
        plan.objects["box"]
    assert memory.encode_value(object(), now=0.0, wall=0.0) is None


def test_a_checkpoint_keeps_the_plan_instead_of_dropping_it(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    killed_while(path, clock, rt, PUT, CommandState.RUNNING)
    runner, ledger, record = resumed(path, clock, rt)
    cp = runner.resumed_from
    assert cp is not None and cp.configuration == ("deliver", "place")
    assert cp.dropped == () and set(cp.world_values) == {"plan"}
    runner.tick()
    plan = runner.blackboard["plan"]  # the pick phase's plan, back
    assert isinstance(plan, WorldSnapshot) and plan.premises() == {"cup": 1}
    writes = [e["data"]["key"] for e in runner.trace.of_kind("blackboard")
              if e["data"]["writer"] == "resume"]
    assert "plan" in writes
    runner.close()
    ledger.close()
    record.close()


# ---------------------------------------------------------------------- bad or old data


def checkpoint_with(tmp_path: Path, change: Any) -> Path:
    """A journaled run killed mid-grasp whose last checkpoint ``change`` edits (as JSON)."""
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    killed_while(path, clock, rt, PUT, CommandState.RUNNING)
    with sqlite3.connect(path) as db:
        seq, body = db.execute("SELECT seq, body FROM run_checkpoints ORDER BY seq DESC "
                               "LIMIT 1").fetchone()
        data = json.loads(body)
        change(data)
        db.execute("UPDATE run_checkpoints SET body=? WHERE seq=?", (json.dumps(data), seq))
    return path


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["world"].update(format=7), r"world\.format: 7: this harness-bt reads world "
     r"memory of format 1"),
    (lambda d: d["world"]["objects"][0].update(pose=[0, 0]), r"world\.objects\[0\]\.pose: "
     r"\[0, 0\] is not a list of 7 numbers"),
    (lambda d: d["world"]["objects"][1].update(version="1"), r"world\.objects\[1\]\.version: "
     r"'1' is not an integer"),
    (lambda d: d["world_values"]["plan"].update({"$type": "pickle"}), r"blackboard key "
     r"'plan': the world memory does not check out: value\.\$type: 'pickle' is not "
     r"world_snapshot or derived_pose"),
])
def test_world_memory_that_does_not_check_out_is_refused_before_anything_runs(
        tmp_path: Path, change: Any, message: str) -> None:
    path = checkpoint_with(tmp_path, change)
    with pytest.raises(DefinitionError, match=r"WORLD_MEMORY_INVALID: .*run\.db: checkpoint "
                       rf"\d+.*{message}.*--forget-world") as info:
        open_durable(path)
    assert info.value.fix is not None and "--forget-world" in info.value.fix
    durable = open_durable(path, forget=True)  # the way out it names
    assert durable.checkpoint is not None and durable.checkpoint.world_values == {}
    assert durable.checkpoint.world is not None and durable.checkpoint.world["objects"] == []
    durable.close()


def test_a_checkpoint_from_before_world_memory_resumes_with_an_empty_world_and_says_so(
        tmp_path: Path) -> None:
    def old(data: dict[str, Any]) -> None:  # what a harness-bt before world memory wrote
        del data["world"], data["world_values"]
        data["dropped"] = ["plan"]

    path = checkpoint_with(tmp_path, old)
    durable = open_durable(path)
    cp = durable.checkpoint
    durable.close()
    assert cp is not None and cp.world is None and cp.dropped == ("plan",)
    check_memory(cp, "here")  # nothing to check: not an error
    clock = FakeClock(100.0)
    runner, ledger, record = runner_on(path, clock, example_runtime(clock), resume=cp)
    runner.tick()
    world = runner.trace.of_kind("resume")[0]["data"]["world"]
    assert world == {"restored": False, "why": NO_MEMORY}
    runner.close()
    ledger.close()
    record.close()


def test_forgetting_the_world_keeps_its_version_and_drops_what_was_made_from_it() -> None:
    cp = RunCheckpoint(configuration=("a",), activations={}, blackboard={}, retries_used=0,
                       counters={}, plan_version=0, visited=(), epoch=0, elapsed_s=0.0,
                       ticks=0, dropped=("other",),
                       world={"format": 1, "version": 9, "objects": [{"id": "x"}]},
                       world_values={"plan": {}})
    out = forget_world(cp, "asked to")
    assert out.world == {"format": 1, "version": 9, "objects": [], "forgotten": "asked to"}
    assert (out.world_values, out.dropped) == ({}, ("other", "plan"))


def test_an_object_first_seen_after_the_last_checkpoint_is_remembered_at_once(
        tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    runner, ledger, record = runner_on(path, clock, rt)
    while runner.configuration[:1] != ("pick",):
        runner.tick()
        clock.advance(0.05)
    seq = record.latest().seq  # type: ignore[union-attr]
    rt.scene.set("lid", pose=[0.7, 0.0, 0.05])  # comes into view mid-phase
    runner.tick()  # no transition: no checkpoint, but the world memory is written now
    cp = record.latest()
    assert cp is not None and cp.seq == seq
    assert {o["id"] for o in cp.world["objects"]} == {"cup", "tray", "lid"}  # type: ignore[index]
    clock.advance(0.05)
    runner.tick()
    cp = record.latest()
    assert cp is not None and cp.world is not None
    assert {o["id"]: o["version"] for o in cp.world["objects"]}["lid"] == 2
    runner.close()
    ledger.close()
    record.close()


def test_an_unreadable_world_memory_is_refused_and_forget_world_resumes_without_it(
        tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    runner, ledger, record = runner_on(path, clock, rt)
    for _ in range(30):  # a second and a half: the world memory is rewritten once
        runner.tick()
        clock.advance(0.05)
    runner.close()
    ledger.close()
    record.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM run_meta WHERE key='world'").fetchone() == (1,)
        db.execute("UPDATE run_meta SET value='{torn' WHERE key='world'")
    with pytest.raises(DefinitionError, match=r"WORLD_MEMORY_INVALID: .*run\.db: checkpoint "
                       r"\d+: the world memory does not check out: world: cannot be read: "
                       r"JSONDecodeError"):
        open_durable(path)
    durable = open_durable(path, forget=True)
    assert durable.checkpoint is not None and durable.checkpoint.world is not None
    assert durable.checkpoint.world["objects"] == []
    durable.close()


def test_a_derived_pose_on_the_blackboard_is_back_after_a_resume(tmp_path: Path) -> None:
    clock = FakeClock()
    rt = example_runtime(clock, grasps=[Script(duration_s=0.5, effect=grasp_effect)])
    path = tmp_path / "run.db"
    runner, ledger, record = runner_on(path, clock, rt)
    goal = DerivedPose((0.5, 0.4, 0.1, 1.0, 0.0, 0.0, 0.0), {},
                       {"object": "tray", "at": "sighting"})
    runner.tick()
    runner.blackboard.set("goal", goal, writer="test")  # as a derive_pose leaf writes it
    while "pick" not in runner.configuration:  # a transition: a checkpoint keeps it
        clock.advance(0.05)
        runner.tick()
    runner.close()
    ledger.close()
    record.close()  # killed

    runner, ledger, record = resumed(path, clock, rt)
    assert runner.resumed_from is not None and "goal" not in runner.resumed_from.dropped
    runner.tick()
    assert runner.blackboard["goal"] == goal
    runner.close()
    ledger.close()
    record.close()
