"""The results store: a row per episode, written once, read back as written; a corrupt or
foreign file is refused with a fix."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness_bt.errors import DefinitionError
from harness_bt.eval.plan import EpisodeKey, EpisodeSpec, condition_label, task_digest
from harness_bt.eval.store import ResultsStore
from harness_bt.testing.eval_rigs import quick_episode


def spec(seed: int, task: str = "pick") -> EpisodeSpec:
    return EpisodeSpec(task=task, task_file=f"/t/{task}.yaml", digest=f"d-{task}",
                       condition="clean", seed=seed)


def test_a_recorded_episode_is_recorded_once(tmp_path: Path) -> None:
    with ResultsStore.in_dir(tmp_path, clock=lambda: 100.0) as store:
        assert store.record(quick_episode(spec(1)), attempts=1) is True
        second = {**quick_episode(spec(1)), "outcome": "aborted"}
        assert store.record(second, attempts=2) is False
        assert store.count() == 1
        (row,) = store.rows()
    assert (row["outcome"], row["attempts"], row["recorded_at"]) == ("succeeded", 1, 100.0)
    assert row["phase_times"] == {"evaluate": 0.5, "grasp": 1.5}
    assert (row["sim_success"], row["false_success"], row["unknown"]) == (True, False, False)


def test_the_store_survives_its_process_and_says_what_it_has(tmp_path: Path) -> None:
    with ResultsStore.in_dir(tmp_path) as store:
        for seed in (3, 1, 2):
            store.record(quick_episode(spec(seed)))
        store.record(quick_episode(spec(1, task="place")))
    with ResultsStore.in_dir(tmp_path) as again:
        assert again.recorded() == {EpisodeKey("d-pick", "clean", "1"),
                                    EpisodeKey("d-pick", "clean", "2"),
                                    EpisodeKey("d-pick", "clean", "3"),
                                    EpisodeKey("d-place", "clean", "1")}
        assert [r["seed"] for r in again.rows(digests=["d-pick"])] == [1, 2, 3]
        assert [r["task"] for r in again.rows(condition="clean")] == [
            "pick", "pick", "pick", "place"]
        assert again.rows(condition="slip=0.3") == []


def test_a_corrupt_store_is_refused_with_a_fix(tmp_path: Path) -> None:
    (tmp_path / "results.sqlite").write_bytes(b"this is not a database, " * 100)
    with pytest.raises(DefinitionError) as err:
        ResultsStore.in_dir(tmp_path)
    assert err.value.code == "STORE_CORRUPT"
    assert "cannot be read: file is not a database" in str(err.value)
    assert "move it aside" in str(err.value)


def test_a_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "results.sqlite")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    db.commit()
    db.close()
    with pytest.raises(DefinitionError, match="has schema version 99; this harness writes "
                       "version 2") as err:
        ResultsStore.in_dir(tmp_path)
    assert err.value.code == "STORE_VERSION"


def test_a_row_without_its_outcome_is_refused(tmp_path: Path) -> None:
    row = quick_episode(spec(1))
    del row["outcome"]
    with ResultsStore.in_dir(tmp_path) as store, pytest.raises(DefinitionError,
                                                               match="lacks a field"):
        store.record(row)


def test_the_digest_covers_the_included_documents(tmp_path: Path) -> None:
    (tmp_path / "steps.yaml").write_text("subtrees: {}\n")
    task = tmp_path / "t.yaml"
    task.write_text("name: t\nincludes: [steps.yaml]\n")
    before = task_digest(task)
    (tmp_path / "steps.yaml").write_text("subtrees: {a: 1}\n")
    assert task_digest(task) != before
    assert len(before) == 64


def test_a_condition_is_named_by_its_parameters_and_faults() -> None:
    assert condition_label({}, {}) == "clean"
    assert condition_label({"target": "green_cube"}, {"slip": 0.3, "nudge": 0.25}) == \
        "target=green_cube nudge=0.25,slip=0.3"


def test_a_spec_crosses_the_process_boundary_as_json_unchanged() -> None:
    import orjson

    s = EpisodeSpec(task="pick", task_file="/t/pick.yaml", digest="d", condition="c", seed=4,
                    scene="pick_cube", params={"target": "red_cube"}, faults={"slip": 0.3},
                    extra={"num_steps": 300})
    assert EpisodeSpec.from_dict(orjson.loads(orjson.dumps(s.to_dict()))) == s
