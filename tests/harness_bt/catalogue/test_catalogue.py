"""The catalogue describes any params model and any skill contract: ranges, choices, units and
defaults from the model; postconditions by asking the contract, one choice at a time; whether
the evaluator and the executor are there."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness_bt.catalogue.entries import node_entries, skill_entries
from harness_bt.evaluation import EvaluatorRegistry
from harness_bt.nodes import NodeRegistry
from harness_bt.runtime.executor import ExecutorRegistry
from harness_bt.skill import Postcondition, Skill, SkillRegistry
from harness_bt.skill_params import describe_params, signature, unit_of


class SweepParams(BaseModel):
    """Sweep the table."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    area: str = Field(min_length=1)
    passes: int = Field(2, ge=1, lt=10)
    speed_mps: float = Field(0.1, gt=0.0, le=0.5, description="hand speed")
    pattern: Literal["lines", "spiral"] = "lines"
    careful: bool = False
    settle_s: float = 0.5


def _post(p: SweepParams) -> list[Postcondition]:
    out = [Postcondition("swept", {"area": p.area})]
    if p.pattern == "spiral":
        out.append(Postcondition("centre_clear"))
    if p.careful:
        out.append(Postcondition("nothing_fell"))
    return out


SWEEP = Skill("sweep", SweepParams, resources=("arm",), postconditions=_post,
              description="sweep an area of the table")


def test_params_are_described_with_types_ranges_choices_units_and_defaults() -> None:
    described = {p.name: p for p in describe_params(SweepParams)}
    assert described["area"].required and described["area"].length_text() == "non-empty"
    assert (described["passes"].range_text(), described["passes"].default) == ("[1, 10)", 2)
    speed = described["speed_mps"]
    assert (speed.range_text(), speed.unit, speed.description) == ("(0, 0.5]", "m/s",
                                                                   "hand speed")
    assert described["pattern"].choices == ("lines", "spiral")
    assert described["settle_s"].range_text() == "" and described["settle_s"].unit == "s"
    assert signature(SweepParams) == (
        "SweepParams(area: str (non-empty), passes: int = 2 (in [1, 10)), speed_mps: float = "
        "0.1 (in (0, 0.5] m/s), pattern: 'lines' | 'spiral' = 'lines', careful: bool = False, "
        "settle_s: float = 0.5 (s))")


def test_units_come_from_the_name() -> None:
    assert [unit_of(n) for n in ("height_m", "speed_rad_s", "timeout_ms", "yaw_rad", "count",
                                 "object_pose")] == ["m", "rad/s", "ms", "rad", "",
                                                     "m, + quaternion wxyz"]


def test_postconditions_are_found_one_choice_at_a_time_and_checked_against_the_registry(
        ) -> None:
    evaluators = EvaluatorRegistry(builtins=False)
    evaluators.register("swept", lambda post, obs, world: None)
    (entry,) = skill_entries(SkillRegistry([SWEEP]), evaluators=evaluators,
                             executors=ExecutorRegistry())
    found = {p.evaluator: (p.when, p.registered) for p in entry.postconditions}
    assert found == {"swept": ("", True), "centre_clear": ("pattern='spiral'", False),
                     "nothing_fell": ("careful=True", False)}
    assert entry.executor is None
    assert entry.source.origin == "code" and entry.source.package is None
    assert entry.to_dict()["evaluators"] == ["centre_clear", "nothing_fell", "swept"]


def test_a_skill_whose_params_cannot_be_sampled_says_so() -> None:
    class Odd(BaseModel):
        code: str = Field(pattern=r"^X\d{4}$")

    odd = Skill("odd", Odd, postconditions=lambda p: [Postcondition("x")])
    (entry,) = skill_entries(SkillRegistry([odd]))
    assert entry.postconditions == []
    assert entry.notes == ["postconditions depend on params this catalogue cannot sample"]


def test_internal_node_types_are_left_out_unless_asked() -> None:
    public = {e.name for e in node_entries(NodeRegistry())}
    every = {e.name: e.internal for e in node_entries(NodeRegistry(), internal=True)}
    assert set(every) - public == {"recovery_gate", "recovery_guard", "recovery_done",
                                   "running"}
    assert all(every[name] for name in set(every) - public)


def test_a_scene_that_does_not_load_is_listed_with_its_problems(tmp_path) -> None:
    from harness_bt.catalogue.scenes import scene_entries
    from harness_bt.plugins import Registry

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nobjects:\n  cube: {shape: sphere, size: 0.04}\n")
    registry: Registry[object] = Registry("scene")
    registry.register("bad", bad)
    registry.register("gone", tmp_path / "missing.yaml")
    entries = {e.name: e for e in scene_entries(registry)}
    assert entries["bad"].spec is None and entries["bad"].problems
    assert "shape" in entries["bad"].problems[0]
    assert entries["bad"].success_text() == "(does not load)"
    assert entries["gone"].to_dict()["problems"]
