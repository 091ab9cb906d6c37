"""``harness run --instruction`` and ``harness eval --instruction``: TASK and --instruction
are exclusive; a refusal is one clear error (and is traced); a chosen task runs with --set
over its bound parameters and the summary says what was chosen; an abort is planned again,
each run with its own trace."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness_bt.cli import main
from harness_bt.trace import TraceReader
from tests.harness_bt.planner.model_server import Content, model_server

ROOT = Path(__file__).resolve().parents[3]
TREES = ROOT / "trees"


@pytest.fixture(autouse=True)
def _no_planner_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_PLANNER_URL", raising=False)
    monkeypatch.delenv("HARNESS_PLANNER_API_KEY", raising=False)


@pytest.mark.parametrize(("command", "args", "message"), [
    ("run", [str(TREES / "pick.yaml"), "--instruction", "pick up the red cube"],
     "INVALID_OPTION: both a TASK"),
    ("run", [], "INVALID_OPTION: nothing to run: no TASK and no --instruction"),
    ("run", ["--instruction", "  "], "INVALID_OPTION: --instruction is empty"),
    ("eval", [str(TREES / "pick.yaml"), "--instruction", "pick up the red cube"],
     "INVALID_OPTION: both a TASK"),
    ("run", ["--instruction", "pick up the red cube", "--journal", "j.db"],
     "--journal with --instruction"),
    ("run", ["--instruction", "pick up the red cube", "--planner", "gpt"],
     "unknown planner 'gpt'; known: meaning, openai, templates"),
    ("run", ["--instruction", "pick up the red cube", "--planner", "openai"],
     "PLANNER_NOT_CONFIGURED: planner 'openai' has no endpoint"),
    ("run", ["--instruction", "pick up the red cube", "--library", "nowhere"],
     "LIBRARY_NOT_FOUND: no task library at 'nowhere'"),
])
def test_mistakes_are_refused_before_anything_runs(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        command: str, args: list[str], message: str) -> None:
    monkeypatch.chdir(ROOT)
    assert main([command, *args]) == 1
    assert message in capfd.readouterr().err


def test_an_impossible_instruction_is_refused_and_traced(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)
    trace = tmp_path / "paint.jsonl"
    assert main(["run", "--instruction", "paint the table", "--trace", str(trace)]) == 1
    err = capfd.readouterr().err
    assert "error: PLAN_NO_MATCH: planner 'meaning' gave no plan for 'paint the table'" in err
    assert "stack: 'put the {top} on the {bottom}'" in err
    (event,) = TraceReader.open(trace).of_kind("planner")
    assert event["data"]["refusal"]["code"] == "PLAN_NO_MATCH"


def test_an_ambiguous_instruction_asks_which_one(capfd: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["eval", "--instruction", "put the cube on the cube"]) == 1
    err = capfd.readouterr().err
    assert "PLAN_AMBIGUOUS" in err and "stack (top=red_cube, bottom=green_cube)" in err


def test_a_model_answer_naming_an_unknown_object_is_refused_from_the_command_line(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    with model_server() as server:
        server.answers.append(Content(json.dumps({"task": "pick", "params": {
            "target": "teapot"}, "refusal": None})))
        code = main(["run", "--instruction", "pick up the teapot", "--planner", "openai",
                     "--planner-url", server.url, "--planner-model", "tiny",
                     "--planner-timeout", "5"])
    assert code == 1
    err = capfd.readouterr().err
    assert "PLAN_INVALID: planner 'openai' gave no plan for 'pick up the teapot': parameter " \
           "'target' of pick names object 'teapot', which is not in scene pick_cube" in err


def run_json(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--json"])
    captured = capfd.readouterr()
    return code, json.loads(captured.out)


@pytest.mark.slow
def test_the_chosen_task_runs_with_set_over_its_bound_params(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.chdir(ROOT)
    trace = tmp_path / "grab.jsonl"
    code, report = run_json(capfd, "--instruction", "Grab the blue cube!", "--set",
                            "target=green_cube", "--seed", "5", "--trace", str(trace))
    assert code == 0 and report["episodes"][0]["succeeded"]
    assert report["params"]["target"] == "green_cube"  # --set wins
    (call,) = report["planning"]["calls"]
    assert call["plan"]["task"] == "pick" and call["plan"]["params"] == {"target": "blue_cube"}
    kinds = [e["kind"] for e in TraceReader.open(trace).events[:3]]
    assert kinds == ["task", "run_start", "planner"]


def short_library(tmp_path: Path) -> Path:
    """pick alone, with a budget that runs out at once (an abort to plan again after)."""
    library = tmp_path / "lib"
    library.mkdir()
    shutil.copy(TREES / "steps.yaml", library)
    text = (TREES / "pick.yaml").read_text()
    short = text.replace("budget: {max_retries: 8, max_time_s: 25.0}",
                         "budget: {max_retries: 8, max_time_s: 0.5}")
    assert short != text
    (library / "pick.yaml").write_text(short)
    return library


@pytest.mark.slow
def test_an_abort_is_planned_again_and_each_run_has_its_trace(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    library = short_library(tmp_path)
    trace = tmp_path / "t.jsonl"
    code, report = run_json(capfd, "--instruction", "pick up the red cube", "--library",
                            str(library), "--trace", str(trace), "--replans", "1")
    assert code == 1
    runs = report["planning"]["runs"]
    assert [r["outcome"] for r in runs] == [["aborted_budget_exhausted"]] * 2
    assert [c["call"] for c in report["planning"]["calls"]] == [0, 1]
    first = TraceReader.open(trace).of_kind("planner")
    second = TraceReader.open(tmp_path / "t.replan1.jsonl").of_kind("planner")
    assert [e["data"]["call"] for e in first + second] == [0, 1]
    assert first[0]["data"]["prompt_digest"] != second[0]["data"]["prompt_digest"]


@pytest.mark.slow
def test_the_model_is_asked_again_with_the_abort_and_its_refusal_is_traced(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    library = short_library(tmp_path)
    trace = tmp_path / "m.jsonl"
    with model_server() as server:
        server.answers += [
            Content(json.dumps({"task": "pick", "params": {"target": "green_cube"},
                                "refusal": None})),
            Content(json.dumps({"task": None, "params": None,
                                "refusal": "the budget is too small for any pick"}))]
        code, report = run_json(capfd, "--instruction", "pick up the green cube",
                                "--library", str(library), "--trace", str(trace),
                                "--planner", "openai", "--planner-url", server.url,
                                "--planner-model", "tiny", "--planner-timeout", "5")
    assert code == 1
    assert report["params"] == {"target": "green_cube"}
    first, again = (r["messages"][1]["content"] for r in server.requests)
    assert "Earlier attempts" not in first
    assert "Earlier attempts, which ended without success" in again
    assert '"reason": "aborted_budget_exhausted"' in again
    planner = TraceReader.open(trace).of_kind("planner")
    assert [e["data"]["call"] for e in planner] == [0, 1]
    assert json.loads(planner[0]["data"]["answer"])["object"] == "chat.completion"  # raw
    assert planner[1]["data"]["refusal"]["code"] == "PLAN_MODEL_REFUSED"
