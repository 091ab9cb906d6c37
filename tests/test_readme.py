"""The README's orchestration example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_orchestration_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    (code,) = [b for b in blocks if "TaskRunner(" in b]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.startswith("succeeded done {")
    assert (tmp_path / "out" / "fetch.jsonl").stat().st_size > 0


def test_readme_task_file_passes_validation(tmp_path: Path) -> None:
    from harness_bt.spec import check_file
    from harness_bt.testing.example import example_skills

    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)
    (text,) = [b for b in blocks if "name: pick_cup" in b]
    path = tmp_path / "pick_cup.yaml"
    path.write_text(text)
    report = check_file(path, skills=example_skills()).report
    assert report.problems == [], report.render()


def test_readme_authoring_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    (code,) = [b for b in blocks if "build_task(" in b]
    monkeypatch.chdir(README.parent)
    scope: dict[str, object] = {"__name__": "readme"}
    exec(compile(code, str(README), "exec"), scope)
    assert str(scope["text"]).startswith("name: hello\n")
    assert scope["task"].name == "hello" and scope["same"].name == "fetch_cup"  # type: ignore[attr-defined]
