"""``harness validate`` and ``harness schema`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_bt.authoring.schema import BUILTIN_SCHEMA
from harness_bt.cli import main
from harness_bt.testing.example_spec import FETCH_CUP_YAML

SKILLS = ["--skills", "harness_bt.testing.example:example_skills"]


def test_validate_prints_ok_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(FETCH_CUP_YAML), *SKILLS]) == 0
    assert capsys.readouterr().out == f"{FETCH_CUP_YAML}: OK (fetch_cup: 15 phases)\n"


def test_validate_lists_every_problem_and_exits_1(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(FETCH_CUP_YAML.read_text().replace("skill: navigate", "skill: navigat")
                   .replace("target: deliver", "target: delivr"))
    assert main(["validate", str(FETCH_CUP_YAML), str(bad), *SKILLS]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{FETCH_CUP_YAML}: OK (fetch_cup: 15 phases)"
    assert out[1].startswith(f"{bad}:10:53: error UNKNOWN_SKILL: unknown skill 'navigat'")
    assert out[2].startswith(f"{bad}:49:40: error UNKNOWN_TARGET: phase 'grasp': transition on "
                             "'succeeded' targets unknown phase 'delivr'")
    # one mistake, one error: 'deliver', which 'delivr' meant, and the phases after it are
    # not reported unreachable
    assert out[3:] == [f"{bad}: 2 error(s), 0 warning(s)"]


def test_validate_strict_fails_on_warnings(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(FETCH_CUP_YAML.read_text().replace(
        "budget: {max_retries: 6, max_time_s: 60.0}", "budget: {max_retries: 0}"))
    assert main(["validate", str(path), *SKILLS]) == 0
    assert main(["validate", str(path), "--strict", *SKILLS]) == 1


def test_a_bad_skills_option_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(FETCH_CUP_YAML), "--skills", "nowhere"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "INVALID_REFERENCE: --skills 'nowhere' is not of the form package.module:attribute; " \
        "e.g. harness_bt.testing.example:example_skills" in err


def test_schema_writes_the_builtin_schema(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "schema.json"
    assert main(["schema", "--builtin", "-o", str(out)]) == 0
    assert out.read_text() == BUILTIN_SCHEMA.read_text()
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert main(["schema", *SKILLS]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "navigate" in schema["$defs"]["Node_skill_leaf"]["properties"]["skill"]["enum"]
    assert main(["schema", "--library", "--builtin"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "harness-bt task library"
