from __future__ import annotations

from harness_bt import __version__
from harness_bt.cli import main


def test_version_prints_and_exits_zero(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"harness-bt {__version__}"


def test_help_lists_the_demo(capsys):
    assert main(["--help"]) == 0
    assert "demo" in capsys.readouterr().out


def test_unknown_subcommand_is_a_usage_error(capsys):
    assert main(["no-such-command"]) == 2
    assert "No such command 'no-such-command'" in capsys.readouterr().err


def test_demo_walks_the_ledger_and_succeeds(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for expected in ("COMMAND_ID_CONFLICT", "STOP_UNCONFIRMED", "RESOURCE_BUSY", "STALE_WORLD",
                     "reopened from the journal", "the base is free again"):
        assert expected in out
