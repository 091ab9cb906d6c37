"""Help and error text: a flag is shown as a flag (no ``<bool>`` as if it took a value), and
an error is printed whole, never hard-wrapped at 80 columns in the middle of a word."""

from __future__ import annotations

import pytest

from harness_bt.cli import main


def option_lines(text: str, *names: str) -> list[str]:
    return [line for line in text.splitlines() if any(f" {n} " in line for n in names)]


@pytest.mark.parametrize(("argv", "flags"), [
    (["--help"], ["--version", "--help"]),
    (["run", "--help"], ["--json", "--help"]),
    (["validate", "--help"], ["--strict"]),
    (["sim", "serve", "--help"], ["--shm"]),
])
def test_help_shows_flags_without_a_value_type(capsys: pytest.CaptureFixture[str],
                                               argv: list[str], flags: list[str]) -> None:
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = option_lines(out, *flags)
    assert len(lines) >= len(flags), out
    assert not any("<bool>" in line for line in lines), "\n".join(lines)
    assert "<int>" in out or argv[0] in ("--help", "validate")  # typed options keep types


def test_a_flag_still_parses_as_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("harness-bt ")


def test_an_error_is_printed_whole_on_one_line(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    missing = "a/rather/long/path/to/a/task/file/that/does/not/exist/anywhere_at_all.yaml"
    assert main(["run", missing]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {missing}: TASK_NOT_FOUND: no task file at {missing!r}; give the "
                   "path of a task file, e.g. trees/pick_cube.yaml"]
