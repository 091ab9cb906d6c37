"""One plug-in mechanism: every extension point is an entry-point group loaded into a
per-instance registry. Two skills packages installed side by side both run; a name offered by
two packages is refused with both named; a task is checked, before it runs, for a contract of
every skill it uses and an executor for it in the runtime that will run it."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from harness_bt import Final, Phase, SkillRegistry, Task, TaskRunner, on
from harness_bt.authoring.neutral import new_task
from harness_bt.errors import DefinitionError
from harness_bt.plugins import Group, Origin, Registry, load_group
from harness_bt.run.episodes import run_episodes
from harness_bt.run.settings import RunnerSettings
from harness_bt.runtime.episodes import RunOptions
from harness_bt.runtime.executor import ExecutorRegistry
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.inproc import InProcRuntime

#: A skills package of its own: the contract ``wave`` (harness side) and its executor (runtime
#: side), written against the seams module only.
WAVING = '''
from harness_bt.seams import (ActionPart, EvaluationResult, ExecutorStatus, ExecutorStep,
                              Lifecycle, Postcondition, Skill)

WAVE = Skill("wave", resources=("arm",), lifecycle=Lifecycle(start_within_ms=2_000),
             postconditions=lambda params: [Postcondition("hand_still")],
             description="wave the hand: up and down five times, then hold it still")


def hand_still(postcondition, observation, world):
    """The hand is seen (its fingers are measured) in this observation."""
    if observation.gripper_width is None:
        return EvaluationResult.unknown("no finger positions in this observation")
    return EvaluationResult.succeeded(f"hand seen at t={observation.timestep}")


class WaveExecutor:
    """Moves the hand up and down, one control step each way, five times."""

    def __init__(self, command):
        self.command = command
        self.steps = 0
        self.stopping = False

    def step(self, observation):
        self.steps += 1
        if self.stopping:
            return ExecutorStep(ExecutorStatus.STOPPED)
        if self.steps > 10:
            return ExecutorStep(ExecutorStatus.CONTROL_DONE, progress=0.0)
        dz = 0.002 if self.steps % 2 else -0.002
        return ExecutorStep(ExecutorStatus.RUNNING, ActionPart(arm=(0, 0, dz, 1, 0, 0, 0)),
                            progress=float(10 - self.steps))

    def request_stop(self):
        self.stopping = True
'''


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[Callable[..., Path]]:
    """``install(dist, module, source, {group: {name: "module:attr"}})``: a package on
    ``sys.path`` with a dist-info of its own, as ``pip install`` would leave it."""
    modules: list[str] = []

    def make(dist: str, module: str, source: str,
             entry_points: Mapping[str, Mapping[str, str]]) -> Path:
        root = tmp_path / dist
        root.mkdir()
        (root / f"{module}.py").write_text(textwrap.dedent(source))
        info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in names.items())
            for group, names in entry_points.items()))
        monkeypatch.syspath_prepend(str(root))
        importlib.invalidate_caches()
        modules.append(module)
        return root

    yield make
    for module in modules:
        sys.modules.pop(module, None)


def waving_task() -> Task:
    """Home the arm (a skill of the built-in ``skills`` package), then wave (another
    package's), each judged by its own package's evaluator."""
    return new_task("home_and_wave", [
        Phase("work", {"type": "sequence", "name": "both", "children": [
            {"type": "act_and_evaluate", "name": "home", "skill": "home"},
            {"type": "act_and_evaluate", "name": "wave", "skill": "wave"}]},
            transitions=[on("succeeded", "done"), on("failed", "aborted_work")]),
        Final("done"), Final("aborted_work")])


def test_two_skills_packages_installed_side_by_side_both_run(install) -> None:  # type: ignore[no-untyped-def]
    install("waving-skills", "waving", WAVING, {
        str(Group.SKILLS): {"wave": "waving:WAVE"},
        str(Group.EXECUTORS): {"wave": "waving:WaveExecutor"},
        str(Group.EVALUATORS): {"hand_still": "waving:hand_still"}})
    skills = SkillRegistry(entry_points=True)
    executors = ExecutorRegistry(entry_points=True)
    assert {"home", "grasp", "wave"} <= set(skills.names())
    assert skills.origin("wave") == Origin("entry point waving:WAVE", "waving-skills")
    assert skills.origin("home").package == "harness-bt"
    assert {"home", "wave"} <= set(executors.names())
    runtime = InProcRuntime(KinematicBackend(), executors)
    try:
        assert runtime.start_episode() is not None
        runner = TaskRunner(
            waving_task(),
            bridge=runtime,
            clock=runtime.clock,
            skills=skills,
            run_id="r",
            settings=RunnerSettings(tick_period_s=runtime.control_period_s),
        )
        result = runner.run(max_ticks=2000)
        runner.close()
    finally:
        runtime.close()
    assert (result.outcome, result.reason) == ("succeeded", "done")
    assert {cid.split("/")[-1]: state for cid, state in result.commands.items()} == {
        "home.act#1": "SUCCEEDED", "wave.act#1": "SUCCEEDED"}
    verdicts = [e["data"]["evidence"] for e in runner.trace.of_kind("verdict")]
    assert any("hand seen at t=" in str(v) for v in verdicts)  # judged by its own evaluator


def test_a_skill_offered_by_two_packages_is_refused_naming_both(install) -> None:  # type: ignore[no-untyped-def]
    install("rogue-skills", "rogue", "from skills.contracts import GRASP\n",
            {str(Group.SKILLS): {"grasp": "rogue:GRASP"}})
    with pytest.raises(DefinitionError) as err:
        SkillRegistry(entry_points=True)
    assert err.value.code == "DUPLICATE_REGISTRATION"
    assert "skill 'grasp' is offered twice: by entry point " in err.value.message
    assert "of package 'harness-bt'" in err.value.message
    assert "entry point rogue:GRASP of package 'rogue-skills'" in err.value.message


def test_a_plug_in_may_not_take_a_built_in_name() -> None:
    registry: Registry[object] = Registry("evaluator")
    registry.register("grasped", object(), origin=Origin("built in (harness_bt.evaluation)"))
    with pytest.raises(DefinitionError, match=r"evaluator 'grasped' is offered twice: by built "
                       r"in \(harness_bt.evaluation\) and by entry point skills.evaluators:"
                       r"grasped of package 'harness-bt'"):
        load_group(Group.EVALUATORS, registry)


def test_a_plug_in_that_fails_to_import_names_its_package(install) -> None:  # type: ignore[no-untyped-def]
    install("broken-skills", "broken", "raise ImportError('numpy is too old')\n",
            {str(Group.NODES): {"wobble": "broken:WOBBLE"}})
    with pytest.raises(DefinitionError) as err:
        load_group(Group.NODES, Registry("node type"))
    assert err.value.code == "ENTRY_POINT_FAILED"
    assert "node type 'wobble' (entry point broken:WOBBLE of package 'broken-skills'" \
        in err.value.message
    assert err.value.fix == "reinstall package 'broken-skills', or uninstall it"
    seen: list[DefinitionError] = []
    assert load_group(Group.NODES, Registry("node type"), on_error=seen.append) == []
    assert [e.code for e in seen] == ["ENTRY_POINT_FAILED"]


def test_a_task_whose_skill_the_runtime_cannot_run_is_refused_before_it_starts(install) -> None:  # type: ignore[no-untyped-def]
    install("waving-contracts", "waving", WAVING, {str(Group.SKILLS): {"wave": "waving:WAVE"}})
    runtime = InProcRuntime(KinematicBackend(), ExecutorRegistry(entry_points=True))
    try:
        with pytest.raises(DefinitionError) as err:
            run_episodes(waving_task(), RunOptions(task="home_and_wave", perception="colour"),
                         runtime=runtime)
    finally:
        runtime.close()
    assert err.value.code == "NO_EXECUTOR"
    assert "task 'home_and_wave' uses skill 'wave', which this runtime cannot execute" \
        in err.value.message
    assert "its contract comes from package 'waving-contracts'" in err.value.message
    assert runtime.steps == 0  # refused before the first step
