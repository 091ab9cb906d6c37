"""``harness compare DIR_A DIR_B`` compares two evaluation folders from their stores without
running an episode: paired by seed where the seeds match, unpaired where none does, saying
what differs; a mix of a folder and a task, a folder without a store, a corrupt, empty or
mixed store are refused with their fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_bt.cli import main
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.eval.store import ResultsStore
from harness_bt.testing.eval_rigs import quick_episode
from tests.conftest import ROOT

PICK = ROOT / "trees" / "pick_cube.yaml"


def folder(path: Path, seeds: range | list[int], *, task: str = "pick",
           digest: str = "a" * 64, condition: str = "clean", worse: bool = False,
           traces: bool = False) -> Path:
    """An evaluation folder as ``harness eval`` leaves it: the quick rig's rows in a store
    (``worse``: even seeds fail too), and a trace file per episode when asked."""
    with ResultsStore.in_dir(path, clock=lambda: 0.0) as store:
        for seed in seeds:
            spec = EpisodeSpec(task=task, task_file=f"{task}.yaml", digest=digest,
                               condition=condition, seed=seed,
                               extra={"worse": task} if worse else {})
            row: dict[str, Any] = quick_episode(spec)
            if traces:
                trace = path / "traces" / f"{task}.{seed}.jsonl"
                trace.parent.mkdir(exist_ok=True)
                trace.write_text("{}\n")
                row["trace"] = str(trace)
            store.record(row)
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out = capsys.readouterr()
    return status, out.out, " ".join(out.err.split())


def test_two_folders_of_the_same_seeds_are_paired_and_b_worse_fails_the_gate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = folder(tmp_path / "a", range(30))
    b = folder(tmp_path / "b", range(30), digest="b" * 64, worse=True)
    status, out, _ = run(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"),
                          "--json"], capsys)
    data = json.loads(out)
    assert status == 1
    assert {k: data[k] for k in ("n", "a_success", "b_success", "b_only", "a_only", "test",
                                 "a", "b")} == {
        "n": 30, "a_success": 20, "b_success": 10, "b_only": 0, "a_only": 10,
        "test": "exact McNemar (paired by seed)", "a": "pick", "b": "pick"}
    assert data["verdict"] == "B worse than A (p = 0.00195)"
    assert data["notes"] == [
        f"the task version differs: A pick (digest {'a' * 8}), B pick (digest {'b' * 8}): the "
        "file or a document it includes changed",
        "clean: paired by seed on 30 seed(s) (0..29)"]
    assert [(s["task"], s["n"], s["success_rate"]) for s in data["summary"]] == [
        ("A: pick", 30, 0.6667), ("B: pick", 30, 0.3333)]
    assert len(data["episodes"]) == 60
    assert not (tmp_path / "cmp" / "results.sqlite").exists()  # nothing ran, nothing stored
    assert "B worse than A (p = 0.00195)" in (tmp_path / "cmp" / "report.html").read_text()


def test_folders_whose_seeds_differ_are_compared_unpaired_and_say_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = folder(tmp_path / "a", range(0, 6))
    b = folder(tmp_path / "b", range(100, 106), task="pick_and_place", digest="b" * 64)
    status, out, _ = run(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")], capsys)
    assert status == 0
    assert f"note: the tasks differ: A pick (digest {'a' * 8}), B pick_and_place (digest " \
           f"{'b' * 8})" in out
    assert "note: clean: no seed in common (A 0..5; B 100..105): unpaired, Fisher's exact " \
           "test" in out
    assert "6 episodes of A and 6 of B, unpaired (clean): A pick 4/6, B pick_and_place 4/6; " \
           "Fisher exact p = 1" in out
    assert "verdict: no significant difference at alpha 0.05 (p = 1)" in out


def test_partly_shared_seeds_are_paired_and_the_rest_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = folder(tmp_path / "a", range(0, 4))
    b = folder(tmp_path / "b", range(2, 8), condition="slip=0.3", digest="b" * 64)
    status, out, _ = run(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"),
                          "--json"], capsys)
    data = json.loads(out)
    assert status == 0
    assert data["notes"][1:] == [
        "the conditions differ: A clean, B slip=0.3; compared as they are",
        "A clean / B slip=0.3: paired by seed on 2 seed(s) (2..3); without a partner, not in "
        "the test: 2 of A (0..1), 4 of B (4..7)"]
    assert (data["n"], data["a_success"], data["b_success"]) == (2, 1, 1)


def test_trace_links_point_into_each_folder_and_a_moved_folder_still_finds_its_traces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder(tmp_path / "old_a", range(3), traces=True)
    (tmp_path / "old_a").rename(tmp_path / "a")  # the store names traces under old_a
    b = folder(tmp_path / "b", range(3), digest="b" * 64, traces=True)
    (b / "traces" / "pick.1.jsonl").unlink()
    status, out, _ = run(["compare", str(tmp_path / "a"), str(b), "--out",
                          str(tmp_path / "cmp"), "--json"], capsys)
    assert status == 0
    links = {(e["task"], e["seed"]): (e["trace"], e["trace_status"])
             for e in json.loads(out)["episodes"]}
    assert links == {
        ("A: pick", 0): ("../a/traces/pick.0.jsonl", "kept"),
        ("A: pick", 1): ("../a/traces/pick.1.jsonl", "kept"),
        ("A: pick", 2): ("../a/traces/pick.2.jsonl", "kept"),
        ("B: pick", 0): ("../b/traces/pick.0.jsonl", "kept"),
        ("B: pick", 1): (None, "missing"),
        ("B: pick", 2): ("../b/traces/pick.2.jsonl", "kept")}
    assert "<a href='../a/traces/pick.0.jsonl'>trace</a>" in \
        (tmp_path / "cmp" / "report.html").read_text()


def test_a_folder_with_several_tasks_is_compared_on_the_one_task_asked_for(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = folder(tmp_path / "a", range(3))
    folder(a, range(3), task="pick_and_place", digest="c" * 64)
    b = folder(tmp_path / "b", range(3), digest="b" * 64)
    status, _, err = run(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")], capsys)
    assert status == 1
    assert (f"MIXED_STORE: {a} holds 2 task versions: pick (digest {'a' * 8}), "
            f"pick_and_place (digest {'c' * 8}); a folder comparison needs one") in err
    assert "pick one with --task NAME (one of pick, pick_and_place)" in err
    status, out, _ = run(["compare", str(a), str(b), "--task", "pick", "--out",
                          str(tmp_path / "cmp"), "--json"], capsys)
    assert status == 0 and json.loads(out)["n"] == 3
    status, _, err = run(["compare", str(a), str(b), "--task", "place", "--out",
                          str(tmp_path / "cmp")], capsys)
    assert status == 1
    assert f"UNKNOWN_TASK: {a} holds no episode of task 'place'; its tasks: pick, " \
           "pick_and_place" in err


def bad_folders(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    good = folder(tmp_path / "good", range(2))
    other = folder(tmp_path / "other", range(2), digest="b" * 64)
    bare = tmp_path / "bare"
    bare.mkdir()
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "results.sqlite").write_text("garbage " * 500)
    empty = tmp_path / "empty"
    ResultsStore.in_dir(empty).close()
    cmp_out = folder(tmp_path / "cmp_out", range(1))
    return {
        "mixed": ([str(good), str(PICK)], f"MIXED_ARGUMENTS: A ({good}) is an evaluation "
                  f"folder and B ({PICK}) is a task file"),
        "mixed, missing": ([str(tmp_path / "nope.yaml"), str(good)], "MIXED_ARGUMENTS: A "
                           f"({tmp_path / 'nope.yaml'}) is neither a folder nor a file and B "
                           f"({good}) is an evaluation folder"),
        "no store": ([str(good), str(bare)], f"NO_STORE: B ({bare}) is a folder without a "
                     "results store (results.sqlite)"),
        "corrupt": ([str(corrupt), str(good)], "STORE_CORRUPT: the results store "
                    f"{corrupt / 'results.sqlite'} cannot be read"),
        "empty": ([str(good), str(empty)], f"EMPTY_STORE: the results store in {empty} has "
                  "no episode"),
        "same": ([str(good), str(good)], f"A and B are the same folder ({good})"),
        "run options": ([str(good), str(other), "--episodes", "5", "--inject", "slip=0.2"],
                        "INVALID_OPTION: --episodes, --inject configure(s) episodes to run; "
                        "comparing two evaluation folders runs none"),
        "out is a store": ([str(good), str(other), "--out", str(cmp_out)],
                           f"INVALID_OPTION: --out {cmp_out} holds a results store"),
        "task with tasks": ([str(PICK), str(ROOT / "trees" / "pick.yaml"), "--task", "pick"],
                            "INVALID_OPTION: --task picks a task in evaluation folders"),
    }


def files(path: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in path.rglob("*")
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


@pytest.mark.parametrize("case", ["mixed", "mixed, missing", "no store", "corrupt", "empty", "same",
                                  "run options", "out is a store", "task with tasks"])
def test_a_comparison_of_folders_that_cannot_be_made_is_refused_with_its_fix(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, message = bad_folders(tmp_path)[case]
    before = files(tmp_path)
    out = [] if "--out" in argv else ["--out", str(tmp_path / "cmp")]
    status, _, err = run(["compare", *argv, *out], capsys)
    assert status == 1
    assert message in err
    assert files(tmp_path) == before  # nothing written (SQLite's -wal and -shm aside)
