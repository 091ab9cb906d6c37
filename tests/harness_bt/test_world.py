"""The world model: versions move only on plan-relevant changes; premises object by object."""

from __future__ import annotations

import numpy as np
import pytest

from harness_bt import DefinitionError, WorldModel
from harness_bt.ledger import Command
from harness_bt.runtime.observation import Observation
from harness_bt.world import ObjectUpdate, Pose, Relation, scripted_perception


def up(oid: str = "cup", x: float = 0.5, **kw: object) -> ObjectUpdate:
    return ObjectUpdate(oid, pose=Pose((x, 0.0, 0.05)), camera="front", **kw)  # type: ignore[arg-type]


def cmd(premises: dict[str, int]) -> Command:
    return Command(command_id="c", skill="grasp", start_within_ms=100, execution_timeout_ms=100,
                   premises=premises)


def test_new_frames_of_the_same_scene_refresh_freshness_and_move_no_version() -> None:
    w = WorldModel(position_tolerance_m=0.01)
    first = w.update([up()], now=0.0, timestep=1)
    assert (first.version, first.changed, first.reasons) == (1, ("cup",), {"cup": "appeared"})
    again = w.update([up(x=0.505)], now=0.5, timestep=2)
    assert (again.version, again.changed, again.refreshed) == (1, (), ("cup",))
    obj = w.get("cup")
    assert obj is not None and obj.version == 1 and obj.provenance.timestep == 2
    assert w.age("cup", 1.0) == pytest.approx(0.5) and w.fresh("cup", 1.0, 0.6)
    assert w.age("mug", 1.0) == float("inf")


def test_slow_drift_adds_up_against_the_pose_at_the_current_version() -> None:
    w = WorldModel(position_tolerance_m=0.01)
    w.update([up(x=0.500)], now=0.0)
    for i, x in enumerate((0.506, 0.509), 1):
        assert w.update([up(x=x)], now=float(i)).changed == ()
    moved = w.update([up(x=0.512)], now=3.0)
    assert moved.changed == ("cup",) and moved.reasons["cup"].startswith("moved 0.012")
    assert w.get("cup").version == 2  # type: ignore[union-attr]


def test_relations_confidence_and_removal_are_plan_relevant() -> None:
    w = WorldModel()
    w.update([up(), up("tray", x=0.8)], now=0.0)
    assert w.version == 1
    rel = w.update([up(relations={Relation.ON: "tray"})], now=0.1)
    assert rel.reasons == {"cup": "on -> tray"} and w.related("cup", "on") == "tray"
    lost = w.update([up(confidence=0.2, relations={})], now=0.2)
    assert lost.reasons == {"cup": "lost"}
    cleared = w.update([up(confidence=0.9, relations={Relation.ON: None})], now=0.3)
    assert cleared.reasons["cup"] == "on -> None" and w.related("cup", "on") is None
    gone = w.update([ObjectUpdate("tray", removed=True)], now=0.4)
    assert gone.reasons == {"tray": "removed"} and "tray" not in w
    assert w.version == 5


def test_premises_are_checked_object_by_object() -> None:
    w = WorldModel()
    w.update([up(), up("tray", x=0.8)], now=0.0)
    plan = w.premises(["cup", "mug"])
    assert plan == {"cup": 1, "mug": -1}
    w.update([up("tray", x=0.9)], now=0.1)  # the tray moved: irrelevant to a cup plan
    assert w.version == 2 and w.premise_check(cmd(plan)) is None
    w.update([up(x=0.6)], now=0.2)
    assert w.premise_check(cmd(plan)) == ("premises changed since planning: cup changed: "
                                          "version 1 -> 3")
    w.update([ObjectUpdate("cup", removed=True)], now=0.3)
    assert "cup is gone" in str(w.premise_check(cmd({"cup": 3})))


def test_reset_observation_forgets_everything() -> None:
    w = WorldModel()
    obs = Observation(cameras={}, joint_positions=np.zeros(9), ee_poses=(), instruction="",
                      timestep=1, reset=False, extras={"objects": [
                          {"id": "cup", "pose": [0.5, 0, 0.05], "relations": {"on": "table"},
                           "confidence": 0.9, "camera": "front"}]})
    first = w.observe(obs, scripted_perception(obs), now=0.0)
    assert first.changed == ("cup",) and w.latest_observation is obs
    fresh = Observation(cameras={}, joint_positions=np.zeros(9), ee_poses=(), instruction="",
                        timestep=0, reset=True)
    change = w.observe(fresh, [], now=1.0)
    assert change.reasons == {"cup": "reset"} and w.objects() == [] and w.version == 2


def test_scripted_perception_reads_extras_and_bad_settings_are_refused() -> None:
    obs = Observation(cameras={}, joint_positions=np.zeros(9), ee_poses=(), instruction="",
                      timestep=3, reset=False, extras={"objects": [
                          {"id": "cup", "pose": [0.5, 0, 0.05, 1, 0, 0, 0],
                           "relations": {"held_by": "gripper", "on": None}}]})
    (u,) = scripted_perception(obs)
    assert u.pose == Pose((0.5, 0.0, 0.05), (1.0, 0.0, 0.0, 0.0))
    assert u.relations == {Relation.HELD_BY: "gripper", Relation.ON: None}
    with pytest.raises(DefinitionError, match="min_confidence=2"):
        WorldModel(min_confidence=2)
    with pytest.raises(DefinitionError, match="a pose needs 3 or 7 numbers"):
        Pose.of([1, 2])
