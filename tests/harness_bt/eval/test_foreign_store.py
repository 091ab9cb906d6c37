"""A foreign SQLite file at the results path is refused untouched, by the store and by
``harness eval --out DIR``; an empty file and a store of ours are used."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.errors import DefinitionError
from harness_bt.eval.store import ResultsStore
from tests.conftest import ROOT

PICK = ROOT / "trees" / "pick_cube.yaml"


def foreign(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT, password TEXT)")
        db.execute("INSERT INTO users VALUES ('ada', 'secret')")
    return path


def tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return sorted(r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"))


def test_a_foreign_sqlite_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = foreign(tmp_path / "results.sqlite")
    with pytest.raises(DefinitionError) as err:
        ResultsStore(path)
    assert err.value.code == "FOREIGN_STORE"
    assert "is an SQLite file of something else (tables: users)" in str(err.value)
    assert "point --out at a directory of its own" in str(err.value)
    assert tables(path) == ["users"]


def test_an_empty_file_and_our_own_store_are_used(tmp_path: Path) -> None:
    (tmp_path / "results.sqlite").write_bytes(b"")
    with ResultsStore.in_dir(tmp_path) as store:
        assert store.recorded() == set()
    with ResultsStore.in_dir(tmp_path) as again:  # ours now: opened, not refused
        assert again.recorded() == set()
    assert tables(tmp_path / "results.sqlite") == ["episodes", "meta"]


def test_harness_eval_refuses_to_write_into_a_foreign_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    foreign(tmp_path / "results.sqlite")
    status = main(["eval", str(PICK), "--episodes", "1", "--out", str(tmp_path)])
    err = " ".join(capsys.readouterr().err.split())
    assert status == 1
    assert "FOREIGN_STORE" in err and "left untouched" in err
    assert tables(tmp_path / "results.sqlite") == ["users"]
