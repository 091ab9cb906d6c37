"""How the command line presents itself: flags shown as flags in ``--help``.

Typer's rich help prints a type beside every option, so a flag that takes no value
(``--json``) shows as ``--json <bool>``, as if it took one. :func:`flags_take_no_value`
gives every flag of a command tree (its ``--help`` too) an empty metavar, which the help
prints as nothing; the parsing is unchanged.
"""

from __future__ import annotations

from typing import Any

import typer

__all__ = ["flags_take_no_value"]


def flags_take_no_value(command: Any) -> Any:
    """Blank the shown type of every flag of ``command`` and its subcommands (the command,
    for chaining)."""
    options = [*command.params]
    helper = command.get_help_option(typer.Context(command))
    if helper is not None:
        options.append(helper)
    for option in options:
        if getattr(option, "is_flag", False) and not getattr(option, "count", False):
            option.metavar = ""
    for sub in (getattr(command, "commands", None) or {}).values():
        flags_take_no_value(sub)
    return command
