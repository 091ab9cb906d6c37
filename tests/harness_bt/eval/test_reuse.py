"""Pointing ``--out`` at an existing results store is said aloud (how many episodes are reused,
which are new, of which task, digest and condition) in the text and the JSON; a store of
another evaluation (another task, task version, ``--set`` value or fault) is refused unless
``--reuse``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.eval.plan import task_digest
from harness_bt.eval.reuse import seed_ranges
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # real episodes, processes or a notebook kernel

PICK = ROOT / "trees" / "pick_cube.yaml"
QUICK = ["--episode-fn", "harness_bt.testing.eval_rigs:quick_episode"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out = capsys.readouterr()
    return status, out.out, " ".join(out.err.split())


def stored(out: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(out / "results.sqlite") as db:
        return sorted(db.execute("SELECT condition, episode FROM episodes").fetchall())


def test_seed_ranges_are_compact() -> None:
    assert seed_ranges(["0", "1", "2", "7", "9", "10"]) == "0..2, 7, 9..10"
    assert seed_ranges(["w0.e0", "w1.e0"]) == "w0.e0, w1.e0"


def test_a_rerun_says_which_episodes_it_reuses_and_which_are_new(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    digest = task_digest(PICK)[:8]
    argv = ["eval", str(PICK), "--out", str(tmp_path), *QUICK]
    assert run([*argv, "--episodes", "3"], capsys)[0] == 0
    status, out, err = run([*argv, "--episodes", "5"], capsys)
    assert status == 0
    said = [f"results store {tmp_path / 'results.sqlite'}: exists; reusing 3 recorded "
            f"episode(s): 3 of pick_cube (digest {digest}, clean) seeds 0..2",
            f"new: 2 episode(s): 2 of pick_cube (digest {digest}, clean) seeds 3..4"]
    assert " ".join(said) in err  # before anything runs
    assert "\n".join(said) in out  # and in the report
    status, out, _ = run([*argv, "--episodes", "5", "--json"], capsys)
    reuse = json.loads(out)["reuse"]
    assert {k: reuse[k] for k in ("existed", "reused", "new")} == {
        "existed": True, "reused": 5, "new": 0}
    assert reuse["reused_versions"] == [{"task": "pick_cube", "digest": task_digest(PICK),
                                         "condition": "clean", "count": 5,
                                         "episodes": "0..4"}]
    assert reuse["lines"][1] == "new: none"
    assert json.loads((tmp_path / "report.json").read_text())["reuse"] == reuse


def test_a_store_of_other_parameters_is_refused_unless_reuse_is_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    digest = task_digest(PICK)[:8]
    argv = ["eval", str(PICK), "--episodes", "2", "--out", str(tmp_path), *QUICK]
    assert run(argv, capsys)[0] == 0
    status, _, err = run([*argv, "--inject", "slip=0.3"], capsys)
    assert status == 1
    assert (f"STORE_MISMATCH: the results store {tmp_path / 'results.sqlite'} holds another "
            f"evaluation's episodes: 2 of pick_cube (digest {digest}, clean) seeds 0..1; this "
            f"evaluation is pick_cube (digest {digest}, slip=0.3); point --out at a new "
            "folder, or pass --reuse") in err
    assert stored(tmp_path) == [("clean", "0"), ("clean", "1")]  # nothing written
    status, out, _ = run([*argv, "--inject", "slip=0.3", "--reuse", "--json"], capsys)
    assert status == 0
    data = json.loads(out)
    assert data["reuse"]["lines"][2] == (
        f"kept in the store, not in this report (--reuse): 2 of pick_cube (digest {digest}, "
        "clean) seeds 0..1")
    assert [(e["condition"], e["seed"]) for e in data["episodes"]] == [
        ("slip=0.3", 0), ("slip=0.3", 1)]
    assert len(stored(tmp_path)) == 4


def test_an_edited_task_is_a_new_version_and_its_old_store_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = tmp_path / "pick_cube.yaml"
    task.write_text(PICK.read_text())
    (tmp_path / "steps.yaml").write_text((ROOT / "trees" / "steps.yaml").read_text())
    out = tmp_path / "out"
    argv = ["eval", str(task), "--episodes", "2", "--out", str(out), *QUICK]
    assert run(argv, capsys)[0] == 0
    old = task_digest(task)[:8]
    task.write_text(PICK.read_text() + "# edited\n")
    status, _, err = run(argv, capsys)
    assert status == 1
    assert (f"holds another evaluation's episodes: 2 of pick_cube (digest {old}, clean) seeds "
            f"0..1; this evaluation is pick_cube (digest {task_digest(task)[:8]}, clean)") in err


def test_a_comparison_of_tasks_says_what_it_reuses_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = tmp_path / "pick_b.yaml"
    b.write_text(PICK.read_text() + "# version B\n")
    (tmp_path / "steps.yaml").write_text((ROOT / "trees" / "steps.yaml").read_text())
    argv = ["compare", str(PICK), str(b), "--episodes", "2", "--out", str(tmp_path / "o"),
            "--json", *QUICK]
    assert run(argv, capsys)[0] == 0
    status, out, _ = run(argv, capsys)
    reuse = json.loads(out)["reuse"]
    assert (status, reuse["reused"], reuse["new"]) == (0, 4, 0)
    assert [v["task"] for v in reuse["reused_versions"]] == sorted(["pick_cube", "pick_b"])
