"""Faults in the results store and the report: each episode's faults are recorded and read
back; a store of the previous schema is migrated (its episodes' faults are "not recorded",
never "none"); the report has a column per fault kind (fired / recovered) and a line that
says when asked-for faults never fired."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness_bt.errors import DefinitionError
from harness_bt.eval.html import report_html
from harness_bt.eval.plan import EpisodeSpec
from harness_bt.eval.report import build_report
from harness_bt.eval.store import COLUMNS, SCHEMA_VERSION, ResultsStore
from harness_bt.testing.eval_rigs import quick_episode

SLIP = {"kind": "slip", "timestep": 84, "sim_time_s": 2.8, "phase": "grasp",
        "node": "grasp/raise", "command": "r/grasp.1/grasp/raise#1", "skill": "lift",
        "details": {"object": "red_cube", "steps": 8},
        "response": {"kind": "recovery", "node": "held/again", "after_s": 0.9},
        "recovered": True, "tolerated": False}
NUDGE = {**SLIP, "kind": "nudge", "timestep": 30, "response": None, "recovered": False,
         "tolerated": True}


def row(seed: int, faults: list[dict[str, Any]] | None, *, condition: str = "slip=0.3",
        asked: dict[str, float] | None = None) -> dict[str, Any]:
    spec = EpisodeSpec(task="pick", task_file="/t/pick.yaml", digest="d-pick",
                       condition=condition, seed=seed)
    out = quick_episode(spec)
    out.update(faults=faults, faults_asked={"slip": 0.3} if asked is None else asked,
               faults_note=None if faults else "asked slip=0.3; none fired in this episode")
    return out


def test_the_store_keeps_each_episodes_faults(tmp_path: Path) -> None:
    with ResultsStore.in_dir(tmp_path) as store:
        store.record(row(1, [SLIP, NUDGE]))
        store.record(row(2, []))
    with ResultsStore.in_dir(tmp_path) as again:
        first, second = again.rows()
    assert (first["faults"], first["faults_asked"], first["faults_note"]) == (
        [SLIP, NUDGE], {"slip": 0.3}, None)
    assert (second["faults"], second["faults_note"]) == (
        [], "asked slip=0.3; none fired in this episode")


def _version_1_store(path: Path) -> None:
    v1 = {k: v for k, v in COLUMNS.items() if k not in ("faults", "faults_asked",
                                                          "faults_note")}
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute(f"CREATE TABLE episodes ({', '.join(f'{k} {t}' for k, t in v1.items())}, "
               "PRIMARY KEY (digest, condition, episode))")
    old = {k: v for k, v in row(7, None).items() if k in v1}
    old.update(attempts=1, recorded_at=5.0, phase_times="{}")
    db.execute(f"INSERT INTO episodes ({', '.join(old)}) VALUES "
               f"({', '.join('?' for _ in old)})", list(old.values()))
    db.commit()
    db.close()


def test_a_store_of_schema_1_is_migrated_and_its_episodes_faults_read_as_not_recorded(
        tmp_path: Path) -> None:
    _version_1_store(tmp_path / "results.sqlite")
    with ResultsStore.in_dir(tmp_path) as store:
        store.record(row(8, [SLIP]))
        old, new = store.rows()
    assert (old["episode"], old["faults"], old["faults_asked"]) == ("7", None, None)
    assert (new["episode"], new["faults"]) == ("8", [SLIP])
    db = sqlite3.connect(tmp_path / "results.sqlite")
    assert db.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
    db.close()
    report = build_report([old, new], title="t")
    (entry,) = report["faults"]
    assert (entry["episodes"], entry["recorded"]) == (2, 1)
    assert entry["line"].endswith("1 episode(s) recorded without faults (an older store)")


def test_a_store_of_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "results.sqlite")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    db.commit()
    db.close()
    with pytest.raises(DefinitionError, match="has schema version 3; this harness writes "
                       "version 2") as err:
        ResultsStore.in_dir(tmp_path)
    assert err.value.code == "STORE_VERSION"


def test_the_report_counts_faults_per_kind_and_says_when_asked_for_ones_never_fired() -> None:
    rows = [row(1, [SLIP, NUDGE], asked={"slip": 0.3, "nudge": 0.3}),
            row(2, [SLIP], asked={"slip": 0.3, "nudge": 0.3}),
            row(3, [], asked={"slip": 0.3, "nudge": 0.3}),
            row(4, [], condition="clean", asked={})]
    report = build_report(rows, title="faults")
    clean, slip = report["faults"]
    assert (clean["condition"], clean["kinds"], clean["line"]) == (
        "clean", {}, "pick clean: no fault asked for or fired")
    assert slip["asked"] == {"slip": 0.3, "nudge": 0.3}
    assert slip["kinds"] == {
        "nudge": {"fired": 1, "recovered": 0, "tolerated": 1, "episodes": 1},
        "slip": {"fired": 2, "recovered": 2, "tolerated": 0, "episodes": 2}}
    assert slip["none_fired"] == 1
    assert slip["line"] == (
        "pick slip=0.3: nudge: 1 fired in 1 of 3 episodes, 0 recovered, 1 tolerated; slip: 2 "
        "fired in 2 of 3 episodes, 2 recovered, 0 tolerated; 1 episode(s) saw none of the "
        "faults asked for")
    page = report_html(report)
    assert "<h2>Injected faults</h2>" in page
    assert "<th>nudge: fired / recovered</th><th>slip: fired / recovered</th>" in page
    assert "<td class='n'>1 / 0</td><td class='n'>2 / 2</td><td class='n'>1 of 3</td>" in page
    assert "no fault asked for or fired" not in page  # a condition without faults is left out


def test_a_run_that_asked_for_faults_and_saw_none_says_so_in_the_report() -> None:
    report = build_report([row(1, []), row(2, [])], title="t")
    (entry,) = report["faults"]
    assert entry["line"] == "pick slip=0.3: asked slip=0.3; no fault fired in any episode"
    assert "<td class='n'>2 of 2</td>" in report_html(report)


def test_a_migration_another_driver_finished_first_is_not_done_twice(tmp_path: Path) -> None:
    _version_1_store(tmp_path / "results.sqlite")
    with ResultsStore.in_dir(tmp_path) as first, ResultsStore.in_dir(tmp_path) as second:
        # the second driver read version 1 before the first one's migration committed
        second._migrate(1)
        assert [r["episode"] for r in first.rows()] == ["7"]
        assert second.record(row(9, [SLIP])) is True
