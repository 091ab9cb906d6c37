"""Episodes as Ray tasks on a real local Ray instance: the same per-seed outcomes as local
processes with one and two workers (the built-in simulator, real episodes), a worker killed
mid-episode rerun once; and without Ray, --ray says how to install it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.errors import DefinitionError
from harness_bt.eval.ray_pool import RayPool, import_ray
from harness_bt.eval.session import EvalConfig, run_evaluation
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # real episodes, processes or a notebook kernel

PICK = ROOT / "trees" / "pick_cube.yaml"
#: Hard faults and a short episode: seeds that need a recovery run out of steps (outcome
#: aborted, reason aborted_episode_ended), the others succeed; the simulator decides which.
HARD = {"slip": 0.5, "nudge": 0.5, "occlude": 0.3}


@pytest.fixture(autouse=True)
def keep_print(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever Ray does to ``builtins.print`` in this process ends with the test."""
    import builtins

    monkeypatch.setattr(builtins, "print", builtins.print)
    monkeypatch.setenv("RAY_TQDM_PATCH_PRINT", "0")


def outcomes(rows: list[dict]) -> dict[int, tuple[str, str, bool | None]]:
    return {r["seed"]: (r["outcome"], r["reason"], r["sim_success"]) for r in rows}


@pytest.mark.timeout(900)  # six real episodes and a Ray start on a shared 2-core machine
def test_the_same_seeds_give_the_same_outcomes_with_one_or_two_workers_and_ray(
        tmp_path: Path) -> None:
    def run(name: str, workers: int, ray: str | None = None) -> dict:
        config = EvalConfig(tasks=(PICK,), out=tmp_path / name, episodes=2, seed=2,
                            faults=HARD, workers=workers, ray=ray, traces=False,
                            extra={"num_steps": 140})
        return outcomes(run_evaluation(config).rows)

    one = run("one", 1)
    assert sorted(one) == [2, 3]
    assert {o for o, _, _ in one.values()} == {"succeeded", "aborted"}, one  # a real mix
    assert run("two", 2) == one
    assert run("ray", 2, ray="") == one


def test_a_ray_worker_killed_mid_episode_reruns_it_once(tmp_path: Path) -> None:
    config = EvalConfig(tasks=(PICK,), out=tmp_path / "out", episodes=3, seed=0, workers=2,
                        ray="", traces=False,
                        episode_fn="harness_bt.testing.eval_rigs:crashing_episode",
                        extra={"crash_once": [1], "crash_always": [2],
                               "marker_dir": str(tmp_path)})
    result = run_evaluation(config)
    assert {r["seed"]: (r["outcome"], r["attempts"]) for r in result.rows} == {
        0: ("aborted", 1), 1: ("succeeded", 2), 2: ("worker_crashed", 2)}
    assert (result.run.reruns, len(result.run.crashes)) == (2, 3)
    assert all("WorkerCrashedError" in c or "died" in c for c in result.run.crashes), \
        result.run.crashes


def test_without_ray_the_ray_option_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    with pytest.raises(DefinitionError) as err:
        import_ray()
    assert err.value.code == "RAY_MISSING"
    assert "pip install 'harness-bt[ray]'" in str(err.value)
    with pytest.raises(DefinitionError, match="RAY_MISSING"):
        RayPool(2)
    status = main(["eval", str(PICK), "--episodes", "1", "--ray", "--out", str(tmp_path)])
    assert status == 1
    err_text = capsys.readouterr().err
    assert "RAY_MISSING: --ray needs Ray" in err_text
    assert "harness-bt[ray]" in err_text


def test_an_unreachable_cluster_is_refused_with_a_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = import_ray()

    def refuse(**kwargs: object) -> None:
        raise ConnectionError(f"could not reach {kwargs.get('address')}")

    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(DefinitionError, match=r"RAY_UNREACHABLE: --ray 10\.0\.0\.9:6379: Ray "
                       r"did not start or connect: could not reach 10\.0\.0\.9:6379") as err:
        RayPool(2, address="10.0.0.9:6379")
    assert "ray status" in str(err.value)
