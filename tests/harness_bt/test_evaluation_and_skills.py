"""Evaluators judge from observations with evidence; skill contracts validate themselves."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import BaseModel

from harness_bt import DefinitionError, EvaluationResult, EvaluatorRegistry, Skill, SkillRegistry
from harness_bt.evaluation import combine
from harness_bt.ledger import Verdict
from harness_bt.runtime.observation import EePose, Observation
from harness_bt.skill import Lifecycle, Postcondition, validate_params
from harness_bt.world import ObjectUpdate, Pose, Relation, WorldModel


def obs(t: int, width: float = 0.07, ee: tuple[float, float, float] = (0.5, 0.0, 0.1)
        ) -> Observation:
    joints = np.array([0, 0, 0, 0, 0, 0, 0, width / 2, width / 2])
    return Observation(cameras={}, joint_positions=joints,
                       ee_poses=(EePose(np.array(ee), np.array([1.0, 0, 0, 0])),),
                       instruction="", timestep=t, reset=False)


def world_with_cup(t: int, **kw: object) -> WorldModel:
    w = WorldModel()
    w.update([ObjectUpdate("cup", Pose((0.5, 0.0, 0.05)), camera="front", **kw)],  # type: ignore[arg-type]
             now=1.0, timestep=t)
    return w


HELD = Postcondition("object_held", {"object_id": "cup"})


def test_object_held_is_three_valued_with_evidence() -> None:
    reg = EvaluatorRegistry()
    held = world_with_cup(5, relations={Relation.HELD_BY: "gripper"})
    res = reg.evaluate([HELD], obs(5), held.view(1.0))
    assert res.verdict is Verdict.SUCCEEDED and "cup held_by gripper" in res.evidence
    res = reg.evaluate([HELD], obs(5, width=0.0), world_with_cup(5).view(1.0))
    assert res.verdict is Verdict.FAILED and "gripper width 0.0000 m" in res.evidence
    res = reg.evaluate([HELD], obs(6), held.view(1.0))  # not seen in *this* observation
    assert res.verdict is Verdict.UNKNOWN and "not seen in observation t=6" in res.evidence[0]
    occluded = world_with_cup(5, confidence=0.2, relations={Relation.HELD_BY: "gripper"})
    res = reg.evaluate([HELD], obs(5), occluded.view(1.0))
    assert res.verdict is Verdict.UNKNOWN and "occluded?" in res.evidence[0]
    res = reg.evaluate([HELD], obs(5, width=0.0), held.view(1.0))
    assert res.verdict is Verdict.UNKNOWN  # the two sources disagree


def test_ee_at_combine_and_broken_evaluators() -> None:
    reg = EvaluatorRegistry()
    at = Postcondition("ee_at", {"target": [0.5, 0.0, 0.1], "tolerance_m": 0.01})
    w = WorldModel().view(0.0)
    assert reg.evaluate([at], obs(1), w).verdict is Verdict.SUCCEEDED
    assert reg.evaluate([at], obs(1, ee=(0.6, 0, 0.1)), w).verdict is Verdict.FAILED
    assert combine([EvaluationResult.succeeded("a"), EvaluationResult.unknown("b")]).verdict \
        is Verdict.UNKNOWN
    assert combine([EvaluationResult.unknown("a"), EvaluationResult.failed("b")]).evidence == (
        "a", "b")
    assert combine([]).verdict is Verdict.UNKNOWN
    reg.register("boom", lambda p, o, w: 1 / 0)
    res = reg.evaluate([Postcondition("boom")], obs(1), w)
    assert res.verdict is Verdict.UNKNOWN and "ZeroDivisionError" in res.evidence[0]
    with pytest.raises(DefinitionError, match=r"unknown evaluator 'ee_att'.*did you mean 'ee_at'"):
        reg.evaluate([Postcondition("ee_att")], obs(1), w)
    with pytest.raises(DefinitionError, match="needs param 'target'"):
        reg.evaluate([Postcondition("ee_at")], obs(1), w)
    with pytest.raises(DefinitionError, match="not CANCELED"):
        EvaluationResult(Verdict.CANCELED)


class P(BaseModel):
    x_m: float


def test_skills_validate_their_definition_and_params() -> None:
    with pytest.raises(DefinitionError, match="start_within_ms=0 must be a positive"):
        Skill("go", P, lifecycle=Lifecycle(start_within_ms=0))
    with pytest.raises(DefinitionError, match="name a resource twice"):
        Skill("go", P, resources=("arm", "arm"))
    go = Skill("go", P, resources=("base",))
    model, problems = validate_params(go, {"x_m": "far"})
    assert model is None and problems[0].field == "params.x_m"
    assert problems[0].code == "INVALID_PARAMS" and problems[0].value == "far"
    reg = SkillRegistry([go])
    with pytest.raises(DefinitionError, match="DUPLICATE_REGISTRATION"):
        reg.add(go)
    with pytest.raises(DefinitionError, match="calls itself 'go'"):
        reg.register("drive", go)
    with pytest.raises(DefinitionError, match="does not implement SkillContract"):
        reg.register("x", object())  # type: ignore[arg-type]
